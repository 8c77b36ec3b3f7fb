"""`misguard bench claims`: the claim guard on the multilingual dev set.

Steps (each logged to the run log before any table is drawn):
1. build (or reuse) a store: the 40 dev-set false claims + LIAR/Snopes false claims as
   distractors;
1b. the CheckThat-2020 verified claims in a store of their own;
2. CheckThat: social-media normalisation step by step (train + dev tweets), the re-ranker
   (fitted on train, C chosen on dev), dense / RRF / learned rankings on every split;
3. one decision across sources (`_pooled`): dev queries (per fold, the language shift
   fitted on that fold's training queries), paper-style LIAR/Snopes attacks (`--paper N`)
   and CheckThat train tweets (with and without their right claim and its copies in the
   store), the dev and paper queries also in tweet form (`TWEET_TAILS`); outer
   10-fold CV grouped by claim with C chosen by an inner grouped CV, leave-one-source-out,
   and the final fit; the naive top-1 cosine threshold (no shift, dense only) is chosen
   on the dev training folds; then the final guard checks the CheckThat dev and test
   tweets (test: reporting only);
4b. with `--paper-translate`, the paper's LLM translation attacks on the final guard;
5. optionally the paper's LLM judge (prompts 1 and 2) on the configured --llm;
6. speed on this machine: raw embedding rate vs batch checks in the same run, single-check
   latency, cache, ingest rate, memory and search time at 100k claims, and a profile.
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import random
import resource
import statistics
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.console import Console

from ...claims import (
    FEATURES,
    RANK_FEATURES,
    ClaimGuard,
    ClaimStore,
    LanguageShift,
    LLMJudge,
    LogisticDecision,
    OfflineTopicClassifier,
    ThresholdDecision,
    features,
)
from ...claims._rank import pairs_without, rank_scores
from ...claims._reader import Reader, load_reader
from ...config import Settings
from ...embed import get_embedder
from ...errors import LLMError
from ...llm import get_llm
from ...runlog import RunHeader, RunLog, public_settings
from ...types import Claim
from ._checkthat import (
    analyse_tweets, build_checkthat_store, check_tweets, choose_ranker, social_ablation, views_sweep,
)
from ._data import (
    CHECKTHAT, CheckThat, DevSet, TweetQuery, claim_key, load_checkthat, load_devset, load_distractors, resolve_data_dir,
)
from ._paper import PaperQuery, load_true_claims, paper_queries, run_paper
from ._pooled import DECISION_FIT, PLAIN_FIT, SOURCES, Row, assign_folds, cross_validate, fit_final, leave_one_source_out, reader_fit
from ._report import render_tables

FOLDS = 10


def run_claims_bench(
    settings: Settings,
    output: Path,
    *,
    data_dir: Path | None,
    distractors: int,
    store_dir: Path | None,
    judge: bool,
    judge_limit: int,
    speed: bool,
    save_model: Path | None,
    resume: bool,
    console: Console,
    paper: int = 0,
    paper_translate: bool = False,
    checkthat_limit: int = 0,
    checkthat_train: int = 0,
    checkthat_only: bool = False,
    only: str | None = None,
    reader: str | None = None,
    reader_languages: str = "en",
) -> dict:
    data = resolve_data_dir(settings, data_dir)
    dev = load_devset(data)
    extra = load_distractors(data, distractors)
    embedder = get_embedder(None, settings.embed)
    output.mkdir(parents=True, exist_ok=True)
    header = RunHeader(
        kind="bench.claims",
        settings=public_settings(settings),
        components={"embedder": embedder.describe()},
        seeds={"seed": settings.seed, "llm": settings.llm.seed},
        params={"data_dir": str(data), "distractors": len(extra), "folds": FOLDS, "judge": judge,
                "judge_limit": judge_limit, "features": list(FEATURES), "paper": paper,
                "paper_translate": paper_translate, "checkthat_limit": checkthat_limit, "checkthat_train": checkthat_train, "checkthat_only": checkthat_only,
                "only": only, "reader": reader,
                "reader_languages": reader_languages},
    )
    log = RunLog.open(output / "runlog.jsonl", header, resume=resume)
    try:
        store = _build_store(store_dir or output / "store", embedder, dev, extra, log, console)
        ct = load_checkthat(data, checkthat_limit) if (data / CHECKTHAT).is_dir() else None
        if ct is not None and checkthat_train > 0:
            ct.queries["train"] = ct.queries["train"][:checkthat_train]
        ct_store = None
        if ct is None:
            console.print(f"[yellow]no {data / CHECKTHAT}: CheckThat-2020 parts skipped[/]")
        else:
            ct_store = build_checkthat_store(output / "store-checkthat", embedder, ct, log, console)
        if only == "speed":
            _speed_parts(settings, ct_store or store, _SpeedTexts(data, settings.seed), log, console)
        if only == "speed":
            log.close()
            return render_tables(output / "runlog.jsonl", output, console)
        model, reader = _fit_decision(store, ct_store, ct, dev, extra, load_true_claims(data), paper, settings, log,
                                      embedder.spec, console, checkthat_only=checkthat_only and ct is not None,
                                      reader_spec=reader, reader_languages=reader_languages)
        guard = ClaimGuard(store, decision=model, reader=reader)
        if save_model is not None and not isinstance(model, LogisticDecision):
            console.print(f"[yellow]no fitted decision to save for {embedder.spec} (--checkthat-only without a shipped one)[/]")
        elif save_model is not None:
            save_model.write_text(model.to_json(), encoding="utf-8")
            console.print(f"decision fitted across sources written to {save_model}")
        if ct is not None and ct_store is not None:
            final = ClaimGuard(ct_store, decision=model, k_output=20, reader=reader)
            for split in ("dev", "test"):
                check_tweets(final, ct.queries[split], split, log, console)
        if only == "decision":  # the decision and the tweets through it; nothing measured before
            log.close()
            return render_tables(output / "runlog.jsonl", output, console)
        if ct is not None and ct_store is not None:
            # On the dev tweets only: every variant re-embeds most tweets (e5 is the bottleneck).
            social_ablation(ct_store, ThresholdDecision(1.0, shift=model.shift), ct.queries["dev"], log, console)
            views_sweep(ct_store, ThresholdDecision(1.0, shift=model.shift, ranker=model.ranker), ct.queries["dev"],
                        _SpeedTexts(data, settings.seed).texts[-3000:], log, console)
        if paper_translate:
            run_paper(settings, guard, extra, load_true_claims(data), paper, paper_translate, log, console)
        if judge:
            _judge(settings, dev, log, judge_limit, console)
        if speed:
            _speed_parts(settings, ct_store or store, _SpeedTexts(data, settings.seed), log, console)
    finally:
        log.close()
    summary = render_tables(output / "runlog.jsonl", output, console)
    return summary


# -- 1. store -----------------------------------------------------------------------------


def _build_store(path: Path, embedder, dev: DevSet, extra: list[Claim], log: RunLog, console: Console) -> ClaimStore:
    store = ClaimStore.open(path, embedder, create=True)
    topics = OfflineTopicClassifier(embedder)

    def assign(vectors: np.ndarray) -> list[str]:
        return topics.predict_one(vectors, "passage")

    started = time.perf_counter()
    report_dev = store.add(dev.claims, source="devset")
    reports = [report_dev]
    for i in range(0, len(extra), 2000):
        reports.append(store.add(extra[i : i + 2000], source="distractors", assign_topics=assign))
        console.print(f"store: {len(store)} claims ({time.perf_counter() - started:.0f} s)")
    log.write(
        "store", key=f"store-{len(store)}", claims=len(store), dev_claims=len(dev.claims),
        distractors=len(extra), embedded=sum(r.embedded for r in reports),
        unchanged=sum(r.unchanged for r in reports), seconds=time.perf_counter() - started,
    )
    return store


# -- 2 and 3. analysis and decisions, cross-validated by claim ----------------------------


@dataclass
class _Analysed:
    """One query's analysis under one language shift (or none)."""

    features: np.ndarray
    matched: str
    ranked: list[str]
    evidence: dict
    extra: dict


