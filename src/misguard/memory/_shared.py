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
#: One retrieval request: (state, context, agent, target id or None).
Query = tuple[str, str, str, "str | None"]


class SharedMemory:
    """A store plus an in-process vector index over its *active* records.

    `embed_texts` (e.g. `get_embedder("e5").embed`) embeds `record_text(record)`; without
    it the deterministic `HashedRecordFeaturizer` is used. `recency_halflife` (in the
    units of `provenance.time`) makes retrieval prefer recent memories, as agent memory
    systems do (relevance x recency): a memory's score is its cosine times
    (1 - w) + w * 0.5 ** (age / halflife), w = `recency_weight`, so recency reorders
    memories of about equal relevance without letting a fresh unrelated memory outrank an
    old exact match. None ranks by cosine only. `scope` keeps only the store's records it
    accepts in the index (several teams or tasks sharing one store).
    """

    def __init__(self, store: MemoryStore, embed_texts: EmbedFn | None = None, featurizer: HashedRecordFeaturizer | None = None,
                 *, recency_halflife: float | None = None, recency_weight: float = 0.15,
                 scope: Callable[[MemoryRecord], bool] | None = None) -> None:
        self.store = store
        self._embed_texts = embed_texts
        self.featurizer = featurizer or HashedRecordFeaturizer()
        self.recency_halflife = recency_halflife
        self.recency_weight = recency_weight
        self.scope = scope
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
        records = [r for r in self.store.iter_records("active")
                   if r.embedding is not None and (self.scope is None or self.scope(r))]
        self._records: list[MemoryRecord] = []
        self._ids: list[str] = []
        self._matrix: np.ndarray | None = None
        self._times = np.zeros(0, dtype=np.float64)
        self._n = 0
        if records:
            self._append(records)

    def _append(self, records: Sequence[MemoryRecord], vectors: np.ndarray | None = None) -> None:
        """Add to the index; the matrix grows by doubling so that writes stay amortised O(1).

        `vectors`: the records' embeddings as a (n, d) float32 array, when the caller has it.
        """
        new = np.array([r.embedding for r in records], dtype=np.float32) if vectors is None else vectors
        need = self._n + len(new)
        if self._matrix is None or need > len(self._matrix):
            cap = max(need, 2 * (0 if self._matrix is None else len(self._matrix)), 64)
            grown = np.zeros((cap, new.shape[1]), dtype=np.float32)
            times = np.zeros(cap, dtype=np.float64)
            if self._matrix is not None:
                grown[:self._n], times[:self._n] = self._matrix[:self._n], self._times[:self._n]
            self._matrix, self._times = grown, times
        self._matrix[self._n:need] = new
        self._times[self._n:need] = [r.provenance.time for r in records]
        self._records.extend(records)
        self._ids.extend(r.id for r in records)
        self._n = need

    def __len__(self) -> int:
        return self._n

    def write(self, records: Sequence[MemoryRecord], derived_from: Sequence[Sequence[str]] = ()) -> list[MemoryRecord]:
        """Embed (when missing) and store records; `derived_from[i]` are the memories record i reused.

        The records and their reuse edges are written in one transaction.
        """
        if not records:
            return []
        vectors: list[np.ndarray | None] = [None] * len(records)
        missing = [i for i, r in enumerate(records) if r.embedding is None]
        if missing:
            for i, e in zip(missing, self._embed([records[i] for i in missing])):
                records[i].embedding = e.tolist()
                vectors[i] = e
        matrix = np.stack([np.asarray(r.embedding, dtype=np.float32) if v is None else v for r, v in zip(records, vectors)])
        edges = [(src, r.id, "memory", r.provenance.agent) for r, srcs in zip(records, derived_from) for src in srcs]
        with self.store.batch():
            self.store.add_many(list(records), matrix)
            self.store.record_reuses(edges)
        self._append(records, matrix)
        return list(records)

    def recent(self, n: int) -> list[MemoryRecord]:
        """The `n` most recently indexed records (active when indexed)."""
        return self._records[-n:]

    def rewrite(self, record_id: str, changes: dict, reason: str, actor: str) -> int:
        """Write a new version of an indexed record through the store (audited), re-embedded."""
        i = self._ids.index(record_id)
        rec = self._records[i].model_copy(update={**changes, "embedding": None})
        rec.embedding = self._embed([rec])[0].tolist()
        seq = self.store.rewrite(record_id, {**changes, "embedding": rec.embedding}, reason, actor)
        self._records[i] = rec
        assert self._matrix is not None
        self._matrix[i] = rec.embedding
        return seq

    def retrieve(self, state: str, context: str, agent: str, k: int = 5, *, target: str | None = None, kind: DstKind = "decision") -> list[tuple[MemoryRecord, float]]:
        """Top-k active memories for a situation; records `memory -> target` reuse edges.

        `target` names the decision (default: a fresh id) or memory the retrieval feeds.
        """
        return self.retrieve_many([(state, context, agent, target)], k, kind=kind)[0]

    def retrieve_many(self, queries: Sequence[Query], k: int = 5, *, kind: DstKind = "decision", now: float | None = None,
                      record: bool = True) -> list[list[tuple[MemoryRecord, float]]]:
        """`retrieve` for several agents at once: one matrix product, one store transaction.

        `record=False` skips the `memory -> decision` edges, for callers that write each
        decision as a memory citing what supported it (`write(..., derived_from=...)`).

        The returned score is the cosine (times the recency factor when configured);
        `now` is the time recency is measured from (default: the newest memory).
        """
        if self._matrix is None or not self._n or not queries:
            return [[] for _ in queries]
        q = np.stack([self._embed_query(s, c) for s, c, _, _ in queries])
        sims = q @ self._matrix[:self._n].T
        if self.recency_halflife:
            ref = float(self._times[:self._n].max()) if now is None else now
            age = np.maximum(ref - self._times[:self._n], 0.0)
            w = self.recency_weight
            sims = sims * ((1.0 - w) + w * np.exp2(-age / self.recency_halflife))[None, :]
        kk = min(k, self._n)
        part = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
        order = np.argsort(-np.take_along_axis(sims, part, axis=1), axis=1)
        top = np.take_along_axis(part, order, axis=1)
        edges, out = [], []
        for (_, _, agent, target), row, s in zip(queries, top, sims):
            if record:
                target = target or f"decision-{uuid.uuid4().hex}"
                edges.extend((self._ids[i], target, kind, agent) for i in row)
            out.append([(self._records[i], float(s[i])) for i in row])
        if edges:
            self.store.record_reuses(edges)
        return out

    @staticmethod
    def vote(hits: Sequence[tuple[MemoryRecord, float]], *, power: float = 1.0, outcome_weights: tuple[float, float, float] | None = None) -> tuple[str, float]:
        """The action the retrieved memories support: similarity^power x confidence weighted vote.

        `outcome_weights` = (failed, unknown, succeeded) multiplies each memory's weight by
        what was observed when its action was taken (None: outcomes are ignored).
        """
        scores: dict[str, float] = {}
        for rec, sim in hits:
            conf = 0.5 if rec.confidence is None else rec.confidence
            w = max(sim, 0.0) ** power * conf
            if outcome_weights is not None:
                w *= outcome_weights[1] if rec.success is None else outcome_weights[2 if rec.success > 0.5 else 0]
            scores[rec.action] = scores.get(rec.action, 0.0) + w
        if not scores:
            return "", 0.0
        action = max(scores, key=scores.__getitem__)
        total = sum(scores.values())
        return action, scores[action] / total if total else 0.0
