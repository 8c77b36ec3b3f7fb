"""Fitting the claim decision: the stores it is fitted against, the candidate re-ranker, the
language shift and the cross-source flag decision, saved as one decision file.

    data = load_training_data("data")                       # the sources present there
    store = build_training_store("work/store", embedder, data).store
    ct = build_checkthat_store("work/store-checkthat", embedder, data.checkthat).store
    result = fit_decision(data, store, ct, shift=default_decision(embedder.spec).shift)
    save_decision(result.decision, "decision.json")        # check --decision decision.json

`misguard claims fit-decision` runs exactly this; `misguard bench claims` calls the same
functions and reports what they return.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..embed import Embedder
from ..errors import DataError, StoreError
from ._analysis import Analysis
from ._crossfit import DECISION_FIT, SOURCES, Fit, assign_folds, cross_validate, fit_final, reader_fit
from ._detect import LogisticDecision, ThresholdDecision
from ._guard import ClaimGuard
from ._rank import LinearRanker, average_precision_at, fit_ranker, rank_scores, reciprocal_rank
from ._reader import Reader
from ._shift import LanguageShift
from ._sources import CheckThat, DevSet, TrainingData, paper_queries
from ._store import ClaimStore
from ._topics import OfflineTopicClassifier
from ._training import (
    Row, TweetAnalysis, analyse_tweets, dev_folds, dev_rows, paper_rows, shift_fitter, tweet_form_rows, tweet_rows,
)

#: Regularisation strengths tried for the re-ranker (chosen on the CheckThat dev tweets).
RANKER_C = (0.01, 0.1, 1.0, 10.0)
#: Candidates the retrieval metrics look at (MAP@5 is CheckThat-2020's official measure).
TOP = 5
#: LIAR/Snopes false claims stored next to the dev claims, and paper-style false (and true)
#: claims attacked: the recipe of the shipped decision (its `trained_on`: 3,760 rows).
DISTRACTORS = 500
PAPER_CLAIMS = 100

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


# -- the stores the decision is fitted against ---------------------------------------------


@dataclass
class StoreBuild:
    """A store built (or brought up to date) for fitting, and what that cost."""

    store: ClaimStore
    embedded: int
    unchanged: int
    seconds: float


def build_training_store(path: str | Path, embedder: Embedder, data: TrainingData, progress: Progress = _quiet) -> StoreBuild:
    """The dev set's false claims and the LIAR/Snopes distractors in one store (reused when
    `path` holds it already: only new or changed claims are embedded). The topic agent
    labels the distractors, which come without a topic."""
    store = ClaimStore.open(path, embedder, create=True)
    topics = OfflineTopicClassifier(embedder)

    def assign(vectors: np.ndarray) -> list[str]:
        return topics.predict_one(vectors, "passage")

    started = time.perf_counter()
    reports = [store.add(data.devset.claims, source="devset")] if data.devset is not None else []
    for i in range(0, len(data.distractors), 2000):
        reports.append(store.add(data.distractors[i : i + 2000], source="distractors", assign_topics=assign))
        progress(f"store: {len(store)} claims ({time.perf_counter() - started:.0f} s)")
    return StoreBuild(store, sum(r.embedded for r in reports), sum(r.unchanged for r in reports),
                      time.perf_counter() - started)


def build_checkthat_store(path: str | Path, embedder: Embedder, checkthat: CheckThat, progress: Progress = _quiet) -> StoreBuild:
    """CheckThat-2020's verified claims in a store of their own (reused like `build_training_store`)."""
    store = ClaimStore.open(path, embedder, create=True)
    started = time.perf_counter()
    embedded = unchanged = 0
    for i in range(0, len(checkthat.claims), 2000):
        report = store.add(checkthat.claims[i : i + 2000], source="checkthat2020")
        embedded, unchanged = embedded + report.embedded, unchanged + report.unchanged
        progress(f"CheckThat store: {len(store)} claims ({time.perf_counter() - started:.0f} s)")
    return StoreBuild(store, embedded, unchanged, time.perf_counter() - started)


# -- the candidate re-ranker ----------------------------------------------------------------


def ranked_ids(a: Analysis, ranking: str, ranker: LinearRanker | None) -> list[str]:
    """Candidate ids of an analysis re-ordered under `ranking` (the guard's own pair
    features and `rank_scores`, so every ranking sees the same candidates)."""
    if a.pairs is None or not a.candidates:
        return []
    order = np.argsort(-rank_scores(a.pairs, ranking, ranker), kind="stable")
    return [a.candidates[j].id for j in order]