def _analyse_all(guard: ClaimGuard, dev: DevSet) -> list[_Analysed]:
    out: list[_Analysed] = []
    for i in range(0, len(dev.queries), 64):
        batch = dev.queries[i : i + 64]
        for q, a in zip(batch, guard.analyse([q.text for q in batch])):
            assert a is not None and a.context is not None and a.claim is not None
            out.append(_Analysed(
                features=features(a.context), matched=a.claim.id, ranked=a.candidate_ids(5), evidence=_evidence(guard, a, 0),
                extra={"topics": a.topics, "language": a.language, "segment_kind": a.segment.kind if a.segment else None,
                       "n_segments": len(a.prepared.segments)},
            ))
    return out


def _shift_fitter(guard: ClaimGuard, dev: DevSet):
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


def _folds(groups: list[str]) -> list[int]:
    """Deterministic group folds: sorted groups dealt round-robin into FOLDS folds."""
    order = {g: i % FOLDS for i, g in enumerate(sorted(set(groups)))}
    return [order[g] for g in groups]


def _dev_rows(store: ClaimStore, dev: DevSet, fit_shift, ranker, log: RunLog, console: Console,
              naive: list[_Analysed], folds: np.ndarray, reader: Reader | None = None) -> list[Row]:
    """Dev-set rows: per outer fold the language shift is fitted on that fold's training
    queries and every query is analysed under it (the fold's held-out queries are read
    only there); `x` is the analysis under the shift fitted on all dev queries."""
    rows = [Row(source="devset", key=q.qid, group=q.group, label=q.label == "false", attack=q.attack, lang=q.lang,
                x=np.zeros(len(FEATURES)), fold=int(folds[i])) for i, q in enumerate(dev.queries)]
    for f in [*range(FOLDS), -1]:
        shift = fit_shift(folds != f)
        guard = ClaimGuard(store, decision=ThresholdDecision(1.0, ranker=ranker), shift=shift, reader=reader)
        for i, a in enumerate(_analyse_all(guard, dev)):
            if f == -1:
                rows[i].x, rows[i].meta = a.features, a.evidence
                continue
            rows[i].x_by_fold[f] = a.features
            if folds[i] == f:
                q = dev.queries[i]
                rows[i].matched, rows[i].right = a.matched, a.matched == q.claim_id
                log.write(
                    "query", key=q.qid, qid=q.qid, claim_id=q.claim_id, label=q.label, attack=q.attack, lang=q.lang,
                    group=q.group, topic=q.topic, negative_type=q.negative_type, fold=f, matched=a.matched,
                    ranked=a.ranked, features=a.features.tolist(), naive_matched=naive[i].matched, **a.extra,
                )
        console.print(f"dev set analysed under fold {f}'s language shift" if f >= 0 else "dev set analysed (all-query shift)")
    return rows


