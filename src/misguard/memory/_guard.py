"""`MemoryGuard`: score a store's records (credibility, eq. 1, plus any registered detector)
and repair it (eq. 5 along propagation paths, or plain isolation)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import ConfigError
from ..types import MemoryRecord
from ._baselines import best_f1_threshold
from ._credibility import CredibilityResult, credibility, state_key
from ._detectors import DetectorInputs, MemoryDetector, build_inputs, metadata_matrix
from ._repair import RepairPlan, apply_repair, plan_repair
from ._store import MemoryStore

RepairMode = Literal["propagation", "isolate"]


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
    reward: np.ndarray | None = None
    channels: list[str] | None = None

    @classmethod
    def from_records(cls, records: Sequence[MemoryRecord], group_of: Callable[[MemoryRecord], str] = task_of,
                     emb: np.ndarray | None = None) -> RecordArrays:
        """`emb`: the records' embeddings as a (n, d) array when they come without them
        (`MemoryStore.records_with_embeddings`)."""
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
            emb=np.array([r.embedding for r in records], dtype=np.float32) if emb is None else np.asarray(emb, dtype=np.float32),
            actions=actions,
            action_names=action_names,
            confidence=np.array([nan if r.confidence is None else r.confidence for r in records], dtype=np.float32),
            success=np.array([nan if r.success is None else r.success for r in records], dtype=np.float32),
            agents=agents,
            groups=groups,
            order=np.array([r.provenance.time for r in records], dtype=np.float64),
            reward=np.array([nan if r.reward is None else r.reward for r in records], dtype=np.float32),
            channels=[r.provenance.channel for r in records],
        )

    def metadata(self) -> np.ndarray:
        n = len(self.ids)
        reward = self.reward if self.reward is not None else np.full(n, np.nan, np.float32)
        return metadata_matrix(self.confidence, self.success, reward, self.channels or ["direct"] * n)


@dataclass
class GuardScores:
    p_poison: np.ndarray
    cred: CredibilityResult
    features: np.ndarray  # relational features of the evidence graph
    inputs: DetectorInputs | None = None


class MemoryGuard:
    """Detection (credibility, or any `MemoryDetector` built on it) and repair.

    `repair="propagation"` plans eq. 5 along reuse paths (isolate / reconstruct / resolve by
    depth); `repair="isolate"` quarantines what is flagged and nothing else.
    """

    def __init__(self, detector: MemoryDetector | None = None, threshold: float = 0.5, *, k: int = 16,
                 key_block: slice | None = None, bucket_bits: int = 0, causal: bool = True,
                 repair: RepairMode = "propagation", upstream: bool = True) -> None:
        """`key_block`: the embedding slice evidence neighbours are searched on; for
        `HashedRecordFeaturizer` embeddings pass its state block (`slices()["state"]`).
        `upstream`: propagation repair also retraces reuse paths upstream (`plan_repair`):
        the contested sources a repaired record reused are repaired too. On by default: it
        is what brings poison's reach to the paper's target (docs/memory.md)."""
        if repair not in ("propagation", "isolate"):
            raise ConfigError(f"repair must be 'propagation' or 'isolate', got {repair!r}")
        self.detector = detector
        self.threshold = threshold
        self.k = k
        self.key_block = key_block
        self.bucket_bits = bucket_bits
        self.causal = causal
        self.repair = repair
        self.upstream = upstream

    def evidence(self, arr: RecordArrays) -> DetectorInputs:
        """Credibility (eq. 1) and everything a detector may see, computed once."""
        key = None if self.key_block is None else state_key(arr.emb, self.key_block)
        cred = credibility(arr.emb, arr.actions, arr.confidence, arr.agents, arr.groups, arr.order, k=self.k,
                           key=key, success=arr.success, bucket_bits=self.bucket_bits, causal=self.causal)
        return build_inputs(cred, arr.emb, arr.metadata(), arr.actions, arr.confidence, arr.success)

    def score(self, arr: RecordArrays, inputs: DetectorInputs | None = None) -> GuardScores:
        inputs = inputs or self.evidence(arr)
        if self.detector is None:
            p = (1.0 - inputs.cred.credibility).astype(np.float32)
        else:
            p = np.asarray(self.detector.score(inputs), dtype=np.float32)
        return GuardScores(p, inputs.cred, inputs.relational, inputs)

    def fit(self, arr: RecordArrays, labels: np.ndarray, train: np.ndarray, val: np.ndarray,
            inputs: DetectorInputs | None = None) -> GuardScores:
        """Fit the detector on `train` rows, choose the threshold on `val` rows by best F1.

        `labels`: 1 poison, 0 benign, anything else is ignored. Returns the scores of all rows.
        """
        inputs = inputs or self.evidence(arr)
        if self.detector is not None:
            self.detector.fit(inputs, labels, train, val)
        scores = self.score(arr, inputs)
        val = val[(labels[val] == 0) | (labels[val] == 1)]
        self.threshold, _ = best_f1_threshold(scores.p_poison[val], labels[val])
        return scores

    def plan(self, arr: RecordArrays, scores: GuardScores, src: np.ndarray, dst: np.ndarray,
             candidates: np.ndarray | None = None) -> RepairPlan:
        """The repair of the records `candidates` marks (all when None), in the guard's mode."""
        if self.repair == "isolate":
            flagged = scores.p_poison >= self.threshold
            if candidates is not None:
                flagged &= candidates
            n = len(flagged)
            empty = np.zeros(0, dtype=np.int64)
            plan = RepairPlan(priority=scores.p_poison.astype(np.float32), depth=np.zeros(n, np.int64),
                              quarantine=np.flatnonzero(flagged), rewrite=empty, rewrite_action=empty,
                              rewrite_confidence=np.zeros(0, np.float32), dilute=empty,
                              dilute_confidence=np.zeros(0, np.float32), prune=empty)
            plan.counts = {"flagged": int(flagged.sum()), "quarantine": int(flagged.sum())}
            return plan
        return plan_repair(
            scores.p_poison, self.threshold, scores.cred.conflict, scores.cred.consensus,
            scores.cred.consensus_share, arr.actions, arr.confidence, src, dst, candidates=candidates,
            evidence=scores.cred.graph, upstream=self.upstream,
        )

    def guard_store(self, store: MemoryStore, *, since: float | None = None,
                    group_of: Callable[[MemoryRecord], str] = task_of,
                    scope: Callable[[MemoryRecord], bool] | None = None,
                    ) -> tuple[RecordArrays, GuardScores, RepairPlan, list[int]]:
        """Score every active record of `store`, plan the repair and apply it (audited).

        `since`: only records written at or after this time may be repaired (the sliding
        window); older ones still serve as evidence. `scope`: only these records are
        considered at all (one task of a store shared by several).
        """
        records, emb = store.records_with_embeddings("active")
        keep = [i for i, r in enumerate(records) if scope is None or scope(r)]
        arr = RecordArrays.from_records([records[i] for i in keep], group_of, emb=emb[keep] if len(emb) else emb)
        scores = self.score(arr)
        index = {rid: i for i, rid in enumerate(arr.ids)}
        mem_edges = [e for e in store.edges() if e.dst_kind == "memory" and e.src in index and e.dst in index]
        src = np.array([index[e.src] for e in mem_edges], dtype=np.int64)
        dst = np.array([index[e.dst] for e in mem_edges], dtype=np.int64)
        candidates = None if since is None else arr.order >= since
        plan = self.plan(arr, scores, src, dst, candidates)
        seqs = apply_repair(store, plan, arr.ids, arr.action_names, [e.id for e in mem_edges])
        return arr, scores, plan, seqs
