"""Candidate ranking: dense and lexical retrieval fused, and a learned re-ranker over pair
features of (text, candidate claim).

Three rankings, all over the same candidates (the union of each segment's dense top-k and
the text's BM25 top-k):
- "dense": the original formula, mean of the whole-text and best-segment cosines minus a
  share of the claim's hubness;
- "lexical": BM25 order (the dense order after the BM25 hits; a baseline);
- "rrf": reciprocal-rank fusion of that dense ranking and the BM25 ranking (k = 60, the
  constant of Cormack et al. 2009, not tuned here);
- "learned": a logistic regression over `RANK_FEATURES`, trained on pairs (right claim vs.
  the other candidates of the same text) by `fit_ranker_on_tweets` (`misguard claims
  fit-decision`) and shipped in the decision file.

Ranking may use what depends on the store (hubness, ranks, BM25): it only orders the
candidates. The flag decision reads pair features of the chosen candidate only, so a
verdict's score does not move when unrelated claims are added.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError

RANKINGS = ("dense", "lexical", "rrf", "learned")
#: Reciprocal-rank fusion constant (Cormack, Clarke and Buettcher 2009).
RRF_K = 60
#: The dense formula's weights (chosen on the dev set's false queries; kept as
#: the "dense" baseline and as one feature of the learned ranker).
BODY_WEIGHT = 0.5
HUB_PENALTY = 0.25

RANK_FEATURES: tuple[str, ...] = (
    "body",  # cosine of the whole text to the claim
    "seg",  # best segment cosine to the claim
    "hub",  # the claim's hubness in the store
    "dense_rr",  # 1 / (1 + rank) in the dense formula's order
    "lex_rr",  # 1 / (1 + rank) in the BM25 order (0 when BM25 did not retrieve it)
    "lex_rel",  # BM25 score / the text's best BM25 score (0 when not retrieved)
    "coverage",  # share of the claim's content words found in the text
    "precision",  # share of the text's content words found in the claim
    "number_hit",  # a number of the claim appears in the text
    "number_clash",  # both state numbers and none is shared
    "names",  # share of the claim's capitalised words found in the text
)


def dense_scores(body: np.ndarray, seg: np.ndarray, hub: np.ndarray) -> np.ndarray:
    return BODY_WEIGHT * body + (1 - BODY_WEIGHT) * seg - HUB_PENALTY * hub


def reciprocal_ranks(scores: np.ndarray) -> np.ndarray:
    """1 / (1 + rank) of each entry in descending order of `scores` (rank 0 = best)."""
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[order] = np.arange(len(scores))
    return 1.0 / (1.0 + ranks)


@dataclass
class LinearRanker:
    """A standardised logistic model over `RANK_FEATURES`; higher = more likely the claim
    the text repeats."""

    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    trained_on: str = ""

    def scores(self, pairs: np.ndarray) -> np.ndarray:
        z = (pairs - np.asarray(self.mean)) / np.asarray(self.scale)
        return z @ np.asarray(self.coef) + self.intercept

    def to_dict(self) -> dict[str, object]:
        return {"features": list(RANK_FEATURES), "mean": self.mean, "scale": self.scale, "coef": self.coef,
                "intercept": self.intercept, "trained_on": self.trained_on}

    @classmethod
    def from_dict(cls, data: dict) -> LinearRanker:
        if list(data.get("features", [])) != list(RANK_FEATURES):
            raise ConfigError("the decision's ranker was fitted on other pair features; refit it with misguard claims fit-decision")
        return cls(mean=list(map(float, data["mean"])), scale=list(map(float, data["scale"])),
                   coef=list(map(float, data["coef"])), intercept=float(data["intercept"]),
                   trained_on=str(data.get("trained_on", "")))


def rank_scores(pairs: np.ndarray, ranking: str, ranker: LinearRanker | None) -> np.ndarray:
    """Scores to order candidates by (higher first) under one of `RANKINGS`."""
    col = {name: i for i, name in enumerate(RANK_FEATURES)}
    if ranking == "dense":
        return dense_scores(pairs[:, col["body"]], pairs[:, col["seg"]], pairs[:, col["hub"]])
    if ranking == "lexical":
        return pairs[:, col["lex_rr"]] + 1e-3 * pairs[:, col["dense_rr"]]
    if ranking == "rrf":
        dense_rank = 1.0 / pairs[:, col["dense_rr"]] - 1.0
        lex = pairs[:, col["lex_rr"]]
        lex_part = np.where(lex > 0, 1.0 / (RRF_K + (1.0 / np.maximum(lex, 1e-12) - 1.0)), 0.0)
        return 1.0 / (RRF_K + dense_rank) + lex_part
    if ranking == "learned":
        if ranker is None:
            raise ConfigError("ranking 'learned' needs a decision with a fitted ranker (misguard claims fit-decision)")
        return ranker.scores(pairs)
    raise ConfigError(f"unknown ranking {ranking!r}; use one of {', '.join(RANKINGS)}")


def pairs_without(pairs: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Pair features of the kept candidates as if the others had never been retrieved
    (the text against a store without them): the rank and relative-score columns are
    recomputed over the kept ones; cosines and word overlaps do not change."""
    col = {name: i for i, name in enumerate(RANK_FEATURES)}
    sub = pairs[keep].copy()
    if not len(sub):
        return sub
    sub[:, col["dense_rr"]] = reciprocal_ranks(dense_scores(sub[:, col["body"]], sub[:, col["seg"]], sub[:, col["hub"]]))
    lexical = sub[:, col["lex_rr"]] > 0
    if lexical.any():
        sub[lexical, col["lex_rr"]] = reciprocal_ranks(sub[lexical, col["lex_rr"]])
        sub[lexical, col["lex_rel"]] /= sub[lexical, col["lex_rel"]].max()
    return sub


