"""Credibility (eq. 1), the contrastive encoder with fusion (eq. 4), the baselines."""

from __future__ import annotations

import numpy as np
import pytest

from misguard.memory import (
    BASELINES,
    ContrastiveDetector,
    EncoderConfig,
    HashedRecordFeaturizer,
    auc,
    best_f1_threshold,
    credibility,
    knn_within_groups,
    relational_features,
    residual_scores,
    state_key,
)
from misguard.types import MemoryRecord, Provenance

pytest.importorskip("sklearn", reason="needs the 'memory' extra")


def _world(seed: int = 0, n_sit: int = 12, per: int = 30, n_poison: int = 24):
    """Benign records (situation s -> action s % 5) and camouflaged poison with shifted actions."""
    rng = np.random.default_rng(seed)
    f = HashedRecordFeaturizer()
    recs, labels = [], []
    for s in range(n_sit):
        for j in range(per):
            recs.append(MemoryRecord(state=f"obs=s{s};x={s % 3}", context=f"task=t;phrase=p{j % 4}", action=f"a{s % 5}",
                                     tags=["t", f"n{j % 5}"], provenance=Provenance(agent=f"ag{j % 6}", time=float(j)),
                                     confidence=float(rng.uniform(0.6, 0.95))))
            labels.append(0)
    for i in range(n_poison):
        s = i % n_sit
        recs.append(MemoryRecord(state=f"obs=s{s};x={s % 3}", context="task=t", action=f"a{(s + 1) % 5}", tags=["t"],
                                 provenance=Provenance(agent=f"ag{i % 6}", time=float(per + i)), confidence=0.97))
        labels.append(1)
    emb = f.embed(recs)
    actions = np.array([int(r.action[1:]) for r in recs])
    conf = np.array([r.confidence for r in recs], dtype=np.float32)
    agents = np.array([int(r.provenance.agent[2:]) for r in recs])
    order = np.array([r.provenance.time for r in recs])
    return f, emb, actions, conf, agents, order, np.array(labels)


def test_featurizer_is_deterministic_normalised_and_blocked() -> None:
    f = HashedRecordFeaturizer()
    r = MemoryRecord(state="pos=1,2;goal=3,3", context="task=x", action="N", tags=["nav"], provenance=Provenance(agent="a"))
    a, b = f.embed([r]), HashedRecordFeaturizer().embed([r])
    assert np.allclose(a, b) and np.isclose(np.linalg.norm(a), 1.0) and a.shape == (1, f.dim)
    other = r.model_copy(update={"action": "S"})
    diff = np.flatnonzero(np.abs(f.embed([other])[0] - a[0] * np.linalg.norm(f.embed([other])[0])) > 1e-6)
    sl = f.slices()["action"]
    assert diff.size and diff.min() >= sl.start and diff.max() < sl.stop  # only the action block moved


def test_knn_excludes_the_same_agent_and_other_groups() -> None:
    emb = np.eye(4, dtype=np.float32)[[0, 0, 0, 1, 1, 1]]
    nbr, _ = knn_within_groups(emb, np.array([0, 0, 0, 1, 1, 1]), np.array([0, 0, 1, 0, 1, 1]), k=2)
    assert set(nbr[0][nbr[0] >= 0]) == {2}
    assert set(nbr[3][nbr[3] >= 0]) == {4, 5}


def test_credibility_penalises_confident_contradiction() -> None:
    f, emb, actions, conf, agents, order, labels = _world()
    res = credibility(emb, actions, conf, agents, np.zeros(len(emb), int), order, key=state_key(emb, f.slices()["state"]))
    assert res.conflict[labels == 1].mean() > 0.5 > 0.2 > res.conflict[labels == 0].mean()
    assert auc(1 - res.credibility, labels) > 0.9
    assert (res.consensus[labels == 1] != actions[labels == 1]).mean() > 0.9  # evidence points elsewhere
    assert np.allclose(res.graph.attention.sum(axis=1), 1.0, atol=1e-5)


def test_contrastive_detector_fuses_with_alpha() -> None:
    f, emb, actions, conf, agents, order, labels = _world()
    res = credibility(emb, actions, conf, agents, np.zeros(len(emb), int), order, key=state_key(emb, f.slices()["state"]))
    feats = relational_features(res, conf, np.full(len(emb), np.nan, np.float32))
    det = ContrastiveDetector(EncoderConfig(steps=40, batch=64, hard_negatives=16, head_steps=100), blocks=f.slices())
    train = np.arange(0, len(emb), 2)
    det.fit(emb, feats, labels, res.credibility, res.graph.neighbors, res.graph.agrees, index=train)
    assert len(det.history) == 40 and np.isfinite(det.history).all()
    head = det.head_proba(emb, feats)
    fused = det.predict_proba(emb, feats, res.credibility)
    assert np.allclose(fused, 0.6 * (1 - res.credibility) + 0.4 * head, atol=1e-5)
    test = np.arange(1, len(emb), 2)
    assert auc(fused[test], labels[test]) > 0.9


def test_best_f1_threshold() -> None:
    scores = np.array([0.1, 0.2, 0.3, 0.8, 0.9])
    thr, f1 = best_f1_threshold(scores, np.array([0, 0, 0, 1, 1]))
    assert thr == pytest.approx(0.8) and f1 == pytest.approx(1.0)


@pytest.mark.parametrize("name", sorted(BASELINES.names()))
def test_baseline_registry_walk(name: str) -> None:
    rng = np.random.default_rng(0)
    train = rng.standard_normal((300, 8)).astype(np.float32)
    val = np.vstack([rng.standard_normal((90, 8)), rng.standard_normal((10, 8)) * 0.2 + 4]).astype(np.float32)
    val_labels = np.r_[np.zeros(90), np.ones(10)].astype(int)
    det = BASELINES.build(name, seed=0).fit(train, val, val_labels)
    assert det.chosen in det.grid and det.describe()["threshold"] == det.threshold
    assert auc(det.score(val), val_labels) > 0.9  # plain outliers are what these detectors catch


def test_residual_scores_flag_off_cluster_records() -> None:
    emb = np.array([[1, 0], [1, 0.05], [1, -0.05], [0, 1]], dtype=np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    nbr = np.array([[1, 2], [0, 2], [0, 1], [0, 1]])
    s = residual_scores(emb, nbr)
    assert s.argmax() == 3
