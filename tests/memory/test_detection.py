"""Credibility (eq. 1), the contrastive encoder with fusion (eq. 4), the baselines."""

from __future__ import annotations

import numpy as np
import pytest

from misguard.memory import (
    DETECTORS,
    MemoryGuard,
    RecordArrays,
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


def _labelled_world(seed: int = 0):
    """A store-like world as RecordArrays with labels and a 60/20/20 split by record."""
    f, emb, actions, conf, agents, order, labels = _world(seed, n_sit=12, per=40, n_poison=48)
    recs = []
    for i in range(len(emb)):
        recs.append(MemoryRecord(id=f"r{i}", state="s", context="task=t", action=f"a{actions[i]}",
                                 provenance=Provenance(agent=f"ag{agents[i]}", time=float(order[i]), channel="direct"),
                                 confidence=float(conf[i]), embedding=emb[i].tolist()))
    arr = RecordArrays.from_records(recs)
    idx = np.random.default_rng(seed).permutation(len(emb))
    return f, arr, labels, idx[: int(0.6 * len(idx))], idx[int(0.6 * len(idx)): int(0.8 * len(idx))], idx[int(0.8 * len(idx)):]


@pytest.mark.parametrize("name", DETECTORS.names())
def test_every_registered_detector_fits_thresholds_and_scores(name: str) -> None:
    """The registry walk: each detector runs behind MemoryGuard with the same protocol."""
    pytest.importorskip("torch", reason="needs the 'memory' extra")
    f, arr, labels, train, val, test = _labelled_world()
    entry = DETECTORS.get(name)
    assert isinstance(entry.metadata.get("supervised"), bool) and entry.metadata.get("label")
    det = DETECTORS.build(name, seed=0, encoder_steps=30, gat_steps=60, blocks=f.slices())
    guard = MemoryGuard(det, key_block=f.slices()["state"])
    scores = guard.fit(arr, labels, train, val)
    assert scores.p_poison.shape == (len(labels),) and np.isfinite(scores.p_poison).all()
    assert np.isfinite(guard.threshold) and det.describe()["name"] == name
    # Confident contradictions of the store are what the relational detectors must catch;
    # every detector must at least score without crashing and be above chance on this toy.
    if name in ("proposed", "credibility", "gat"):
        assert auc(scores.p_poison[test], labels[test]) > 0.9


def test_unknown_detector_names_the_known_ones() -> None:
    from misguard.errors import ConfigError

    with pytest.raises(ConfigError, match="credibility"):
        DETECTORS.build("nope")


def test_residual_scores_flag_off_cluster_records() -> None:
    emb = np.array([[1, 0], [1, 0.05], [1, -0.05], [0, 1]], dtype=np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    nbr = np.array([[1, 2], [0, 2], [0, 1], [0, 1]])
    s = residual_scores(emb, nbr)
    assert s.argmax() == 3