def fit_ranker(groups: list[tuple[np.ndarray, np.ndarray]], *, c: float, trained_on: str) -> LinearRanker:
    """Fit on texts' candidate lists: each group is (pairs (n, F), is_right (n,)). Only
    groups holding a right candidate teach anything; each group weighs the same."""
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        from ..errors import MissingExtraError

        raise MissingExtraError("scikit-learn", "claims", "fitting the re-ranker") from None
    xs, ys, ws = [], [], []
    for pairs, right in groups:
        if not right.any() or right.all():
            continue
        xs.append(pairs)
        ys.append(right)
        # Each text's positives and negatives weigh the same in total.
        ws.append(np.where(right, 0.5 / right.sum(), 0.5 / (~right).sum()))
    if not xs:
        raise ConfigError("no text with its right claim among the candidates: nothing to fit a ranker on")
    x, y, w = np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, max_iter=5000)
    model.fit((x - mean) / scale, y, sample_weight=w * len(xs))
    return LinearRanker(mean=mean.tolist(), scale=scale.tolist(), coef=model.coef_[0].tolist(),
                        intercept=float(model.intercept_[0]), trained_on=trained_on)


def average_precision_at(ranked: list[str], right: set[str] | frozenset[str], k: int = 5) -> float:
    """AP@k as the CheckThat! scorer computes it: precision at each hit in the top k,
    divided by min(k, number of right ids)."""
    hits, total = 0, 0.0
    for i, cid in enumerate(ranked[:k]):
        if cid in right:
            hits += 1
            total += hits / (i + 1)
    return total / max(1, min(k, len(right)))


def reciprocal_rank(ranked: list[str], right: set[str] | frozenset[str]) -> float:
    for i, cid in enumerate(ranked):
        if cid in right:
            return 1.0 / (i + 1)
    return 0.0


__all__ = [
    "RANKINGS", "RANK_FEATURES", "LinearRanker", "average_precision_at", "dense_scores", "fit_ranker", "pairs_without",
    "rank_scores", "reciprocal_rank", "reciprocal_ranks",
]
