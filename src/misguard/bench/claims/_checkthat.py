"""CheckThat! 2020 task 2 in `bench claims`: tweets vs 10,390 Snopes verified claims.

- store: the verified claims in their own store (`OUTPUT/store-checkthat`);
- social-media normalisation, step by step: P@1 / MRR / MAP@5 on the dev tweets with each
  step left out (and with the whole attribution tail dropped), so the default steps are
  chosen without the test split;
- re-ranker: fitted on the train tweets' candidate lists, its C chosen on the dev tweets;
  the dense, RRF and learned rankings are compared on train (in sample for the ranker),
  dev (C chosen there) and test (reporting only);
- test: the final guard (ranker + cross-source decision) checks the test tweets through
  `ClaimGuard.check_many`; MAP@5, P@1 and MRR are computed from the verdicts'
  `candidates`, "flagged" from their flags.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.console import Console

from ...claims import (
    RANKINGS,
    SOCIAL_STEPS,
    Analysis,
    ClaimGuard,
    ClaimStore,
    LinearRanker,
    average_precision_at,
    fit_ranker,
    reciprocal_rank,
)
from ...claims._rank import rank_scores
from ...claims._social import DEFAULT_STEPS
from ...runlog import RunLog
from ._data import CheckThat, TweetQuery

#: Regularisation strengths tried for the re-ranker (chosen on the dev tweets).
RANKER_C = (0.01, 0.1, 1.0, 10.0)
#: Candidates the metrics look at (MAP@5 is the task's official measure).
TOP = 5


def build_checkthat_store(path: Path, embedder, ct: CheckThat, log: RunLog, console: Console) -> ClaimStore:
    store = ClaimStore.open(path, embedder, create=True)
    started = time.perf_counter()
    embedded = 0
    for i in range(0, len(ct.claims), 2000):
        embedded += store.add(ct.claims[i : i + 2000], source="checkthat2020").embedded
        console.print(f"CheckThat store: {len(store)} claims ({time.perf_counter() - started:.0f} s)")
    log.write("store", key=f"checkthat-store-{len(store)}", source="checkthat2020", claims=len(store),
              embedded=embedded, seconds=time.perf_counter() - started)
    return store


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


def ranked_ids(a: Analysis, ranking: str, ranker: LinearRanker | None) -> list[str]:
    """Candidate ids of an analysis re-ordered under `ranking` (the guard's own pair
    features and `rank_scores`, so every ranking sees the same candidates)."""
    if a.pairs is None or not a.candidates:
        return []
    order = np.argsort(-rank_scores(a.pairs, ranking, ranker), kind="stable")
    return [a.candidates[j].id for j in order]


def retrieval_metrics(ranked: list[tuple[list[str], frozenset[str]]]) -> dict[str, float]:
    n = max(1, len(ranked))
    return {
        "map5": sum(average_precision_at(r, g, TOP) for r, g in ranked) / n,
        "p1": sum(bool(r) and r[0] in g for r, g in ranked) / n,
        "mrr": sum(reciprocal_rank(r, g) for r, g in ranked) / n,
        "recall_candidates": sum(bool(set(r) & g) for r, g in ranked) / n,
        "n": len(ranked),
    }


def social_ablation(
    store: ClaimStore, decision, queries: list[TweetQuery], log: RunLog, console: Console
) -> None:
    """P@1 / MRR / MAP@5 (dense and RRF rankings) on `queries` (the dev tweets) with no
    normalisation, all default steps, each default step left out, and the attribution tail
    dropped instead of reduced to the name."""
    variants: dict[str, tuple[str, ...]] = {"none": (), "default": DEFAULT_STEPS}
    for step in DEFAULT_STEPS:
        variants[f"without {step}"] = tuple(s for s in DEFAULT_STEPS if s != step)
    variants["drop whole attribution tail"] = tuple(
        "drop_attribution" if s == "attribution" else s for s in DEFAULT_STEPS)
    assert all(set(v) <= set(SOCIAL_STEPS) for v in variants.values())
    done = log.done_keys("social")
    for name, steps in variants.items():
        if name in done:
            continue
        guard = ClaimGuard(store, decision=decision, social=steps, ranking="rrf")
        analysed = analyse_tweets(guard, queries)
        row = {}
        for ranking in ("dense", "lexical", "rrf"):
            metrics = retrieval_metrics([(ranked_ids(t.analysis, ranking, None), t.query.gold) for t in analysed])
            row.update({f"{ranking}_{k}": v for k, v in metrics.items()})
        log.write("social", key=name, variant=name, steps=list(steps), **row)
        console.print(f"social normalisation '{name}': P@1 dense {row['dense_p1']:.3f}, rrf {row['rrf_p1']:.3f}")


#: Thresholds tried for `ClaimGuard(sentence_words=...)` (0 = every sentence, session 3).
SENTENCE_WORDS_TRIED = (0, 20, 30, 40, 50, 60)


def views_sweep(
    store: ClaimStore, decision, queries: list[TweetQuery], statements: list[str], log: RunLog, console: Console
) -> None:
    """How short a text may be and still be checked sentence by sentence: for each
    threshold, retrieval on `queries` (the dev tweets) and the e5 tokens embedded per
    token of the raw texts, on the tweets and on `statements` (LIAR train statements)."""
    done = log.done_keys("views")
    for words in SENTENCE_WORDS_TRIED:
        if str(words) in done:
            continue
        guard = ClaimGuard(store, decision=decision, sentence_words=words)
        count = getattr(store.embedder, "token_count", None)
        row: dict[str, object] = {}
        if count is not None:
            for name, texts in (("tweets", [q.text for q in queries]), ("statements", statements)):
                raw = sum(count(t, "query") for t in texts)
                row[f"{name}_tokens_per_raw"] = sum(count(v.text, "query") for t in texts for v in guard.views(t)) / raw
        analysed = analyse_tweets(guard, queries)
        for ranking in ("dense", "rrf", "learned"):
            metrics = retrieval_metrics([(ranked_ids(t.analysis, ranking, guard.ranker), t.query.gold) for t in analysed])
            row.update({f"{ranking}_{k}": v for k, v in metrics.items()})
        log.write("views", key=str(words), sentence_words=words, n_statements=len(statements), **row)
        console.print(f"sentence views from {words} words: learned P@1 {row['learned_p1']:.3f}")


def ranker_groups(analysed: list[TweetAnalysis]) -> list[tuple[np.ndarray, np.ndarray]]:
    return [
        (t.analysis.pairs, np.array([c.id in t.query.gold for c in t.analysis.candidates]))
        for t in analysed if t.analysis.pairs is not None
    ]


def choose_ranker(
    train: list[TweetAnalysis], dev: list[TweetAnalysis], test: list[TweetAnalysis], log: RunLog, console: Console
) -> LinearRanker:
    """Fit the re-ranker on train for each C, keep the one with the best dev MAP@5, and log
    every ranking's metrics on train, dev and test (test: reporting only)."""
    groups = ranker_groups(train)
    best: tuple[float, float, LinearRanker] | None = None
    for c in RANKER_C:
        ranker = fit_ranker(groups, c=c, trained_on=f"CheckThat-2020 train tweets ({len(train)}), C={c}")
        dev_metrics = retrieval_metrics([(ranked_ids(t.analysis, "learned", ranker), t.query.gold) for t in dev])
        log.write("ranker_c", key=f"c-{c}", c=c, **{f"dev_{k}": v for k, v in dev_metrics.items()})
        if best is None or dev_metrics["map5"] > best[0]:
            best = (dev_metrics["map5"], c, ranker)
    assert best is not None
    _, c, ranker = best
    for split, analysed in (("train", train), ("dev", dev), ("test", test)):
        for ranking in RANKINGS:
            metrics = retrieval_metrics([(ranked_ids(t.analysis, ranking, ranker), t.query.gold) for t in analysed])
            log.write("ranking", key=f"{split}-{ranking}", split=split, ranking=ranking, c=c, **metrics)
    log.write("ranker", key="ranker", c=c, coef=dict(zip(ranker.to_dict()["features"], ranker.coef)))  # type: ignore[arg-type]
    console.print(f"re-ranker: C={c} chosen on the CheckThat dev tweets")
    return ranker


def check_tweets(guard: ClaimGuard, queries: list[TweetQuery], split: str, log: RunLog, console: Console) -> None:
    """The final guard on tweets through `check_many`: one "tweet" row each."""
    done = log.done_keys("tweet")
    todo = [q for q in queries if q.qid not in done]
    for start in range(0, len(todo), 64):
        batch = todo[start : start + 64]
        for q, verdict in zip(batch, guard.check_many([q.text for q in batch])):
            ranked = [c.claim_id for c in verdict.candidates]
            log.write("tweet", key=q.qid, split=split, gold=sorted(q.gold), flagged=verdict.flagged,
                      score=verdict.score, candidates=ranked, ap5=average_precision_at(ranked, q.gold, TOP),
                      p1=bool(ranked) and ranked[0] in q.gold, rr=reciprocal_rank(ranked, q.gold))
    console.print(f"CheckThat {split}: {len(queries)} tweets checked")
