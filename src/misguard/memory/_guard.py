"""`MemoryGuard`: score a store's records (credibility + encoder, eq. 1 and 4) and repair it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..types import MemoryRecord
from ._credibility import CredibilityResult, credibility, relational_features, state_key
from ._encoder import ContrastiveDetector
from ._repair import RepairPlan, apply_repair, plan_repair
from ._store import MemoryStore


def task_of(record: MemoryRecord) -> str:
    """Default group key: the `task=...` token of the context (memory is compared within a task)."""
    for tok in record.context.replace(";", " ").split():
        if tok.startswith("task="):
            return tok
    return "task=*"


@dataclass
class RecordArrays:
    """Column view of records for vectorised scoring."""

    ids: list[str]
    emb: np.ndarray
    actions: np.ndarray
    action_names: list[str]
    confidence: np.ndarray
    success: np.ndarray
    agents: np.ndarray
    groups: np.ndarray
    order: np.ndarray

    @classmethod
    def from_records(cls, records: Sequence[MemoryRecord], group_of: Callable[[MemoryRecord], str] = task_of) -> RecordArrays:
        def codes(values: list[str]) -> tuple[np.ndarray, list[str]]:
            names = sorted(set(values))
            index = {v: i for i, v in enumerate(names)}
            return np.array([index[v] for v in values], dtype=np.int64), names

        actions, action_names = codes([r.action for r in records])
        agents, _ = codes([r.provenance.agent for r in records])
        groups, _ = codes([group_of(r) for r in records])
        nan = float("nan")
        return cls(
            ids=[r.id for r in records],
            emb=np.array([r.embedding for r in records], dtype=np.float32),
            actions=actions,
            action_names=action_names,
            confidence=np.array([nan if r.confidence is None else r.confidence for r in records], dtype=np.float32),
            success=np.array([nan if r.success is None else r.success for r in records], dtype=np.float32),
            agents=agents,
            groups=groups,
            order=np.array([r.provenance.time for r in records], dtype=np.float64),
        )


@dataclass
class GuardScores:
    p_poison: np.ndarray
    cred: CredibilityResult
    features: np.ndarray


class MemoryGuard:
    """Detection (credibility, optionally fused with a trained encoder) and repair."""

    def __init__(self, detector: ContrastiveDetector | None = None, threshold: float = 0.5, *, k: int = 16,
                 key_block: slice | None = None, bucket_bits: int = 0, causal: bool = True) -> None:
        """`key_block`: the embedding slice evidence neighbours are searched on; for
        `HashedRecordFeaturizer` embeddings pass its state block (`slices()["state"]`)."""
        self.detector = detector
        self.threshold = threshold
        self.k = k
        self.key_block = key_block
        self.bucket_bits = bucket_bits
        self.causal = causal

    def score(self, arr: RecordArrays) -> GuardScores:
        key = None if self.key_block is None else state_key(arr.emb, self.key_block)
        cred = credibility(arr.emb, arr.actions, arr.confidence, arr.agents, arr.groups, arr.order, k=self.k,
                           key=key, success=arr.success, bucket_bits=self.bucket_bits, causal=self.causal)
        feats = relational_features(cred, arr.confidence, arr.success)
        if self.detector is None:
            p = (1.0 - cred.credibility).astype(np.float32)
        else:
            p = self.detector.predict_proba(arr.emb, feats, cred.credibility)
        return GuardScores(p, cred, feats)

    def plan(self, arr: RecordArrays, scores: GuardScores, src: np.ndarray, dst: np.ndarray) -> RepairPlan:
        return plan_repair(
            scores.p_poison, self.threshold, scores.cred.conflict, scores.cred.consensus,
            scores.cred.consensus_share, arr.actions, arr.confidence, src, dst,
        )

    def guard_store(self, store: MemoryStore) -> tuple[RecordArrays, GuardScores, RepairPlan, list[int]]:
        """Score every active record of `store`, plan the repair and apply it (audited)."""
        records = [r for r in store.iter_records("active") if r.embedding is not None]
        arr = RecordArrays.from_records(records)
        scores = self.score(arr)
        index = {rid: i for i, rid in enumerate(arr.ids)}
        mem_edges = [e for e in store.edges() if e.dst_kind == "memory" and e.src in index and e.dst in index]
        src = np.array([index[e.src] for e in mem_edges], dtype=np.int64)
        dst = np.array([index[e.dst] for e in mem_edges], dtype=np.int64)
        plan = self.plan(arr, scores, src, dst)
        seqs = apply_repair(store, plan, arr.ids, arr.action_names, [e.id for e in mem_edges])
        return arr, scores, plan, seqs
