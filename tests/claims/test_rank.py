"""Candidate ranking: fusion, the learned re-ranker, and the shared task's measures."""

import numpy as np
import pytest

from misguard.claims import RANK_FEATURES, LinearRanker, average_precision_at, fit_ranker, reciprocal_rank
from misguard.claims._rank import rank_scores
from misguard.errors import ConfigError

COL = {name: i for i, name in enumerate(RANK_FEATURES)}


def _pairs(**columns) -> np.ndarray:
    n = len(next(iter(columns.values())))
    x = np.zeros((n, len(RANK_FEATURES)))
    for name, values in columns.items():
        x[:, COL[name]] = values
    return x


def test_rrf_lets_a_lexical_first_place_beat_a_dense_second():
    # dense order: a, b, c; BM25 finds only c, first.
    pairs = _pairs(dense_rr=[1.0, 0.5, 1 / 3], lex_rr=[0.0, 0.0, 1.0], body=[0.9, 0.8, 0.7], seg=[0.9, 0.8, 0.7])
    assert list(np.argsort(-rank_scores(pairs, "dense", None))) == [0, 1, 2]
    fused = rank_scores(pairs, "rrf", None)
    assert fused[2] > fused[1] and fused[0] > fused[1]


def test_learned_ranker_learns_which_pair_feature_marks_the_right_claim():
    rng = np.random.default_rng(0)
    groups = []
    for _ in range(60):
        n = 8
        right = np.zeros(n, dtype=bool)
        right[rng.integers(n)] = True
        # cosines are noise here; word coverage marks the right claim
        pairs = _pairs(body=rng.random(n), seg=rng.random(n), coverage=np.where(right, 0.8, 0.2) + 0.1 * rng.random(n),
                       dense_rr=1 / (1 + rng.permutation(n)))
        groups.append((pairs, right))
    ranker = fit_ranker(groups[:40], c=1.0, trained_on="test")
    hits = [int(np.argmax(ranker.scores(p))) == int(np.flatnonzero(r)[0]) for p, r in groups[40:]]
    assert all(hits)
    assert ranker.coef[COL["coverage"]] > abs(ranker.coef[COL["body"]])
    again = LinearRanker.from_dict(ranker.to_dict())
    assert np.allclose(again.scores(groups[0][0]), ranker.scores(groups[0][0]))


def test_ranker_errors_are_clear():
    with pytest.raises(ConfigError, match="needs a decision with a fitted ranker"):
        rank_scores(_pairs(body=[1.0]), "learned", None)
    with pytest.raises(ConfigError, match="unknown ranking"):
        rank_scores(_pairs(body=[1.0]), "bm25", None)
    with pytest.raises(ConfigError, match="other pair features"):
        LinearRanker.from_dict({"features": ["body"], "mean": [0], "scale": [1], "coef": [1], "intercept": 0})
    with pytest.raises(ConfigError, match="nothing to fit"):
        fit_ranker([(_pairs(body=[0.1, 0.2]), np.array([False, False]))], c=1.0, trained_on="x")


def test_map_at_5_and_mrr_as_the_shared_task_counts_them():
    assert average_precision_at(["a", "b", "c"], {"a"}) == 1.0
    assert average_precision_at(["x", "a"], {"a"}) == 0.5
    assert average_precision_at(["x", "y", "z", "w", "v", "a"], {"a"}) == 0.0  # beyond the top 5
    assert average_precision_at(["a", "x", "b"], {"a", "b"}) == pytest.approx((1 + 2 / 3) / 2)
    assert reciprocal_rank(["x", "y", "a"], {"a"}) == pytest.approx(1 / 3)
    assert reciprocal_rank(["x"], {"a"}) == 0.0


def test_pairs_without_ranks_the_kept_candidates_as_if_alone():
    from misguard.claims._rank import RANK_FEATURES, pairs_without

    col = {n: i for i, n in enumerate(RANK_FEATURES)}
    pairs = np.zeros((3, len(RANK_FEATURES)))
    pairs[:, col["body"]] = pairs[:, col["seg"]] = [0.9, 0.8, 0.7]
    pairs[:, col["dense_rr"]] = [1.0, 0.5, 1 / 3]
    pairs[:, col["lex_rr"]] = [1.0, 0.0, 0.5]
    pairs[:, col["lex_rel"]] = [1.0, 0.0, 0.4]
    sub = pairs_without(pairs, np.array([False, True, True]))
    assert sub[:, col["dense_rr"]].tolist() == [1.0, 0.5]
    assert sub[:, col["lex_rr"]].tolist() == [0.0, 1.0] and sub[:, col["lex_rel"]].tolist() == [0.0, 1.0]
    assert sub[:, col["body"]].tolist() == [0.8, 0.7]