def retrieval_metrics(ranked: list[tuple[list[str], frozenset[str]]]) -> dict[str, float]:
    """MAP@5, P@1, MRR and the share of texts with a right claim among the candidates, over
    (ranked candidate ids, right ids) pairs."""
    n = max(1, len(ranked))
    return {
        "map5": sum(average_precision_at(r, g, TOP) for r, g in ranked) / n,
        "p1": sum(bool(r) and r[0] in g for r, g in ranked) / n,
        "mrr": sum(reciprocal_rank(r, g) for r, g in ranked) / n,
        "recall_candidates": sum(bool(set(r) & g) for r, g in ranked) / n,
        "n": len(ranked),
    }


def ranker_groups(analysed: list[TweetAnalysis]) -> list[tuple[np.ndarray, np.ndarray]]:
    return [
        (t.analysis.pairs, np.array([c.id in t.query.gold for c in t.analysis.candidates]))
        for t in analysed if t.analysis.pairs is not None
    ]


@dataclass
class RankerFit:
    """The re-ranker fitted on the CheckThat train tweets for each C, the one with the best
    dev MAP@5, and the analyses it was fitted and chosen on (fusion ranking)."""

    ranker: LinearRanker
    c: float
    dev_metrics: dict[float, dict[str, float]]
    train: list[TweetAnalysis]
    dev: list[TweetAnalysis]


def fit_ranker_on_tweets(store: ClaimStore, checkthat: CheckThat, shift: LanguageShift | None,
                         progress: Progress = _quiet) -> RankerFit:
    """Fit the re-ranker on the train tweets' candidate lists for each C in `RANKER_C` and
    keep the one with the best MAP@5 on the dev tweets (the test tweets are never read)."""
    fusion = ClaimGuard(store, decision=ThresholdDecision(1.0, shift=shift), ranking="rrf")
    dev = analyse_tweets(fusion, checkthat.queries["dev"])
    train = analyse_tweets(fusion, checkthat.queries["train"])
    groups = ranker_groups(train)
    if not groups:
        raise DataError("the CheckThat-2020 train tweets gave no candidate lists to fit the re-ranker on")
    metrics: dict[float, dict[str, float]] = {}
    best: tuple[float, float, LinearRanker] | None = None
    for c in RANKER_C:
        ranker = fit_ranker(groups, c=c, trained_on=f"CheckThat-2020 train tweets ({len(train)}), C={c}")
        metrics[c] = retrieval_metrics([(ranked_ids(t.analysis, "learned", ranker), t.query.gold) for t in dev])
        if best is None or metrics[c]["map5"] > best[0]:
            best = (metrics[c]["map5"], c, ranker)
    assert best is not None
    _, c, ranker = best
    progress(f"re-ranker: C={c} chosen on the CheckThat dev tweets")
    return RankerFit(ranker, c, metrics, train, dev)


# -- the language shift and the decision ------------------------------------------------------


def fit_language_shift(store: ClaimStore, dev: DevSet | None) -> LanguageShift:
    """The language shift fitted on every dev query (centroids of their raw segment
    vectors per language; the target: the store's claims other than the dev set's)."""
    if dev is None:
        raise DataError("fitting the language shift needs the dev set (claims/devset-multilingual)")
    unshifted = ClaimGuard(store, decision=ThresholdDecision(1.0), ranking="dense", k_lexical=0, social=())
    return shift_fitter(unshifted, dev)(np.ones(len(dev.queries), dtype=bool))



@dataclass
class DecisionFit:
    """A fitted decision and how it was fitted: its rows (features per text), the out-of-fold
    scores and flags of the same procedure (outer 10-fold CV grouped by claim, C chosen by an
    inner grouped CV), and the parts fitted on the way."""

    decision: LogisticDecision
    c: float
    rows: list[Row]
    fit: Fit
    scores: np.ndarray
    flags: np.ndarray
    c_per_fold: list[float]
    shift: LanguageShift
    ranker: RankerFit | None
    reader: Reader | None

    def out_of_fold(self) -> dict[str, dict[str, float | int | None]]:
        """Per source: the share of texts repeating a stored false claim that are flagged
        ("false") and of the others left alone ("factual"), out of fold."""
        out = {}
        for source in [s for s in SOURCES if any(r.source == s for r in self.rows)]:
            pos = [f for r, f in zip(self.rows, self.flags) if r.source == source and r.label]
            neg = [not f for r, f in zip(self.rows, self.flags) if r.source == source and not r.label]
            out[source] = {"false": float(np.mean(pos)) if pos else None, "factual": float(np.mean(neg)) if neg else None,
                           "n_false": len(pos), "n_true": len(neg)}
        return out