def _paper_rows(guard: ClaimGuard, queries: list[PaperQuery]) -> list[Row]:
    rows = []
    for start in range(0, len(queries), 32):
        batch = queries[start : start + 32]
        for q, a in zip(batch, guard.analyse([q.text for q in batch])):
            assert a is not None and a.claim is not None and a.context is not None
            rows.append(Row(source="paper", key=q.key, group=q.claim_id, label=q.label == "false", attack=q.attack,
                            lang=q.lang, x=features(a.context), matched=a.claim.id, right=a.claim.id == q.claim_id,
                            meta=_evidence(guard, a, 0)))
    return rows


def _tweet_rows(guard: ClaimGuard, tweets: list[TweetQuery]) -> list[Row]:
    """Two rows per tweet: as it is (repeats a stored claim) and with its right claims
    taken out of the candidates (the store does not hold its claim): the others are
    re-ranked as if the right ones had never been retrieved. A copy of a right claim (same
    `claim_key`) goes out with it: left in, it made a fifth of these rows "negatives" that
    match the tweet's claim word for word (docs/BENCHMARKS.md, session 5)."""
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
                        x=features(a.context), matched=top, right=top in q.gold, meta=_evidence(guard, a, 0)))
        gold_slots = {store.slot_of(g) for g in q.gold} | {slot for k in gold_keys for slot in copies.get(k, ())}
        keep = np.array([slot not in gold_slots for slot in a.slots])
        if keep.any():
            kept = np.flatnonzero(keep)
            sub = pairs_without(a.pairs, keep)
            other = int(kept[int(np.argmax(rank_scores(sub, guard.ranking, guard.ranker)))])
            guard.select(a, other)
            rows.append(Row(source="checkthat", key=f"{q.qid}-without-gold", group=group, label=False,
                            attack="tweet, right claim removed", lang="en", x=features(a.context),
                            matched=a.claim_at(other).id, meta=_evidence(guard, a, other, keep)))
    return rows


#: Tweet trappings added to every dev and paper query, both classes (a second row each, key
#: + TWEET_FORM): without them every social-media text the decision was fitted on was a
#: CheckThat tweet, and "social" came to mean "repeats a claim": the decision fitted that
#: way flagged 86% of the dev set's near-miss true facts once they looked like tweets
#: (docs/BENCHMARKS.md, session 5). The normalisation turns each into a name at the end.
TWEET_TAILS = (" pic.twitter.com/Xq3vB7kLpz \u2014 Jane Doe (@janedoe_news) January 6, 2020",
               " https://t.co/9fKq2LmZ #FactCheck \u2014 Sam Lee (@samlee) March 2, 2020")
TWEET_FORM = "#tweet"


def _tweet_form_rows(store: ClaimStore, dev: DevSet, fit_shift, ranker, folds: np.ndarray, guard: ClaimGuard,
                     paper: list[PaperQuery]) -> list[Row]:
    """Dev and paper rows again with a tweet's trappings (`TWEET_TAILS`), in the folds of
    their originals; dev rows under each fold's language shift, as `_dev_rows`."""
    import dataclasses

    texts = [q.text + TWEET_TAILS[i % 2] for i, q in enumerate(dev.queries)]
    rows = [Row(source="devset", key=q.qid + TWEET_FORM, group=q.group, label=q.label == "false",
                attack=f"{q.attack} as tweet", lang=q.lang, x=np.zeros(len(FEATURES)), fold=int(folds[i]))
            for i, q in enumerate(dev.queries)]
    for f in [*range(FOLDS), -1]:
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
    return rows + _paper_rows(guard, as_tweets)


