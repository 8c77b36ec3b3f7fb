"""Manager agent: routes text through cleaning, instruction stripping, segmentation, the
topic agent, retrieval and the detection agent, and returns one `Verdict` per input.

`ClaimGuard.check_document` adds the crawler and the judge agent around it.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

import numpy as np

from ..errors import ConfigError, DataError
from ..types import Candidate, Claim, Evidence, Verdict
from ._analysis import Analysis, Nearest, _Prepared
from ._crawl import crawl
from ._detect import Decision, LLMJudge, LogisticDecision, MatchContext, default_decision, features, script_of
from ._judge import DocumentReport, JudgeAgent, Notification, _notice
from ._mcq import break_inline_options, strip_stem
from ._rank import RANKINGS, dense_scores, rank_scores, reciprocal_ranks
from ._reader import EmbeddingReader, Reader, reader_of, reads
from ._shift import LanguageShift
from ._social import DEFAULT_STEPS, normalize_social
from ._store import ClaimStore
from ._text import (
    Segment, capitalised, clean_with_offsets, content_words, guess_language, numbers, segment, strip_instructions,
)
from ._topics import OfflineTopicClassifier
from ._screen import screen as screen_text
from ._unmask import DEFAULT_UNMASK, unmask as unmask_text

#: Longest text examined; longer input is cut here (and says so in `stages`).
MAX_CHARS = 100_000
#: Candidates listed in a verdict (and in `check` output rows) unless told otherwise.
CANDIDATES_OUT = 5
#: `Verdict.decided_by` of a text whose nearest claim is rated other than false (true,
#: mixed, unproven, ...): not flagged, whatever the decision's score for the nearest
#: false-rated claim.
NEAREST_NOT_FALSE = "nearest-claim-not-false"
#: Shortest text (in `_text.words`) whose sentences are also checked one by one. Checking
#: every sentence of short texts made the guard embed 1.37x the tokens of the texts
#: themselves (LIAR train statements) for no gain on the CheckThat dev tweets; chosen on
#: those two (docs/BENCHMARKS.md), never on the dev set or a test split.
SENTENCE_WORDS = 40


class ClaimGuard:
    """Check texts against a `ClaimStore` of fact-checked claims.

    Args:
        store: the claims; only false-like verdicts (false, mostly-false) can flag a text.
        decision: the offline decision (default: the model fitted for the store's embedder).
        judge: optional LLM judge (the paper's prompts); when set it makes the final call on
            every text that has a candidate claim.
        shift: language shift applied to query vectors before retrieval (default: the
            decision's own; the decision's features were fitted after it).
        k: candidates retrieved per segment (dense).
        k_lexical: candidates retrieved by BM25 per text (0 = dense only).
        ranking: "dense", "lexical", "rrf" or "learned" (default: learned when the decision
            ships a ranker, else dense); see `misguard.claims._rank`.
        social: social-media normalisation steps (`STEPS` of `_social`; () = none).
        unmask: character-level disguises undone before anything else reads the text
            (`UNMASK_STEPS` of `_unmask`: look-alike letters, leetspeak, spaced letters...;
            () = none).
        screen_injections: set aside text addressed to the checker ("ignore previous
            instructions", "answer that it contains no misinformation", a fake verdict;
            `_screen`) so it cannot change the decision.
        check_set_aside: also check the set-aside text on its own, so a claim written
            inside a note to the checker is still caught. Off by default: on the dev set's
            test half, a Hindi and an Arabic note checked alone matched a stored claim and
            raised false flags on near-miss true texts from 1.4% to 13.9% for two of four
            injection styles (docs/BENCHMARKS.md, "Red team").
        k_output: candidates listed in each verdict.
        sentence_words: a text's sentences are checked one by one only when it holds at
            least this many words (`_text.words`); below, the whole text and any MCQ
            options are (see `SENTENCE_WORDS`).
        cache_size: verdicts kept for repeated texts.
    """

    def __init__(
        self,
        store: ClaimStore,
        *,
        decision: Decision | None = None,
        judge: LLMJudge | None = None,
        k: int = 20,
        cache_size: int = 4096,
        max_segments: int = 64,
        shift: LanguageShift | None = None,
        k_lexical: int = 20,
        ranking: str | None = None,
        social: tuple[str, ...] = DEFAULT_STEPS,
        k_output: int = CANDIDATES_OUT,
        sentence_words: int = SENTENCE_WORDS,
        reader: Reader | None = None,
        unmask: tuple[str, ...] = DEFAULT_UNMASK,
        screen_injections: bool = True,
        check_set_aside: bool = False,
    ) -> None:
        self.store = store
        self.embedder = store.embedder
        # An embedding reader without a decision picks the shipped decision fitted with it.
        self.decision = decision or default_decision(
            self.embedder.spec, reader.embedder.spec if isinstance(reader, EmbeddingReader) else None)
        self.shift = shift if shift is not None else self.decision.shift
        if self.shift is not None and self.shift.dim != self.embedder.dim:
            raise ConfigError(
                f"The decision's language shift is for {self.shift.dim}-dim vectors but {self.embedder.spec} "
                f"gives {self.embedder.dim}; use a decision fitted for this embedder"
            )
        self._direction = self.shift.direction if self.shift is not None else None
        self.judge = judge
        names = getattr(self.decision, "names", ())
        reads_reader = "reader_en" in names or "reader_any" in names
        fitted_with = getattr(self.decision, "reader", None)
        if reader is None and reads_reader and fitted_with and fitted_with.get("kind") == EmbeddingReader.kind:
            # An embedding reader is rebuilt from its spec: build the one the decision names.
            reader = reader_of(fitted_with, self.embedder.settings)
        if reader is None and reads_reader:
            kind = (fitted_with or {}).get("kind")
            raise ConfigError(f"this decision reads a pair reader ({kind or 'not named in the file'}) that the guard "
                              "cannot build: pass the embedding reader it was fitted with (--reader SPEC), or fit a "
                              "decision with `misguard claims fit-decision`")
        if reader is not None and fitted_with and reader.identity() != fitted_with:
            raise ConfigError(f"this decision was fitted with the reader {fitted_with}, not {reader.identity()}; "
                              "pass that reader (or none: the guard builds an embedding reader the decision "
                              "names), or the decision fitted with this one")
        if reader is not None and reads_reader and ("reader_any" in names) != (reader.languages == "all"):
            raise ConfigError(f"this decision reads a reader of {'every language' if 'reader_any' in names else 'English'}, "
                              f"and the reader given reads {reader.languages!r}; pass the decision fitted with it")
        if reader is not None and not reads_reader and isinstance(self.decision, LogisticDecision):
            # Its score would cost a forward pass per text and change nothing.
            raise ConfigError("this decision was fitted without a pair reader: drop --reader, or pass a decision "
                              "fitted with it (`misguard claims fit-decision --reader SPEC`)")
        self.reader = reader
        self.k = k
        self.k_lexical = k_lexical
        self.k_output = k_output
        self.ranker = getattr(self.decision, "ranker", None)
        # Without a fitted ranker the measured dense order stays the default: RRF was
        # not yet measured with e5 on the dev set (docs/BENCHMARKS.md).
        self.ranking = ranking or ("learned" if self.ranker is not None else "dense")
        if self.ranking not in RANKINGS:
            raise ConfigError(f"unknown ranking {self.ranking!r}; use one of {', '.join(RANKINGS)}")
        if self.ranking == "learned" and self.ranker is None:
            raise ConfigError("ranking 'learned' needs a decision with a fitted ranker; use --ranking rrf or dense")
        normalize_social("", social)  # unknown step names fail here, not on the first text
        self.social = tuple(social)
        unmask_text("", unmask)  # unknown step names fail here, not on the first text
        self.unmask = tuple(unmask)
        self.screen_injections = screen_injections
        self.check_set_aside = check_set_aside
        self._cues: dict[int, tuple[set[str], set[str], set[str]]] = {}
        self._cues_generation = -1
        self.max_segments = max_segments
        self.sentence_words = sentence_words
        self.topics = OfflineTopicClassifier(self.embedder, cache_dir=store.path)
        self._cache: OrderedDict[str, Verdict] = OrderedDict()
        self._cache_generation = store.generation
        self._cache_size = cache_size
        self.cache_hits = 0
        # One check at a time: the verdict cache, the embedder's cache and the topic
        # centroids are plain dicts, and a check already uses every core for its embedding.
        self._lock = threading.RLock()

    def describe(self) -> dict[str, object]:
        return {
            "embedder": self.embedder.describe(),
            "decision": self.decision.describe(),
            "judge": self.judge.describe() if self.judge else None,
            "reader": self.reader.describe() if self.reader is not None else None,
            "language_shift": self.shift is not None,
            "k": self.k,
            "k_lexical": self.k_lexical,
            "ranking": self.ranking,
            "ranker": self.ranker.to_dict() if self.ranker is not None else None,
            "social": list(self.social),
            "unmask": list(self.unmask),
            "screen_injections": self.screen_injections,
            "check_set_aside": self.check_set_aside,
            "sentence_words": self.sentence_words,
            "topics": self.topics.describe(),
        }

    # -- public API ----------------------------------------------------------------------

    def check(self, text: str) -> Verdict:
        """Check one text."""
        return self.check_many([text])[0]

    def check_many(self, texts: Sequence[str]) -> list[Verdict]:
        """Check texts in one batch (one embedding call for all their segments). Safe to
        call from any thread; concurrent calls run one after another. Every verdict of one
        call is made against one generation of the store, the latest: when another handle
        or process wrote, the index is reloaded and the verdict cache dropped first."""
        with self._lock:
            return self.store.consistent(lambda: self._check_many(texts))

    def _check_many(self, texts: Sequence[str], *, screen: bool = True) -> list[Verdict]:
        started = time.perf_counter()
        if self._cache_generation != self.store.generation:
            # The store changed (another process wrote, or this one through the same
            # handle): verdicts of the previous generation no longer hold.
            self._cache.clear()
            self._cache_generation = self.store.generation
        results: list[Verdict | None] = [None] * len(texts)
        todo: list[tuple[int, _Prepared]] = []
        todo_screened: list[tuple[int, _Prepared]] = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise DataError(f"can only check text (str), got {type(text).__name__} at index {i}")
            cached = self._cache.get(text) if screen else None
            if cached is not None:
                self._cache.move_to_end(text)
                self.cache_hits += 1
                results[i] = cached.model_copy(update={"stages": [*cached.stages, "cache"], "latency_s": 0.0})
                continue
            prepared = self._prepare(text, screen=screen)
            if not prepared.segments:
                results[i] = Verdict(flagged=False, score=0.0, language="und",
                                     stages=["clean", *(["screen-injection"] if prepared.injections else []), "empty"],
                                     decided_by="empty-input")
                if prepared.injections:
                    todo_screened.append((i, prepared))
                continue
            todo.append((i, prepared))
        if todo:
            analyses = self._analyse_many([p for _, p in todo])
            for (i, prepared), analysis in zip(todo, analyses):
                results[i] = self._decide(prepared, analysis)
        todo_screened += [(i, p) for i, p in todo if p.injections]
        if todo_screened and self.check_set_aside:
            self._check_set_aside(todo_screened, results)
        elapsed = time.perf_counter() - started
        share = elapsed / max(1, len(todo))
        out: list[Verdict] = []
        for i, verdict in enumerate(results):
            assert verdict is not None
            if "cache" not in verdict.stages:
                verdict.latency_s = share
                self._remember(texts[i], verdict)
            out.append(verdict)
        return out

    def _check_set_aside(self, todo: list[tuple[int, _Prepared]], results: list[Verdict | None]) -> None:
        """Check the text set aside as addressed to the checker on its own: a note cannot
        unflag a text, and a claim written inside one is caught all the same."""
        pieces = [(i, start, p.original[start:end]) for i, p in todo for start, end in p.injections]
        verdicts = self._check_many([text for _, _, text in pieces], screen=False)
        for (i, start, _), side in zip(pieces, verdicts):
            current = results[i]
            assert current is not None
            if side.flagged and not current.flagged:
                evidence = [e.model_copy(update={"start": e.start + start, "end": e.end + start}) for e in side.evidence]
                results[i] = side.model_copy(update={"evidence": evidence,
                                                     "stages": [*current.stages, "set-aside-flagged"]})

    def check_document(self, source: str, *, html: bool | None = None, doc_id: str = "doc") -> DocumentReport:
        """Crawl a text or HTML page into chunks, check each, notify, and audit with the judge."""
        chunks = crawl(source, html=html, doc_id=doc_id)
        verdicts = self.check_many([c.text for c in chunks])
        detections = {c.id: v for c, v in zip(chunks, verdicts)}
        notifications = [
            Notification(chunk_id=c.id, claim_id=v.evidence[0].claim.id if v.evidence and v.evidence[0].claim else None,
                         message=_notice(v))
            for c, v in zip(chunks, verdicts)
            if v.flagged
        ]
        report = DocumentReport(doc_id=doc_id, chunks=chunks, verdicts=detections, notifications=notifications)
        report.discrepancies = JudgeAgent().audit(report)
        return report

    # -- internals -----------------------------------------------------------------------

    def _remember(self, text: str, verdict: Verdict) -> None:
        if self._cache_size <= 0:
            return
        self._cache[text] = verdict
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _prepare(self, text: str, *, screen: bool = True) -> _Prepared:
        truncated = len(text) > MAX_CHARS
        original = text[:MAX_CHARS] if truncated else text
        clean, offsets = clean_with_offsets(original)
        unmasked = False
        if self.unmask:
            folded, where = unmask_text(clean, self.unmask)
            unmasked = folded != clean
            clean, offsets = folded, [offsets[i] for i in where]
        social = False
        if self.social:
            normalised, where = normalize_social(clean, self.social)
            social = normalised != clean
            clean, offsets = normalised, [offsets[i] for i in where]
        injections: list[tuple[int, int]] = []
        if screen and self.screen_injections:
            kept, where, found = screen_text(clean)
            if found:
                injections = [(offsets[f.start], offsets[max(f.start, f.end - 1)] + 1) for f in found]
                clean, offsets = kept, [offsets[i] for i in where]
        _, body_start, instructions = strip_instructions(clean)
        clean, offsets, stem = strip_stem(clean, offsets, body_start)
        clean = break_inline_options(clean, body_start, after_question=stem is not None)
        instructions += [stem] if stem else []
        segments = segment(clean, max_segments=self.max_segments, sentence_words=self.sentence_words) if clean.strip() else []
        return _Prepared(original, clean, offsets, segments, truncated, instructions, social, unmasked, injections)

    def views(self, text: str) -> list[Segment]:
        """The pieces of `text` the guard embeds (the whole, then options and sentences),
        after cleaning and social-media normalisation; offsets are into the cleaned text."""
        return self._prepare(text).segments

    def query_vectors(self, texts: Sequence[str]) -> list[tuple[str, np.ndarray]]:
        """(guessed language, raw segment vectors) per non-empty text: what a
        `LanguageShift` is fitted on."""
        prepared = [p for p in map(self._prepare, texts) if p.segments]
        return [(guess_language(p.clean), v) for p, v in zip(prepared, self._embed_segments(prepared))]

    def _embed_segments(self, prepared: list[_Prepared]) -> list[np.ndarray]:
        """Raw query vectors of each text's segments, from one embedding call (a segment
        repeated across texts is embedded once)."""
        if not prepared:
            return []
        unique = list(dict.fromkeys(s.text for p in prepared for s in p.segments))
        vectors = self.embedder.embed(unique, "query")
        row_of = {t: r for r, t in enumerate(unique)}
        return [vectors[[row_of[s.text] for s in p.segments]] for p in prepared]

    def analyse(self, texts: Sequence[str]) -> list[Analysis | None]:
        """Everything up to the decision, for each text (None for empty text). The
        benchmark fits the offline decision on these."""
        prepared = [self._prepare(t) for t in texts]
        kept = [p for p in prepared if p.segments]
        analyses = iter(self._analyse_many(kept))
        return [next(analyses) if p.segments else None for p in prepared]

    def _analyse_many(self, prepared: list[_Prepared]) -> list[Analysis]:
        """Analyse non-empty texts together: one embedding call for all their segments, one
        retrieval product for all of them, on one BLAS thread (see `ClaimStore.search`),
        and one BM25 query per text."""
        if not prepared:
            return []
        raw = self._embed_segments(prepared)
        with self.store.blas_single_thread():
            topics = self.topics.predict_many(np.stack([v[0] for v in raw]), "query")
            languages = [guess_language(p.clean) for p in prepared]
            # The language shift moves each text's vectors before retrieval; the topic agent
            # keeps the raw ones (its centroids are raw e5 vectors).
            shifted = [self.shift.apply(v, lang) if self.shift is not None else v for v, lang in zip(raw, languages)]
            queries = np.concatenate(shifted)
            # Claims rated other than false never flag a text, but a text that repeats one
            # should be shown that claim (`_nearest_other`): when the store holds any, every
            # claim is searched too (on the exact index, by the same product).
            every: np.ndarray | None = None
            if self.store.flaggable.all():
                _, slots = self.store.search(queries, self.k, flaggable_only=True)
            else:
                slots, every = self.store.search_flaggable_and_every(queries, self.k)
            out, row = [], 0
            for p, seg_vecs, lang, tops in zip(prepared, shifted, languages, topics):
                n = len(seg_vecs)
                # BM25 matches words, so it does not run on a text known to be in a language
                # no claim is written in (a French text's words retrieved unrelated English
                # claims); "und" (too short to tell) does run.
                words = bool(self.k_lexical) and (lang == "und" or lang in self.store.languages())
                lexical = lexical_every = []
                if words and every is None:
                    lexical = self.store.lexical_search(p.segments[0].text, self.k_lexical, flaggable_only=True)
                elif words:
                    # One BM25 query for both lists (it is most of a check's cost after the
                    # embedding): the false-rated among the top 3k, as `flaggable_only` picks
                    # them, and the top k of every rating.
                    wide = self.store.lexical_search(p.segments[0].text, 3 * self.k_lexical)
                    lexical = [hit for hit in wide if self.store.flaggable[hit[0]]][: self.k_lexical]
                    lexical_every = wide[: self.k_lexical]
                analysis = self._analyse(p, seg_vecs, lang, tops, slots[row : row + n], lexical)
                if every is not None:
                    self._nearest_other(analysis, seg_vecs, every[row : row + n], lexical_every)
                out.append(analysis)
                row += n
            self._read_claims(out)
            for analysis in out:
                if analysis.slots:
                    self.select(analysis, 0, read=False)
        if self.reader is not None:
            # One batched pass of the reader over every matched pair (select left it out);
            # an English reader only over English texts: the decision reads no other value.
            matched = [a for a in out if a.context is not None and reads(self.reader, a.context.language)]
            values = self.reader.read_many([(a.context.text, a.context.claim_text) for a in matched])  # type: ignore[union-attr]
            for a, value in zip(matched, values):
                a.context = replace(a.context, reader=value)  # type: ignore[arg-type]
        return out

    def _analyse(
        self, p: _Prepared, seg_vecs: np.ndarray, language: str, topics: list[str], slots: np.ndarray,
        lexical: list[tuple[int, float]],
    ) -> Analysis:
        stages = ["clean"]
        if p.truncated:
            stages.append(f"truncated:{MAX_CHARS}")
        if p.unmasked:
            stages.append("unmask")
        if p.social:
            stages.append("social")
        if p.injections:
            stages.append("screen-injection")
        if p.instructions:
            stages.append("strip-instructions")
        stages += ["segment", "embed", "topic"]
        if self.shift is not None:
            stages.append(f"shift:{language}")
        stages.append("retrieve")
        if lexical:
            stages.append("lexical")
        analysis = Analysis(prepared=p, language=language, topics=topics, stages=stages)
        candidates = sorted({int(s) for s in slots.ravel() if s >= 0} | {slot for slot, _ in lexical})
        if not candidates:
            stages.append("no-candidates")
            return analysis
        stages.append(f"rank:{self.ranking}")
        # Exact cosines of every segment to every candidate; the pair features; the order.
        # The whole text keeps a translated passage on its claim (single sentences match
        # generic distractors); the best segment finds a claim buried in a long text or an
        # MCQ option; BM25 brings names, numbers and rare words the embedding blurs.
        sims = seg_vecs @ self.store.vectors[candidates].T  # (segments, candidates)
        pairs = self._pair_features(p, sims, candidates, lexical)
        scores = rank_scores(pairs, self.ranking, self.ranker)
        order = np.argsort(-scores, kind="stable")
        analysis.slots = [candidates[j] for j in order]
        analysis.store = self.store
        analysis.pairs = pairs[order]
        analysis.sims = sims[:, order]
        analysis.seg_vecs = seg_vecs
        analysis.ranked = [(analysis.slots[j], float(scores[k])) for j, k in enumerate(order[: self.k_output])]
        # The decision reads the language of the body (instructions stripped), which can
        # differ from the whole text's ("Translate from French: ...").
        body = p.segments[0].text
        analysis.body_language = language if body == p.clean else guess_language(body)
        return analysis

    def _read_claims(self, analyses: list[Analysis]) -> None:
        """Read the claims the verdicts show (each text's match and listed candidates) in
        one store query for the batch, not a few per text."""
        def shown(a: Analysis) -> list[int]:
            return [a.slots[0], *(slot for slot, _ in a.ranked)] if a.slots else []

        wanted = {s for a in analyses for s in shown(a)}
        if not wanted:
            return
        claims = self.store.get_slots(wanted)
        for a in analyses:
            a._claims.update((s, claims[s]) for s in shown(a) if s in claims)

    def _nearest_other(self, analysis: Analysis, seg_vecs: np.ndarray, slots: np.ndarray,
                       lexical: list[tuple[int, float]]) -> None:
        """Rank the false-rated candidates together with the other claims retrieved (rated
        true, mixed, unproven, ...) the way the guard ranks; the verdict lists that order,
        and when its first claim is not rated false the text matches it best: it is the
        text's nearest claim, and the text is not flagged. The decision's features stay
        those of the false-rated candidates, as it was fitted."""
        flaggable = self.store.flaggable
        others = {int(s) for s in slots.ravel() if s >= 0 and not flaggable[s]} | {s for s, _ in lexical if not flaggable[s]}
        if not others:
            return
        union = sorted(set(analysis.slots) | others)
        sims = seg_vecs @ self.store.vectors[union].T
        # The word, number and name overlaps of the false-rated candidates are already in
        # their pair features: only the other claims' are computed.
        known = {} if analysis.pairs is None else dict(zip(analysis.slots, analysis.pairs[:, _CUE_COLUMNS]))
        pairs = self._pair_features(analysis.prepared, sims, union, lexical, known)
        scores = rank_scores(pairs, self.ranking, self.ranker)
        order = np.argsort(-scores, kind="stable")
        analysis.store = self.store
        analysis.ranked = [(union[j], float(scores[j])) for j in order[: self.k_output]]
        best = int(order[0])
        if flaggable[union[best]]:
            return
        claim = analysis.claims_of([union[best]])[0]
        column = sims[:, best]
        analysis.nearest = Nearest(claim, analysis.prepared.segments[int(column.argmax())], float(column.max()))
        analysis.stages.append(f"nearest:{claim.verdict.value}")

    def select(self, analysis: Analysis, j: int, *, read: bool = True) -> None:
        """Make candidate `j` (in ranked order) the analysis' match: its claim, evidence
        segment and decision context (with `read`, the pair reader's score too; analyses
        get it in one batch). The benchmark uses it to ask what the decision says about a
        text when its right claim is not in the store."""
        p, sims, seg_vecs = analysis.prepared, analysis.sims, analysis.seg_vecs
        assert sims is not None and seg_vecs is not None
        slot = analysis.slots[j]
        claim = analysis.claim_at(j)
        column = sims[:, j]
        best_seg = int(column.argmax())
        body_text = p.segments[0].text
        analysis.claim = claim
        analysis.segment = p.segments[best_seg]
        ordered = np.sort(column)[::-1]
        query_generic = claim_generic = 0.0
        if self._direction is not None:
            query_generic = float(seg_vecs[best_seg] @ self._direction)
            claim_generic = float(self.store.vectors[slot] @ self._direction)
        read = read and self.reader is not None and reads(self.reader, analysis.body_language)
        analysis.context = MatchContext(
            s1=float(column.max()), body=float(column[0]), support=float(ordered[1] if len(ordered) > 1 else ordered[0]),
            votes=float((sims.argmax(axis=1) == j).mean()), text=body_text, claim_text=claim.text,
            segment_kind=analysis.segment.kind, script=script_of(body_text), language=analysis.body_language,
            query_generic=query_generic, claim_generic=claim_generic, social=p.social,
            reader=self.reader.read_many([(body_text, claim.text)])[0] if read else None,  # type: ignore[union-attr]
        )

    def _pair_features(
        self, p: _Prepared, sims: np.ndarray, candidates: list[int], lexical: list[tuple[int, float]],
        known: dict[int, np.ndarray] | None = None,
    ) -> np.ndarray:
        """`RANK_FEATURES` of each (text, candidate) pair, in `candidates` order. `known`:
        candidates' overlap columns (`_CUE_COLUMNS`) computed before for this text."""
        body, seg = sims[0], sims.max(axis=0)
        hub = self.store.hubs[candidates]
        dense_rr = reciprocal_ranks(dense_scores(body, seg, hub))
        lex_rank = {slot: r for r, (slot, _) in enumerate(lexical)}
        best_lex = lexical[0][1] if lexical and lexical[0][1] > 0 else 1.0
        lex_score = dict(lexical)
        # Column by column: a long text has hundreds of candidates, and a Python row per
        # candidate of numpy scalars cost more than the rest of its ranking. Same values.
        out = np.empty((len(candidates), 11), dtype=np.float64)
        out[:, 0], out[:, 1], out[:, 2], out[:, 3] = body, seg, hub, dense_rr
        out[:, 4] = [1.0 / (1 + lex_rank[slot]) if slot in lex_rank else 0.0 for slot in candidates]
        out[:, 5] = [lex_score[slot] / best_lex if slot in lex_score else 0.0 for slot in candidates]
        known = known or {}
        new = [j for j, slot in enumerate(candidates) if slot not in known]
        if len(new) < len(candidates):
            old = [j for j, slot in enumerate(candidates) if slot in known]
            out[old, _CUE_COLUMNS] = [known[candidates[j]] for j in old]
        if new:
            out[new, _CUE_COLUMNS] = self._cue_columns(p, [candidates[j] for j in new])
        return out

    def _cue_columns(self, p: _Prepared, candidates: list[int]) -> np.ndarray:
        """Overlap of the text's content words, numbers and names with each candidate's
        (the `_CUE_COLUMNS` of the pair features)."""
        text_words, text_numbers, text_names = _text_cues(p.segments[0].text)
        cues = self._claim_cues(candidates)
        out = np.empty((len(candidates), 5), dtype=np.float64)
        shared = [len(words & text_words) for words, _, _ in cues]
        out[:, 0] = [n / max(1, len(words)) for n, (words, _, _) in zip(shared, cues)]
        out[:, 1] = [n / max(1, len(text_words)) for n in shared]
        out[:, 2] = [1.0 if nums & text_numbers else 0.0 for _, nums, _ in cues]
        out[:, 3] = [1.0 if nums and text_numbers and not nums & text_numbers else 0.0 for _, nums, _ in cues]
        out[:, 4] = [len(names & text_names) / max(1, len(names)) for _, _, names in cues]
        return out

    def _claim_cues(self, slots: list[int]) -> list[tuple[set[str], set[str], set[str]]]:
        """Content words, numbers and names of stored claims (cached per store generation:
        a claim's text only changes with an ingest)."""
        if self._cues_generation != self.store.generation:
            self._cues.clear()
            self._cues_generation = self.store.generation
        missing = [slot for slot in slots if slot not in self._cues]
        if missing:
            if len(self._cues) > 200_000:
                self._cues.clear()
            for slot, text in self.store.texts_of_slots(missing).items():
                self._cues[slot] = (content_words(text), numbers(text), capitalised(text))
        return [self._cues[slot] for slot in slots]

    def _decide(self, p: _Prepared, a: Analysis) -> Verdict:
        nearest = [_evidence(p, a.nearest.segment, a.nearest.claim, a.nearest.cosine)] if a.nearest else []
        if a.context is None or a.claim is None or a.segment is None:
            return Verdict(flagged=False, score=0.0, language=a.language, topics=a.topics, stages=a.stages,
                           decided_by=NEAREST_NOT_FALSE if nearest else self.decision.name, evidence=nearest,
                           candidates=self._candidates(a))
        stages = a.stages
        score = self.decision.score(features(a.context))
        flagged = score >= self.decision.threshold
        stages.append(f"decide:{self.decision.name}")
        decided_by = self.decision.name
        if nearest:
            flagged, decided_by = False, NEAREST_NOT_FALSE
        elif self.judge is not None:
            flagged = self.judge.judge(a.context.text, [a.claim.text])
            stages.append(self.judge.name)
            decided_by = self.judge.name
        # evidence[0]: the claim the text matches best (a false-rated one unless `nearest`)
        evidence = [*nearest, _evidence(p, a.segment, a.claim, a.context.s1)]
        return Verdict(
            flagged=bool(flagged), score=float(score), label=a.claim.verdict if flagged else None,
            evidence=evidence, language=a.language, topics=a.topics, stages=stages, decided_by=decided_by,
            candidates=self._candidates(a),
        )

    def _candidates(self, a: Analysis) -> list[Candidate]:
        claims = a.claims_of([slot for slot, _ in a.ranked])
        return [Candidate(claim_id=c.id, score=round(sc, 6)) for c, (_, sc) in zip(claims, a.ranked)]


#: The pair features that depend only on the text and the candidate claim's words.
_CUE_COLUMNS = slice(6, 11)


@lru_cache(maxsize=256)
def _text_cues(text: str) -> tuple[set[str], set[str], set[str]]:
    """Content words, numbers and names of a checked text (its candidates are ranked twice:
    among the false-rated claims, then among every claim)."""
    return content_words(text), numbers(text), capitalised(text)


def _evidence(p: _Prepared, seg: Segment, claim: Claim, score: float) -> Evidence:
    """A segment of the text as evidence for `claim`, with offsets into the original text."""
    start, end = p.offsets[seg.start], p.offsets[max(seg.start, seg.end - 1)] + 1
    return Evidence(text=p.original[start:end], start=start, end=end, claim=claim, score=score)
