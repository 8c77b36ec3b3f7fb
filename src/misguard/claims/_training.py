"""Training rows for the flag decision: one row per text, the `FEATURES` of the candidate
the guard ranks first for it, and whether the text repeats a stored false claim.

Rows come from the sources of `_sources`, analysed by the guard itself (`ClaimGuard.analyse`):
- "devset": each dev query; its features under the language shift fitted without its fold
  (`dev_rows`), so a query never shapes the shift it is read under;
- "paper": the paper-style LIAR/Snopes attacks (`paper_rows`);
- "checkthat": each CheckThat-2020 train tweet twice, as it is and with its right claims
  (and their copies) taken out of the candidates (`tweet_rows`);
- the dev and paper queries again with a tweet's trappings (`tweet_form_rows`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ._analysis import Analysis
from ._detect import FEATURES, ThresholdDecision, features
from ._guard import ClaimGuard
from ._rank import RANK_FEATURES, LinearRanker, pairs_without, rank_scores
from ._reader import Reader
from ._shift import LanguageShift
from ._sources import DevSet, PaperQuery, TweetQuery, claim_key
from ._store import ClaimStore

#: Outer folds of the dev set (grouped by claim); each has its own language shift.
DEV_FOLDS = 10
#: Tweet trappings added to every dev and paper query, both classes (a second row each, key
#: + TWEET_FORM): without them every social-media text the decision was fitted on was a
#: CheckThat tweet, and "social" came to mean "repeats a claim": the decision fitted that
#: way flagged 86% of the dev set's near-miss true facts once they looked like tweets
#: (docs/BENCHMARKS.md). The normalisation turns each into a name at the end.
TWEET_TAILS = (" pic.twitter.com/Xq3vB7kLpz \u2014 Jane Doe (@janedoe_news) January 6, 2020",
               " https://t.co/9fKq2LmZ #FactCheck \u2014 Sam Lee (@samlee) March 2, 2020")
TWEET_FORM = "#tweet"


@dataclass
class Row:
    source: str
    key: str
    group: str
    label: bool  # True: repeats a stored false claim (should be flagged)
    attack: str
    lang: str
    x: np.ndarray  # FEATURES of the chosen candidate (for dev rows: under the fold's shift)
    matched: str | None = None
    right: bool | None = None  # the chosen candidate is a right claim (positives only)
    meta: dict = field(default_factory=dict)
    fold: int = -1
    #: per-fold features (dev rows: each fold has its own language shift); else `x`
    x_by_fold: dict[int, np.ndarray] = field(default_factory=dict)
    #: dev rows: the top candidates' ids and what the analysis saw (language, topics,
    #: segments), under the shift of the fold that holds the row out
    ranked: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)

    def features(self, fold: int) -> np.ndarray:
        return self.x_by_fold.get(fold, self.x)


@dataclass
class AnalysedQuery:
    """One query's analysis under one language shift (or none)."""

    features: np.ndarray
    matched: str
    ranked: list[str]
    evidence: dict
    extra: dict


def analyse_devset(guard: ClaimGuard, dev: DevSet) -> list[AnalysedQuery]:
    out: list[AnalysedQuery] = []
    for i in range(0, len(dev.queries), 64):
        batch = dev.queries[i : i + 64]
        for q, a in zip(batch, guard.analyse([q.text for q in batch])):
            assert a is not None and a.context is not None and a.claim is not None
            out.append(AnalysedQuery(
                features=features(a.context), matched=a.claim.id, ranked=a.candidate_ids(5), evidence=evidence(guard, a, 0),
                extra={"topics": a.topics, "language": a.language, "segment_kind": a.segment.kind if a.segment else None,
                       "n_segments": len(a.prepared.segments)},
            ))
    return out


def shift_fitter(guard: ClaimGuard, dev: DevSet) -> Callable[[np.ndarray], LanguageShift]:
    """A function from a query selection to a `LanguageShift`: language centroids from the
    raw segment vectors of the selected queries (embedded once here, reused by every fold),
    the target from the distractors only (so a test claim never shapes it)."""
    samples = guard.query_vectors([q.text for q in dev.queries])
    assert len(samples) == len(dev.queries), "a dev query cleaned to nothing"
    dev_slots = {guard.store.slot_of(c.id) for c in dev.claims}
    claim_vectors = guard.store.vectors[[slot for slot in range(len(guard.store)) if slot not in dev_slots]]

    def fit(which: np.ndarray) -> LanguageShift:
        return LanguageShift.fit([sample for sample, keep in zip(samples, which) if keep], claim_vectors)

    return fit