def _evidence(guard: ClaimGuard, a, j: int, keep: np.ndarray | None = None) -> dict[str, float]:
    """Retrieval evidence about candidate `j` beyond the decision's features (logged for
    analysis): word overlaps, BM25 rank and relative score, the ranker's score and its
    margin to the next candidate; with `keep`, over the kept candidates only."""
    keep = np.ones(len(a.slots), dtype=bool) if keep is None else keep
    sub = pairs_without(a.pairs, keep)
    at = int(np.flatnonzero(keep).tolist().index(j))
    scores = rank_scores(sub, guard.ranking, guard.ranker)
    rest = np.delete(scores, at)
    col = {name: i for i, name in enumerate(RANK_FEATURES)}
    return {**{name: float(sub[at, col[name]]) for name in ("coverage", "precision", "names", "lex_rr", "lex_rel", "dense_rr")},
            "rank_score": float(scores[at]), "margin": float(scores[at] - rest.max()) if len(rest) else 0.0}


def _fit_decision(
    store: ClaimStore, ct_store: ClaimStore | None, ct: CheckThat | None, dev: DevSet, extra: list[Claim],
    true_pool: list[Claim], paper: int, settings: Settings, log: RunLog, embedder_spec: str, console: Console,
    checkthat_only: bool = False, reader_spec: str | None = None, reader_languages: str = "en",
) -> tuple[LogisticDecision, Reader | None]:
    """The ranker (CheckThat train, C on CheckThat dev), with `reader_spec` the pair reader
    (an embedder spec), then one decision over
    dev, paper and CheckThat-train rows: outer CV grouped by claim (nested C),
    leave-one-source-out, and the final fit on everything. Returns the final decision (with
    shift and ranker) and the reader."""
    folds = np.array(_folds([q.group for q in dev.queries]))
    unshifted = ClaimGuard(store, decision=ThresholdDecision(1.0), ranking="dense", k_lexical=0, social=())
    shipped = _shipped_or_threshold(embedder_spec)
    # The language shift of the shipped decision (fitted on the 480 dev queries, never on a
    # tweet or a LIAR/Snopes query) serves every source but the dev set, whose folds get
    # their own; fitted here only when no shipped one exists for this embedder.
    fit_shift = None
    full_shift = shipped.shift
    if full_shift is None:
        fit_shift = _shift_fitter(unshifted, dev)
        full_shift = fit_shift(np.ones(len(dev.queries), dtype=bool))
    ranker = None
    reader = None
    ct_rows: list[Row] = []
    if ct is not None and ct_store is not None:
        # CheckThat first: its retrieval results are logged before the slower dev-set parts.
        base = ThresholdDecision(1.0, shift=full_shift)
        fusion = ClaimGuard(ct_store, decision=base, ranking="rrf")
        analysed = {split: analyse_tweets(fusion, ct.queries[split]) for split in ("test", "dev", "train")}
        ranker = choose_ranker(analysed["train"], analysed["dev"], analysed["test"], log, console)
        learned = ClaimGuard(ct_store, decision=ThresholdDecision(1.0, shift=full_shift, ranker=ranker))
        if checkthat_only:
            import dataclasses

            console.print("--checkthat-only: the shipped decision with the new ranker, no cross-source fit")
            return dataclasses.replace(shipped, ranker=ranker), None  # type: ignore[type-var]
        if reader_spec is not None:
            reader = load_reader(reader_spec, settings.embed, reader_languages)
            log.write("reader", key=reader_spec, **reader.describe())
            learned = ClaimGuard(ct_store, decision=ThresholdDecision(1.0, shift=full_shift, ranker=ranker), reader=reader)
        ct_rows = _tweet_rows(learned, ct.queries["train"])
    elif reader_spec is not None:
        reader = load_reader(reader_spec, settings.embed, reader_languages)
    if fit_shift is None:
        fit_shift = _shift_fitter(unshifted, dev)
    naive = _analyse_all(unshifted, dev)
    naive_s1 = np.array([a.features[0] for a in naive])
    y_dev = np.array([q.label == "false" for q in dev.queries])
    cutoffs = _naive_cutoffs(naive_s1, y_dev, folds)
    for i, q in enumerate(dev.queries):
        log.write("naive", key=q.qid, qid=q.qid, threshold_cv=bool(naive_s1[i] >= cutoffs[folds[i]]))
    rows = _dev_rows(store, dev, fit_shift, ranker, log, console, naive, folds, reader)
    paper_queries_ = paper_queries(extra, true_pool, paper, settings.seed) if paper > 0 else []
    guard = ClaimGuard(store, decision=ThresholdDecision(1.0, shift=full_shift, ranker=ranker), reader=reader)
    rows += _paper_rows(guard, paper_queries_) + ct_rows
    rows += _tweet_form_rows(store, dev, fit_shift, ranker, folds, guard, paper_queries_)
    assign_folds([r for r in rows if r.source != "devset"])
    for r in rows:  # everything the decision could be fitted on, for analysis
        log.write("row", key=f"{r.source}:{r.key}", source=r.source, label=r.label, attack=r.attack, lang=r.lang,
                  group=r.group, fold=r.fold, x=r.x.tolist(), x_by_fold={f: v.tolist() for f, v in r.x_by_fold.items()},
                  evidence=r.meta, matched=r.matched, right=r.right)
    # The "without" of each comparison, on the same rows and folds: the session-4 decision (no
    # social features) and, with a reader, the decision `bench claims` fits without one.
    _log_variant("pooled_plain", rows, PLAIN_FIT, log)
    fit = DECISION_FIT
    if reader is not None:
        _log_variant("pooled_noreader", rows, DECISION_FIT, log)
        fit = reader_fit(reader)
    scores, flags, chosen = cross_validate(rows, fit)
    log.write("pooled_cv", key="pooled", c_per_fold=chosen, sources={s: sum(r.source == s for r in rows) for s in SOURCES},
              fit={"features": list(fit.names), "cell_weight": [list(c) for c in fit.cell_weight]})
    for r, score, flag in zip(rows, scores, flags):
        if r.source == "devset" and not r.key.endswith(TWEET_FORM):
            log.write("decision", key=r.key, qid=r.key, logistic_cv_score=float(score), logistic_cv=bool(flag))
        else:
            log.write("pooled", key=r.key, source=r.source, label="false" if r.label else "true", attack=r.attack,
                      lang=r.lang, group=r.group, flagged=bool(flag), score=float(score), matched=r.matched, right=r.right)
    for source, (labels, predicted) in leave_one_source_out(rows, fit).items():
        log.write("loso", key=source, source=source,
                  false_acc=float(predicted[labels].mean()) if labels.any() else None,
                  factual_acc=float((~predicted[~labels]).mean()) if (~labels).any() else None,
                  n_false=int(labels.sum()), n_true=int((~labels).sum()))
    final, c = fit_final(rows, fit, embedder=embedder_spec, shift=full_shift, ranker=ranker,
                         reader=reader.identity() if reader is not None else None,
                         trained_on=f"{len(rows)} rows: " + ", ".join(f"{s} {sum(r.source == s for r in rows)}" for s in SOURCES))
    log.write("model", coef=dict(zip(final.names, final.coef)), intercept=final.intercept, c=c)
    console.print(f"decision fitted across sources ({len(rows)} rows, C={c})")
    return final, reader


