"""Record embeddings.

Two ways to embed a memory record, both L2-normalised:

* `HashedRecordFeaturizer`: a deterministic, model-free featurisation for large runs. Each
  field (state, context, tags, action) is tokenised on `;`/`,`/whitespace and feature-hashed
  (two signed buckets per token, blake2b) into its own block; blocks are scaled by field
  weights and concatenated. Field blocks make the encoder's augmentations exact (tag dropout
  zeroes the tag block, field masking zeroes any block) and the whole costs microseconds per
  record, which is what a ~200k-record benchmark needs (e5 embeds ~50 texts/s here).
* `record_text` + any `misguard.embed` Embedder (e5) for small stores and the demo.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..types import MemoryRecord

FIELDS = ("state", "context", "tags", "action")
_SPLIT = re.compile(r"[;\s]+")


def record_text(record: MemoryRecord) -> str:
    """The text an embedding model sees for a record (stable field order)."""
    tags = ", ".join(record.tags)
    return f"state: {record.state} | context: {record.context} | tags: {tags} | action: {record.action}"


def record_fields(record: MemoryRecord) -> dict[str, list[str]]:
    """Tokens per field; `key=value` pairs stay whole so that values keep their key."""
    return {
        "state": [t for t in _SPLIT.split(record.state) if t],
        "context": [t for t in _SPLIT.split(record.context) if t],
        "tags": list(record.tags),
        "action": [record.action],
    }


@dataclass
class HashedRecordFeaturizer:
    """Feature-hashed field blocks (see module docstring). `dim` is the sum of block sizes."""

    blocks: dict[str, int] = field(default_factory=lambda: {"state": 96, "context": 64, "tags": 48, "action": 48})
    weights: dict[str, float] = field(default_factory=lambda: {"state": 1.2, "context": 0.6, "tags": 0.45, "action": 0.3})
    _cache: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)
    _blocks: dict[tuple[str, tuple[str, ...]], np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def dim(self) -> int:
        return sum(self.blocks.values())

    def slices(self) -> dict[str, slice]:
        out, start = {}, 0
        for name in FIELDS:
            out[name] = slice(start, start + self.blocks[name])
            start += self.blocks[name]
        return out

    def describe(self) -> dict[str, object]:
        return {"kind": "hashed-fields", "blocks": dict(self.blocks), "weights": dict(self.weights)}

    def _token(self, fname: str, token: str) -> tuple[np.ndarray, np.ndarray]:
        key = (fname, token)
        hit = self._cache.get(key)
        if hit is None:
            digest = hashlib.blake2b(f"{fname}\x1f{token}".encode(), digest_size=8).digest()
            size = self.blocks[fname]
            idx = np.array([int.from_bytes(digest[0:3], "little") % size, int.from_bytes(digest[3:6], "little") % size])
            sign = np.array([1.0 if digest[6] & 1 else -1.0, 1.0 if digest[7] & 1 else -1.0], dtype=np.float32)
            hit = (idx, sign / np.sqrt(2.0))
            if len(self._cache) < 200_000:  # bounded: token vocabularies are small in practice
                self._cache[key] = hit
        return hit

    def field_vector(self, fname: str, tokens: Sequence[str]) -> np.ndarray:
        """The un-normalised, weighted block of one field (cached: field values repeat a lot)."""
        key = (fname, tuple(tokens))
        hit = self._blocks.get(key)
        if hit is None:
            hit = self._field_vector(fname, key[1])
            if len(self._blocks) < 100_000:
                self._blocks[key] = hit
        return hit

    def _field_vector(self, fname: str, tokens: Sequence[str]) -> np.ndarray:
        vec = np.zeros(self.blocks[fname], dtype=np.float32)
        for tok in tokens:
            idx, sign = self._token(fname, tok)
            np.add.at(vec, idx, sign)
        if tokens:
            # Each block's norm is about its field weight, whatever its token count.
            vec *= self.weights[fname] / np.sqrt(len(tokens))
        return vec

    def embed_fields(self, fields: dict[str, Sequence[str]]) -> np.ndarray:
        parts = [self.field_vector(name, fields.get(name, ())) for name in FIELDS]
        vec = np.concatenate(parts)
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    def embed(self, records: Sequence[MemoryRecord]) -> np.ndarray:
        if not records:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.embed_fields(record_fields(r)) for r in records]).astype(np.float32)

    def embed_query(self, state: str, context: str = "", tags: Sequence[str] = ()) -> np.ndarray:
        """A retrieval query: the situation without an action."""
        fields = {"state": [t for t in _SPLIT.split(state) if t], "context": [t for t in _SPLIT.split(context) if t], "tags": list(tags)}
        return self.embed_fields(fields)
