"""`SharedMemory`: what agents use. Writes embed and store records; every retrieval is
recorded as reuse edges of the propagation graph (memory -> memory or memory -> decision).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

import numpy as np

from ..types import MemoryRecord
from ._features import HashedRecordFeaturizer, record_text
from ._store import DstKind, MemoryStore

EmbedFn = Callable[[Sequence[str]], np.ndarray]


class SharedMemory:
    """A store plus an in-process vector index over its *active* records.

    `embed_texts` (e.g. `get_embedder("e5").embed`) embeds `record_text(record)`; without
    it the deterministic `HashedRecordFeaturizer` is used.
    """

    def __init__(self, store: MemoryStore, embed_texts: EmbedFn | None = None, featurizer: HashedRecordFeaturizer | None = None) -> None:
        self.store = store
        self._embed_texts = embed_texts
        self.featurizer = featurizer or HashedRecordFeaturizer()
        self._ids: list[str] = []
        self._records: list[MemoryRecord] = []
        self._matrix: np.ndarray | None = None
        self.refresh()

    def _embed(self, records: Sequence[MemoryRecord]) -> np.ndarray:
        if self._embed_texts is not None:
            return np.asarray(self._embed_texts([record_text(r) for r in records]), dtype=np.float32)
        return self.featurizer.embed(records)

    def _embed_query(self, state: str, context: str) -> np.ndarray:
        if self._embed_texts is not None:
            text = f"state: {state} | context: {context}"
            return np.asarray(self._embed_texts([text]), dtype=np.float32)[0]
        return self.featurizer.embed_query(state, context)

    def refresh(self) -> None:
        """Reload the index from the store (after repair changed statuses or versions)."""
        self._records = [r for r in self.store.iter_records("active") if r.embedding is not None]
        self._ids = [r.id for r in self._records]
        self._matrix = np.array([r.embedding for r in self._records], dtype=np.float32) if self._records else None

    def write(self, records: Sequence[MemoryRecord], derived_from: Sequence[Sequence[str]] = ()) -> list[MemoryRecord]:
        """Embed (when missing) and store records; `derived_from[i]` are the memories record i reused."""
        missing = [r for r in records if r.embedding is None]
        if missing:
            for r, e in zip(missing, self._embed(missing)):
                r.embedding = e.tolist()
        self.store.add_many(list(records))
        edges = [(src, r.id, "memory", r.provenance.agent) for r, srcs in zip(records, derived_from) for src in srcs]
        self.store.record_reuses(edges)
        self._records.extend(records)
        self._ids.extend(r.id for r in records)
        new = np.array([r.embedding for r in records], dtype=np.float32)
        self._matrix = new if self._matrix is None else np.vstack([self._matrix, new])
        return list(records)

    def retrieve(self, state: str, context: str, agent: str, k: int = 5, *, target: str | None = None, kind: DstKind = "decision") -> list[tuple[MemoryRecord, float]]:
        """Top-k active memories for a situation; records `memory -> target` reuse edges.

        `target` names the decision (default: a fresh id) or memory the retrieval feeds.
        """
        if self._matrix is None or not len(self._ids):
            return []
        sims = self._matrix @ self._embed_query(state, context)
        top = np.argsort(-sims)[:k]
        target = target or f"decision-{uuid.uuid4().hex}"
        self.store.record_reuses([(self._ids[i], target, kind, agent) for i in top])
        return [(self._records[i], float(sims[i])) for i in top]

    @staticmethod
    def vote(hits: Sequence[tuple[MemoryRecord, float]]) -> tuple[str, float]:
        """The action the retrieved memories support: similarity x confidence weighted vote."""
        scores: dict[str, float] = {}
        for rec, sim in hits:
            conf = 0.5 if rec.confidence is None else rec.confidence
            scores[rec.action] = scores.get(rec.action, 0.0) + max(sim, 0.0) * conf
        if not scores:
            return "", 0.0
        action = max(scores, key=scores.__getitem__)
        total = sum(scores.values())
        return action, scores[action] / total if total else 0.0