def _log_variant(kind: str, rows: list[Row], fit, log: RunLog) -> None:
    """Out-of-fold accuracies of another decision on the same rows and folds, per cell."""
    _, flags, _ = cross_validate(rows, fit)
    for source in SOURCES:
        for attack in sorted({r.attack for r in rows if r.source == source}) + ["all"]:
            sub = [(r, f) for r, f in zip(rows, flags) if r.source == source and attack in ("all", r.attack)]
            pos, neg = [f for r, f in sub if r.label], [not f for r, f in sub if not r.label]
            log.write(kind, key=f"{source}:{attack}", source=source, attack=attack,
                      false_acc=float(np.mean(pos)) if pos else None, factual_acc=float(np.mean(neg)) if neg else None,
                      n_false=len(pos), n_true=len(neg))


def _naive_cutoffs(scores: np.ndarray, y: np.ndarray, folds: np.ndarray) -> dict[int, float]:
    return {int(f): _best_threshold(scores[folds != f], y[folds != f]) for f in np.unique(folds)}


def _query_rows(log: RunLog) -> list[dict]:
    latest = {e.key: e.data for e in log.of_type("query")}
    return list(latest.values())


def _best_threshold(scores: np.ndarray, y: np.ndarray) -> float:
    """The threshold maximising balanced accuracy on the training folds."""
    best, best_t = -1.0, float(np.median(scores))
    for t in np.unique(scores):
        acc = (scores[y] >= t).mean() + (scores[~y] < t).mean()
        if acc > best:
            best, best_t = acc, float(t)
    return best_t