def dev_folds(dev: DevSet) -> np.ndarray:
    """Deterministic group folds: sorted groups dealt round-robin into DEV_FOLDS folds."""
    groups = [q.group for q in dev.queries]
    order = {g: i % DEV_FOLDS for i, g in enumerate(sorted(set(groups)))}
    return np.array([order[g] for g in groups])


def dev_rows(store: ClaimStore, dev: DevSet, fit_shift: Callable[[np.ndarray], LanguageShift],
             ranker: LinearRanker | None, folds: np.ndarray, reader: Reader | None = None,
             progress: Callable[[str], None] = lambda _: None) -> list[Row]:
    """Dev-set rows: per outer fold the language shift is fitted on that fold's training
    queries and every query is analysed under it (the fold's held-out queries are read
    only there); `x` is the analysis under the shift fitted on all dev queries."""
    rows = [Row(source="devset", key=q.qid, group=q.group, label=q.label == "false", attack=q.attack, lang=q.lang,
                x=np.zeros(len(FEATURES)), fold=int(folds[i])) for i, q in enumerate(dev.queries)]
    for f in [*range(DEV_FOLDS), -1]:
        shift = fit_shift(folds != f)
        guard = ClaimGuard(store, decision=ThresholdDecision(1.0, ranker=ranker), shift=shift, reader=reader)
        for i, a in enumerate(analyse_devset(guard, dev)):
            if f == -1:
                rows[i].x, rows[i].meta = a.features, a.evidence
                continue
            rows[i].x_by_fold[f] = a.features
            if folds[i] == f:
                q = dev.queries[i]
                rows[i].matched, rows[i].right = a.matched, a.matched == q.claim_id
                rows[i].ranked, rows[i].info = a.ranked, a.extra
        progress(f"dev set analysed under fold {f}'s language shift" if f >= 0 else "dev set analysed (all-query shift)")
    return rows


def paper_rows(guard: ClaimGuard, queries: list[PaperQuery]) -> list[Row]:
    rows = []
    for start in range(0, len(queries), 32):
        batch = queries[start : start + 32]
        for q, a in zip(batch, guard.analyse([q.text for q in batch])):
            assert a is not None and a.claim is not None and a.context is not None
            rows.append(Row(source="paper", key=q.key, group=q.claim_id, label=q.label == "false", attack=q.attack,
                            lang=q.lang, x=features(a.context), matched=a.claim.id, right=a.claim.id == q.claim_id,
                            meta=evidence(guard, a, 0)))
    return rows


@dataclass
class TweetAnalysis:
    query: TweetQuery
    analysis: Analysis


def analyse_tweets(guard: ClaimGuard, queries: list[TweetQuery]) -> list[TweetAnalysis]:
    out = []
    for i in range(0, len(queries), 64):
        batch = queries[i : i + 64]
        for q, a in zip(batch, guard.analyse([q.text for q in batch])):
            assert a is not None, f"tweet {q.qid} cleaned to nothing"
            out.append(TweetAnalysis(q, a))
    return out