def fit_decision(
    data: TrainingData, store: ClaimStore, checkthat_store: ClaimStore | None = None, *, paper: int = PAPER_CLAIMS,
    seed: int = 0, shift: LanguageShift | None = None, reader: Reader | None = None, progress: Progress = _quiet,
) -> DecisionFit:
    """Fit the flag decision across the sources of `data`.

    `store` holds the dev claims and the distractors (`build_training_store`),
    `checkthat_store` CheckThat-2020's claims (`build_checkthat_store`; without it, or
    without CheckThat in `data`, no re-ranker is fitted and the decision ranks densely).
    `shift`: the language shift the rows of every source but the dev set's folds are read
    under, and that ships in the decision (e.g. the shipped decision's); None fits it on all
    dev queries. Dev rows are always read under a shift fitted without their fold. `paper`:
    LIAR/Snopes false and true claims attacked the paper's way (0: none). `reader`: an
    embedding reader whose cosine the decision reads (`reader_en` or `reader_any`).
    """
    dev = data.devset
    if dev is None and shift is None:
        raise DataError("fitting the language shift needs the dev set (claims/devset-multilingual); without it, "
                        "pass the shift of a fitted decision (the CLI takes the shipped one)", source=str(data.root))
    folds = dev_folds(dev) if dev is not None else np.zeros(0, dtype=int)
    unshifted = ClaimGuard(store, decision=ThresholdDecision(1.0), ranking="dense", k_lexical=0, social=())
    fit_shift = None
    full_shift = shift
    if full_shift is None:
        assert dev is not None
        fit_shift = shift_fitter(unshifted, dev)
        full_shift = fit_shift(np.ones(len(dev.queries), dtype=bool))
    ranking: RankerFit | None = None
    ct_rows: list[Row] = []
    if data.checkthat is not None and checkthat_store is not None:
        # CheckThat first: its ranker serves every source.
        ranking = fit_ranker_on_tweets(checkthat_store, data.checkthat, full_shift, progress)
        learned = ClaimGuard(checkthat_store, decision=ThresholdDecision(1.0, shift=full_shift, ranker=ranking.ranker),
                             reader=reader)
        ct_rows = tweet_rows(learned, data.checkthat.queries["train"])
    ranker = ranking.ranker if ranking is not None else None
    rows: list[Row] = []
    if dev is not None:
        if fit_shift is None:
            fit_shift = shift_fitter(unshifted, dev)
        rows = dev_rows(store, dev, fit_shift, ranker, folds, reader, progress)
    try:
        queries = (paper_queries(data.distractors, data.true_claims, paper, seed)
                   if paper > 0 and data.distractors and data.true_claims else [])
    except ValueError as exc:  # too few true claims to write the attacks with
        raise DataError(f"{exc}; add LIAR/Snopes true claims, or fit without paper-style rows (paper=0)",
                        source=str(data.root)) from None
    guard = ClaimGuard(store, decision=ThresholdDecision(1.0, shift=full_shift, ranker=ranker), reader=reader)
    rows += paper_rows(guard, queries) + ct_rows
    rows += tweet_form_rows(store, dev, fit_shift, ranker, folds, guard, queries)
    if len({r.label for r in rows}) < 2:
        raise DataError("the sources gave texts of one class only; the decision needs texts that repeat a stored "
                        "false claim and texts that do not", source=str(data.root))
    assign_folds([r for r in rows if r.source != "devset"])
    fit = reader_fit(reader) if reader is not None else DECISION_FIT
    scores, flags, chosen = cross_validate(rows, fit)
    final, c = fit_final(rows, fit, embedder=store.embedder.spec, shift=full_shift, ranker=ranker,
                         reader=reader.identity() if reader is not None else None,
                         trained_on=f"{len(rows)} rows: " + ", ".join(f"{s} {sum(r.source == s for r in rows)}" for s in SOURCES))
    progress(f"decision fitted across sources ({len(rows)} rows, C={c})")
    return DecisionFit(final, c, rows, fit, scores, flags, chosen, full_shift, ranking, reader)


def save_decision(decision: LogisticDecision, path: str | Path) -> Path:
    """Write a decision file atomically (a temporary file renamed over `path`)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(decision.to_json())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StoreError(f"Could not write the decision file {path}: {exc}") from None
    return path


def fit_cosine_threshold(scores: np.ndarray, labels: np.ndarray) -> float:
    """The cosine threshold (`ThresholdDecision`) maximising balanced accuracy on `scores`
    (each text's best cosine) against `labels` (repeats a stored false claim)."""
    best, best_t = -1.0, float(np.median(scores))
    for t in np.unique(scores):
        acc = (scores[labels] >= t).mean() + (scores[~labels] < t).mean()
        if acc > best:
            best, best_t = acc, float(t)
    return best_t


__all__ = [
    "DISTRACTORS", "PAPER_CLAIMS", "DecisionFit", "RankerFit", "StoreBuild", "build_checkthat_store",
    "build_training_store", "fit_cosine_threshold", "fit_decision", "fit_language_shift", "fit_ranker_on_tweets", "ranked_ids",
    "retrieval_metrics", "save_decision",
]