# -- 5. LLM judge -------------------------------------------------------------------------


def _judge(settings: Settings, dev: DevSet, log: RunLog, limit: int, console: Console) -> None:
    llm = get_llm(None, settings.llm)
    log.write("component", key="judge_llm", **llm.describe())  # which model / pack judged
    judges = [LLMJudge(llm, prompt=1), LLMJudge(llm, prompt=2)]
    rows = {r["qid"]: r for r in _query_rows(log)}
    claims = {c.id: c.text for c in dev.claims}
    queries = dev.queries if limit <= 0 else random.Random(settings.seed).sample(dev.queries, min(limit, len(dev.queries)))
    done = log.done_keys("judge")
    from ...claims import strip_instructions

    for n, q in enumerate(queries):
        if q.qid in done:
            continue
        headline = claims.get(rows[q.qid]["matched"]) or rows[q.qid]["matched"]
        body = strip_instructions(q.text)[0]
        answers: dict[str, object] = {}
        for j in judges:
            try:
                answers[j.name] = j.judge(body, [headline])
            except LLMError as exc:
                answers[j.name] = f"error: {type(exc).__name__}"
        log.write("judge", key=q.qid, qid=q.qid, llm=llm.spec, **answers)
        if n % 20 == 0:
            console.print(f"LLM judge {n + 1}/{len(queries)}")


# -- 6. speed -----------------------------------------------------------------------------

class _SpeedTexts:
    """Real short texts for the speed runs: LIAR train statements (politicians' claims, one
    to three sentences, the kind of text the service sees), shuffled once; `take` never
    hands out a text twice, so no run is served from an embedding cache."""

    def __init__(self, data_dir: Path, seed: int) -> None:
        import csv

        path = data_dir / "claims" / "liar" / "train.tsv"
        with path.open(encoding="utf-8", newline="") as fh:
            rows = [r[2] for r in csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE) if len(r) > 2 and r[2].strip()]
        self.texts = list(dict.fromkeys(rows))
        random.Random(seed).shuffle(self.texts)
        self.source = f"{path} ({len(self.texts)} unique statements, shuffled with seed {seed})"
        self._next = 0

    def take(self, n: int) -> list[str]:
        if self._next + n > len(self.texts):
            raise ValueError(f"the speed runs need more than the {len(self.texts)} LIAR train statements")
        out = self.texts[self._next : self._next + n]
        self._next += n
        return out


def _speed_parts(settings: Settings, store: ClaimStore, texts: _SpeedTexts, log: RunLog, console: Console) -> None:
    if "speed" not in log.done_keys("speed"):
        _speed(settings, store, texts, log, console)
    if "cli_speed" not in log.done_keys("cli_speed"):
        _cli_speed(settings, store, texts, log, console)