def tweet_rows(guard: ClaimGuard, tweets: list[TweetQuery]) -> list[Row]:
    """Two rows per tweet: as it is (repeats a stored claim) and with its right claims
    taken out of the candidates (the store does not hold its claim): the others are
    re-ranked as if the right ones had never been retrieved. A copy of a right claim (same
    `claim_key`) goes out with it: left in, it made a fifth of these rows "negatives" that
    match the tweet's claim word for word (docs/BENCHMARKS.md)."""
    store = guard.store
    copies: dict[str, set[int]] = {}
    for slot, text in store.texts_of_slots(list(range(len(store)))).items():
        copies.setdefault(claim_key(text), set()).add(slot)
    rows = []
    for t in analyse_tweets(guard, tweets):
        a, q = t.analysis, t.query
        if a.context is None or a.pairs is None:
            continue
        gold_keys = sorted(claim_key(c.text) for c in map(store.get, sorted(q.gold)) if c is not None)
        group = gold_keys[0] if gold_keys else sorted(q.gold)[0]
        top = a.claim_at(0).id
        rows.append(Row(source="checkthat", key=q.qid, group=group, label=True, attack="tweet", lang="en",
                        x=features(a.context), matched=top, right=top in q.gold, meta=evidence(guard, a, 0)))
        gold_slots = {store.slot_of(g) for g in q.gold} | {slot for k in gold_keys for slot in copies.get(k, ())}
        keep = np.array([slot not in gold_slots for slot in a.slots])
        if keep.any():
            kept = np.flatnonzero(keep)
            sub = pairs_without(a.pairs, keep)
            other = int(kept[int(np.argmax(rank_scores(sub, guard.ranking, guard.ranker)))])
            guard.select(a, other)
            rows.append(Row(source="checkthat", key=f"{q.qid}-without-gold", group=group, label=False,
                            attack="tweet, right claim removed", lang="en", x=features(a.context),
                            matched=a.claim_at(other).id, meta=evidence(guard, a, other, keep)))
    return rows


def tweet_form_rows(store: ClaimStore, dev: DevSet | None, fit_shift: Callable[[np.ndarray], LanguageShift] | None,
                    ranker: LinearRanker | None, folds: np.ndarray, guard: ClaimGuard, paper: list[PaperQuery]) -> list[Row]:
    """Dev and paper rows again with a tweet's trappings (`TWEET_TAILS`), in the folds of
    their originals; dev rows under each fold's language shift, as `dev_rows`."""
    rows: list[Row] = []
    if dev is not None and fit_shift is not None:
        texts = [q.text + TWEET_TAILS[i % 2] for i, q in enumerate(dev.queries)]
        rows = [Row(source="devset", key=q.qid + TWEET_FORM, group=q.group, label=q.label == "false",
                    attack=f"{q.attack} as tweet", lang=q.lang, x=np.zeros(len(FEATURES)), fold=int(folds[i]))
                for i, q in enumerate(dev.queries)]
        for f in [*range(DEV_FOLDS), -1]:
            fold_guard = ClaimGuard(store, decision=ThresholdDecision(1.0, ranker=ranker), shift=fit_shift(folds != f),
                                    reader=guard.reader)
            analysed = [a for i in range(0, len(texts), 64) for a in fold_guard.analyse(texts[i : i + 64])]
            for row, q, a in zip(rows, dev.queries, analysed):
                assert a is not None and a.context is not None and a.claim is not None
                if f == -1:
                    row.x, row.matched, row.right = features(a.context), a.claim.id, a.claim.id == q.claim_id
                else:
                    row.x_by_fold[f] = features(a.context)
    as_tweets = [dataclasses.replace(q, key=q.key + TWEET_FORM, attack=f"{q.attack} as tweet", text=q.text + TWEET_TAILS[i % 2])
                 for i, q in enumerate(paper)]
    return rows + paper_rows(guard, as_tweets)


def evidence(guard: ClaimGuard, a: Analysis, j: int, keep: np.ndarray | None = None) -> dict[str, float]:
    """Retrieval evidence about candidate `j` beyond the decision's features (kept with the
    row for analysis): word overlaps, BM25 rank and relative score, the ranker's score and
    its margin to the next candidate; with `keep`, over the kept candidates only."""
    keep = np.ones(len(a.slots), dtype=bool) if keep is None else keep
    sub = pairs_without(a.pairs, keep)
    at = int(np.flatnonzero(keep).tolist().index(j))
    scores = rank_scores(sub, guard.ranking, guard.ranker)
    rest = np.delete(scores, at)
    col = {name: i for i, name in enumerate(RANK_FEATURES)}
    return {**{name: float(sub[at, col[name]]) for name in ("coverage", "precision", "names", "lex_rr", "lex_rel", "dense_rr")},
            "rank_score": float(scores[at]), "margin": float(scores[at] - rest.max()) if len(rest) else 0.0}
