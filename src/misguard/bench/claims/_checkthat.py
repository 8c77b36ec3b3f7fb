"""CheckThat! 2020 task 2 in `bench claims`: tweets vs 10,390 Snopes verified claims.

- social-media normalisation, step by step: P@1 / MRR / MAP@5 on the dev tweets with each
  step left out (and with the whole attribution tail dropped), so the default steps are
  chosen without the test split;
- re-ranker (fitted by `misguard.claims.fit_ranker_on_tweets` on the train tweets, C chosen
  on the dev tweets): the dense, lexical, RRF and learned rankings compared on train (in
  sample for the ranker), dev (C chosen there) and test (reporting only);
- test: the final guard (ranker + cross-source decision) checks the test tweets through
  `ClaimGuard.check_many`; MAP@5, P@1 and MRR are computed from the verdicts'
  `candidates`, "flagged" from their flags.
"""

from __future__ import annotations

from rich.console import Console

from ...claims import (
    RANKINGS,
    SOCIAL_STEPS,
    ClaimGuard,
    ClaimStore,
    RankerFit,
    ThresholdDecision,
    TweetQuery,
    analyse_tweets,
    average_precision_at,
    reciprocal_rank,
    retrieval_metrics,
)
from ...claims._fit import TOP, ranked_ids
from ...claims._shift import LanguageShift
from ...claims._social import DEFAULT_STEPS
from ...runlog import RunLog


def log_rankings(store: ClaimStore, shift: LanguageShift | None, fitted: RankerFit, test: list[TweetQuery], log: RunLog,
                 console: Console) -> None:
    """The re-ranker's dev MAP@5 for each C, and every ranking's metrics on train, dev and
    test (test: reporting only; analysed here, the fit never reads it)."""
    for c, metrics in fitted.dev_metrics.items():
        log.write("ranker_c", key=f"c-{c}", c=c, **{f"dev_{k}": v for k, v in metrics.items()})
    fusion = ClaimGuard(store, decision=ThresholdDecision(1.0, shift=shift), ranking="rrf")
    splits = (("train", fitted.train), ("dev", fitted.dev), ("test", analyse_tweets(fusion, test)))
    for split, analysed in splits:
        for ranking in RANKINGS:
            metrics = retrieval_metrics([(ranked_ids(t.analysis, ranking, fitted.ranker), t.query.gold) for t in analysed])
            log.write("ranking", key=f"{split}-{ranking}", split=split, ranking=ranking, c=fitted.c, **metrics)
    ranker = fitted.ranker
    log.write("ranker", key="ranker", c=fitted.c, coef=dict(zip(ranker.to_dict()["features"], ranker.coef)))  # type: ignore[arg-type]
    console.print(f"rankings on the CheckThat train, dev and test tweets logged (re-ranker C={fitted.c})")


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


#: Thresholds tried for `ClaimGuard(sentence_words=...)` (0 = every sentence, the earlier guard).
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