def _token_work(guards: dict[str, ClaimGuard], texts: list[str]) -> dict[str, float]:
    """Embedding work without a clock: e5 tokens each guard embeds per token of the raw
    texts, and its views per text (e5 only: other embedders count no tokens)."""
    first = next(iter(guards.values()))
    count = getattr(first.embedder, "token_count", None)
    if count is None:
        return {}
    raw = sum(count(t, "query") for t in texts)
    out: dict[str, float] = {"texts": len(texts), "raw_tokens": raw}
    for name, g in guards.items():
        views = [v.text for t in texts for v in g.views(t)]
        out[f"{name}_per_raw"] = sum(count(v, "query") for v in views) / raw
        out[f"{name}_views_per_text"] = len(views) / len(texts)
    return out


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _speed(settings: Settings, store: ClaimStore, texts: _SpeedTexts, log: RunLog, console: Console) -> None:
    cold = settings.embed.model_copy(update={"cache_dir": None, "memory_cache_size": 4096})
    embedder = get_embedder(None, cold)
    # A second handle on the same store, with an embedder that has no disk cache.
    bench_store = ClaimStore.open(store.path, embedder)
    guard = ClaimGuard(bench_store, decision=_shipped_or_threshold(embedder.spec))
    # Session 3's guard checked every sentence of every text: the same guard with that.
    every_view = ClaimGuard(bench_store, decision=guard.decision, sentence_words=0)
    n, repeats = 64, 3  # cut from 128 x 5 on a machine shared by five benchmarks (docs/BENCHMARKS.md)
    embedder.embed(["warm up"], "query")
    for g in (guard, every_view):
        g.check("warm up the guard")
        g.check_many(texts.take(32))
    # Raw embedding and batch checks alternate, on fresh texts each time, and the ratio is
    # taken of the medians: measured once each, back to back, the ratio swung 0.79-1.03
    # between runs on this shared 2-core machine.
    raw_rates, batch_rates, every_rates = [], [], []
    for r in range(repeats):
        raw_texts, batch_texts, every_texts = texts.take(n), texts.take(n), texts.take(n)
        t0 = time.perf_counter()
        embedder.embed(raw_texts, "query")
        raw_rates.append(n / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        for i in range(0, n, 64):
            guard.check_many(batch_texts[i : i + 64])
        batch_rates.append(n / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        for i in range(0, n, 64):
            every_view.check_many(every_texts[i : i + 64])
        every_rates.append(n / (time.perf_counter() - t0))
        console.print(f"speed run {r + 1}/{repeats}: raw e5 {raw_rates[-1]:.1f}/s, check_many {batch_rates[-1]:.1f}/s, "
                      f"every sentence {every_rates[-1]:.1f}/s")
    raw_rate, batch_rate = statistics.median(raw_rates), statistics.median(batch_rates)
    t0 = time.perf_counter()
    for i in range(0, n, 64):
        guard.check_many(batch_texts[i : i + 64])
    cached_rate = n / (time.perf_counter() - t0)
    single = []
    for text in texts.take(30):
        t0 = time.perf_counter()
        guard.check(text)
        single.append(time.perf_counter() - t0)
    single_embed = []
    for text in texts.take(30):
        t0 = time.perf_counter()
        embedder.embed(text, "query")
        single_embed.append(time.perf_counter() - t0)
    # Ingest: fresh claims into a fresh store (embedding included).
    with tempfile.TemporaryDirectory() as tmp:
        fresh = ClaimStore.open(Path(tmp) / "s", embedder, create=True)
        claims = [Claim(id=f"i{i}", text=t, verdict="false") for i, t in enumerate(texts.take(100))]
        t0 = time.perf_counter()
        fresh.add(claims)
        ingest_rate = len(claims) / (time.perf_counter() - t0)
        fresh.close()
    mem = _memory_100k(embedder.dim)
    profile = _profile(guard, texts.take(64))
    log.write(
        "speed", key="speed", store_claims=len(store), raw_embed_per_s=raw_rate, batch_checks_per_s=batch_rate,
        ratio=batch_rate / raw_rate, raw_embed_runs=raw_rates, batch_check_runs=batch_rates,
        cached_checks_per_s=cached_rate,
        single_p50_ms=1000 * statistics.median(single), single_p95_ms=1000 * float(np.percentile(single, 95)),
        single_embed_p50_ms=1000 * statistics.median(single_embed),
        single_embed_p95_ms=1000 * float(np.percentile(single_embed, 95)),
        ingest_claims_per_s=ingest_rate, n=n, repeats=repeats, **mem, profile=profile, texts=texts.source,
        every_sentence_checks_per_s=statistics.median(every_rates), every_sentence_runs=every_rates,
        tokens=_token_work({"default": guard, "every_sentence": every_view}, texts.texts[-2000:]),
    )
    bench_store.close()
    console.print("speed measured")


def _cli_speed(settings: Settings, store: ClaimStore, pool: _SpeedTexts, log: RunLog, console: Console, n: int = 1000,
               repeats: int = 3) -> None:
    """End to end through the CLI, as a user runs it (issue 12: 1,000 short texts against a 10k
    store): `misguard check --input` on n fresh LIAR statements against `store` (process start,
    imports, store and model load included) alternating with raw e5 embedding of n other fresh
    texts in this process; `misguard claims add` of n fresh claims into a new store; and the
    fixed cost, `check` of one text. Ratio of medians."""
    import os
    import subprocess
    import sys

    cold = settings.embed.model_copy(update={"cache_dir": None})
    embedder = get_embedder(None, cold)
    embedder.embed(["warm up"], "query")
    exe = str(Path(sys.executable).parent / "misguard")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MISGUARD_")}
    base = [exe, "--embedder", embedder.spec]
    raw_rates, cli_rates = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeats):
            texts = pool.take(n)
            t0 = time.perf_counter()
            for i in range(0, n, 64):
                embedder.embed(texts[i : i + 64], "query")
            raw_rates.append(n / (time.perf_counter() - t0))
            inp, out = Path(tmp) / f"in{r}.jsonl", Path(tmp) / f"out{r}.jsonl"
            inp.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(pool.take(n))))
            t0 = time.perf_counter()
            subprocess.run([*base, "check", "--db", str(store.path), "--input", str(inp), "--output", str(out)],
                           check=True, env=env, capture_output=True)
            cli_rates.append(n / (time.perf_counter() - t0))
            console.print(f"CLI speed run {r + 1}/{repeats}: raw e5 {raw_rates[-1]:.1f}/s, check --input {cli_rates[-1]:.1f}/s")
        startup = []
        for r in range(repeats):
            one = Path(tmp) / f"one{r}.jsonl"
            one.write_text(json.dumps({"id": 0, "text": pool.take(1)[0]}) + "\n")
            t0 = time.perf_counter()
            subprocess.run([*base, "check", "--db", str(store.path), "--input", str(one), "--output", str(Path(tmp) / "one.out")],
                           check=True, env=env, capture_output=True)
            startup.append(time.perf_counter() - t0)
        claims = Path(tmp) / "claims.jsonl"
        fresh = pool.take(n)
        claims.write_text("".join(json.dumps({"id": f"c{i}", "text": t, "verdict": "false"}) + "\n" for i, t in enumerate(fresh)))
        t0 = time.perf_counter()
        subprocess.run([*base, "claims", "add", "--db", str(Path(tmp) / "fresh"), str(claims)], check=True, env=env,
                       capture_output=True)
        ingest = len(fresh) / (time.perf_counter() - t0)
    raw, cli = statistics.median(raw_rates), statistics.median(cli_rates)
    log.write("cli_speed", key="cli_speed", n=n, repeats=repeats, store_claims=len(store), raw_embed_per_s=raw,
              cli_checks_per_s=cli, ratio=cli / raw, raw_runs=raw_rates, cli_runs=cli_rates,
              cli_ingest_claims_per_s=ingest, ingest_claims=len(fresh), one_text_s=statistics.median(startup),
              one_text_runs=startup, texts=pool.source)
    console.print(f"CLI: check --input {cli:.1f}/s vs raw e5 {raw:.1f}/s ({cli / raw:.2f}x); claims add {ingest:.1f} claims/s; "
                  f"one text {statistics.median(startup):.2f} s")


