"""`bench claims`, the decision: fitted by `misguard.claims.fit_decision` (as `misguard claims
fit-decision` fits it), and measured here from what that returns: every row, each dev query
under the language shift of the fold holding it out, the out-of-fold flags per source and
cell, leave-one-source-out, and the final coefficients. Beside it, on the same rows and
folds: the naive top-1 cosine threshold (no shift, dense only, its threshold chosen on the
dev training folds), the decision without the social features and, with a reader, the
decision without it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from rich.console import Console

from ...claims import (
    ClaimGuard,
    ClaimStore,
    Fit,
    LogisticDecision,
    Row,
    TrainingData,
    cross_validate,
    fit_cosine_threshold,
    fit_decision,
    fit_ranker_on_tweets,
    leave_one_source_out,
)
from ...claims._crossfit import DECISION_FIT, SOURCES
from ...claims._detect import FEATURES_PLAIN, Decision, ThresholdDecision
from ...claims._fit import fit_language_shift
from ...claims._reader import Reader
from ...claims._training import TWEET_FORM, analyse_devset, dev_folds
from ...config import Settings
from ...runlog import RunLog
from ._checkthat import log_rankings
from ._speed import shipped_or_threshold

#: The decision without the social features (the decision shipped before them): the
#: "without" of the social features, on the same rows and folds.
PLAIN_FIT = Fit(names=FEATURES_PLAIN)


def measure_decision(
    data: TrainingData, store: ClaimStore, ct_store: ClaimStore | None, settings: Settings, log: RunLog, console: Console,
    *, paper: int, reader: Reader | None, checkthat_only: bool = False,
) -> Decision:
    """Fit the decision (with the shipped decision's language shift, as the shipped one was
    fitted) and log its figures; returns it. With `checkthat_only`: the shipped decision
    with a re-ranker fitted anew, and no cross-source fit."""
    shipped = shipped_or_threshold(store.embedder.spec)
    if checkthat_only and data.checkthat is not None and ct_store is not None:
        shift = shipped.shift if shipped.shift is not None else fit_language_shift(store, data.devset)
        fitted = fit_ranker_on_tweets(ct_store, data.checkthat, shift, console.print)
        log_rankings(ct_store, shift, fitted, data.checkthat.queries["test"], log, console)
        console.print("--checkthat-only: the shipped decision with the new ranker, no cross-source fit")
        return dataclasses.replace(shipped, ranker=fitted.ranker)  # type: ignore[type-var]
    if reader is not None:
        log.write("reader", key=str(reader.identity().get("embedder")), **reader.describe())
    result = fit_decision(data, store, ct_store, paper=paper, seed=settings.seed, shift=shipped.shift, reader=reader,
                          progress=console.print)
    if result.ranker is not None and data.checkthat is not None and ct_store is not None:
        log_rankings(ct_store, result.shift, result.ranker, data.checkthat.queries["test"], log, console)
    rows = result.rows
    if data.devset is not None:
        _log_dev_queries(store, data, rows, log)
    for r in rows:  # everything the decision could be fitted on, for analysis
        log.write("row", key=f"{r.source}:{r.key}", source=r.source, label=r.label, attack=r.attack, lang=r.lang,
                  group=r.group, fold=r.fold, x=r.x.tolist(), x_by_fold={f: v.tolist() for f, v in r.x_by_fold.items()},
                  evidence=r.meta, matched=r.matched, right=r.right)
    # The "without" of each comparison, on the same rows and folds.
    _log_variant("pooled_plain", rows, PLAIN_FIT, log)
    if reader is not None:
        _log_variant("pooled_noreader", rows, DECISION_FIT, log)
    log.write("pooled_cv", key="pooled", c_per_fold=result.c_per_fold,
              sources={s: sum(r.source == s for r in rows) for s in SOURCES},
              fit={"features": list(result.fit.names), "cell_weight": [list(c) for c in result.fit.cell_weight]})
    for r, score, flag in zip(rows, result.scores, result.flags):
        if r.source == "devset" and not r.key.endswith(TWEET_FORM):
            log.write("decision", key=r.key, qid=r.key, logistic_cv_score=float(score), logistic_cv=bool(flag))
        else:
            log.write("pooled", key=r.key, source=r.source, label="false" if r.label else "true", attack=r.attack,
                      lang=r.lang, group=r.group, flagged=bool(flag), score=float(score), matched=r.matched, right=r.right)
    for source, (labels, predicted) in leave_one_source_out(rows, result.fit).items():
        log.write("loso", key=source, source=source,
                  false_acc=float(predicted[labels].mean()) if labels.any() else None,
                  factual_acc=float((~predicted[~labels]).mean()) if (~labels).any() else None,
                  n_false=int(labels.sum()), n_true=int((~labels).sum()))
    final: LogisticDecision = result.decision
    log.write("model", coef=dict(zip(final.names, final.coef)), intercept=final.intercept, c=result.c)
    return final


def _log_dev_queries(store: ClaimStore, data: TrainingData, rows: list[Row], log: RunLog) -> None:
    """Each dev query as read under the shift of the fold holding it out, next to the naive
    baseline: the top-1 cosine (no shift, dense ranking, no BM25, no social steps) with its
    threshold chosen on the other folds."""
    dev = data.devset
    assert dev is not None
    folds = dev_folds(dev)
    unshifted = ClaimGuard(store, decision=ThresholdDecision(1.0), ranking="dense", k_lexical=0, social=())
    naive = analyse_devset(unshifted, dev)
    naive_s1 = np.array([a.features[0] for a in naive])
    y_dev = np.array([q.label == "false" for q in dev.queries])
    cutoffs = {int(f): fit_cosine_threshold(naive_s1[folds != f], y_dev[folds != f]) for f in np.unique(folds)}
    for i, q in enumerate(dev.queries):
        log.write("naive", key=q.qid, qid=q.qid, threshold_cv=bool(naive_s1[i] >= cutoffs[folds[i]]))
    by_key = {r.key: r for r in rows if r.source == "devset"}
    for i, q in enumerate(dev.queries):
        r = by_key[q.qid]
        log.write(
            "query", key=q.qid, qid=q.qid, claim_id=q.claim_id, label=q.label, attack=q.attack, lang=q.lang,
            group=q.group, topic=q.topic, negative_type=q.negative_type, fold=r.fold, matched=r.matched,
            ranked=r.ranked, features=r.features(r.fold).tolist(), naive_matched=naive[i].matched, **r.info,
        )


def _log_variant(kind: str, rows: list[Row], fit: Fit, log: RunLog) -> None:
    """Out-of-fold accuracies of another decision on the same rows and folds, per cell."""
    _, flags, _ = cross_validate(rows, fit)
    for source in SOURCES:
        for attack in sorted({r.attack for r in rows if r.source == source}) + ["all"]:
            sub = [(r, f) for r, f in zip(rows, flags) if r.source == source and attack in ("all", r.attack)]
            pos, neg = [f for r, f in sub if r.label], [not f for r, f in sub if not r.label]
            log.write(kind, key=f"{source}:{attack}", source=source, attack=attack,
                      false_acc=float(np.mean(pos)) if pos else None, factual_acc=float(np.mean(neg)) if neg else None,
                      n_false=len(pos), n_true=len(neg))