def _shipped_or_threshold(spec: str):
    from ...claims import default_decision
    from ...errors import ConfigError

    try:
        return default_decision(spec)
    except ConfigError:
        return ThresholdDecision(0.85)


def _memory_100k(dim: int) -> dict[str, float]:
    """RSS growth and exact-search time for a 100k-claim store (random unit vectors in
    place of embeddings, which would take ~30 min to compute here)."""
    from ...embed import get_embedder as _get

    before = _rss_mb()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        hashing = _get(f"hashing/{dim}")
        store = ClaimStore.open(Path(tmp) / "big", hashing, create=True)
        n = 100_000
        vecs = rng.standard_normal((n, dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        claims = [Claim(id=f"c{i}", text=f"synthetic claim number {i}", verdict="false") for i in range(n)]
        t0 = time.perf_counter()
        store.add(claims, vectors={c.id: v for c, v in zip(claims, vecs)})
        build_s = time.perf_counter() - t0
        del vecs, claims
        store.close()
        t0 = time.perf_counter()
        store = ClaimStore.open(Path(tmp) / "big", hashing)
        open_s = time.perf_counter() - t0
        after = _rss_mb()
        q = rng.standard_normal((8, dim)).astype(np.float32)
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            store.search(q, 10)
            times.append((time.perf_counter() - t0) / len(q))
        disk = sum(f.stat().st_size for f in (Path(tmp) / "big").iterdir())
        store.close()
    return {
        "mem_100k_rss_growth_mb": after - before, "mem_100k_index_mb": 100_000 * dim * 4 / 1e6,
        "mem_100k_disk_mb": disk / 1e6, "search_100k_ms_per_query": 1000 * min(times),
        "build_100k_s_without_embedding": build_s, "open_100k_s": open_s,
    }


def _profile(guard: ClaimGuard, texts: list[str]) -> dict[str, float]:
    """Where the time of a batch check goes: embedding, retrieval, features, the rest."""
    profiler = cProfile.Profile()
    t0 = time.perf_counter()
    profiler.enable()
    guard.check_many(texts)
    profiler.disable()
    total = time.perf_counter() - t0
    stats = pstats.Stats(profiler, stream=io.StringIO())
    parts: dict[str, float] = defaultdict(float)
    wanted = {
        "embed (e5 forward passes)": ("_embed_batch",),
        "retrieval (matrix product, top-k)": ("search",),
        "segmentation and cleaning": ("segment", "clean_with_offsets", "strip_instructions"),
        "features": ("features",),
        "topic agent": ("predict_many",),
        "SQLite record lookups": ("get_slots",),
        "BM25 lexical search (FTS5)": ("lexical_search",),
        "pair features (ranking)": ("_pair_features",),
        "social-media normalisation": ("normalize_social",),
    }
    for (filename, _, func), (_, _, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        for label, names in wanted.items():
            if func in names and "misguard" in filename:
                parts[label] = max(parts[label], cumulative)
    out = {label: parts.get(label, 0.0) / total for label in wanted}
    out["total_s"] = total
    return out


__all__ = ["run_claims_bench"]
