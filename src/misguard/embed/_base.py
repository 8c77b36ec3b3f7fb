"""The embedding interface: `embed(texts, kind)` -> L2-normalised float32 rows.

Subclasses implement `_embed_batch`; the base class owns batching, the in-memory LRU cache
and the optional on-disk cache. `kind` is "query" or "passage" (e5-style models use it to
pick their prefix; symmetric models ignore it).
"""

from __future__ import annotations

import hashlib
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np

from ..config import EmbedSettings
from ..errors import EmbeddingError
from ..types import Usage

Kind = Literal["query", "passage"]


class Embedder(ABC):
    backend: ClassVar[str]
    #: Hand texts to `_embed_batch` shortest first, so a runtime that pads a batch to its
    #: longest text pads little.
    _sort_by_length: ClassVar[bool] = False

    def __init__(self, model: str = "", settings: EmbedSettings | None = None) -> None:
        self.model = model
        self.settings = settings or EmbedSettings()
        self.usage = Usage()
        self._memory: OrderedDict[str, np.ndarray] = OrderedDict()
        self._disk = None
        if self.settings.cache_dir is not None:
            import diskcache

            self._disk = diskcache.Cache(str(self.settings.cache_dir))

    @property
    @abstractmethod
    def dim(self) -> int:
        """Embedding width."""

    @abstractmethod
    def _embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        """Embed one batch; return an (n, dim) array (normalisation is done by the caller)."""

    @property
    def spec(self) -> str:
        return f"{self.backend}/{self.model}" if self.model else self.backend

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.model, "spec": self.spec, "dim": self.dim}

    def embed(self, texts: str | Sequence[str], kind: Kind = "passage") -> np.ndarray:
        """Embed texts; a single string gives a (dim,) vector, a list an (n, dim) matrix."""
        single = isinstance(texts, str)
        items = [texts] if single else list(texts)
        out = np.empty((len(items), self.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        for i, text in enumerate(items):
            if not isinstance(text, str):
                raise EmbeddingError(f"Can only embed strings, got {type(text).__name__} at index {i}")
            key = self._key(text, kind)
            vec = self._lookup(key)
            if vec is None:
                missing.setdefault(text, []).append(i)
            else:
                out[i] = vec
        if missing:
            todo = list(missing)
            if self._sort_by_length:
                todo.sort(key=len)
            started = time.perf_counter()
            bs = self.settings.batch_size
            for start in range(0, len(todo), bs):
                batch = todo[start : start + bs]
                try:
                    vecs = np.asarray(self._embed_batch(batch, kind), dtype=np.float32)
                except EmbeddingError:
                    self.usage.failed_calls += 1
                    raise
                if vecs.shape != (len(batch), self.dim):
                    raise EmbeddingError(
                        f"{self.spec} returned shape {vecs.shape} for {len(batch)} texts"
                    )
                vecs = _normalise(vecs)
                for text, vec in zip(batch, vecs):
                    self._store(self._key(text, kind), vec)
                    for i in missing[text]:
                        out[i] = vec
                self.usage.calls += 1
            self.usage.latency_s += time.perf_counter() - started
        self.usage.cached_calls += len(items) - sum(len(v) for v in missing.values())
        return out[0] if single else out

    def similarity(self, a: str, b: str, kind: Kind = "passage") -> float:
        va, vb = self.embed([a, b], kind)
        return float(va @ vb)

    # -- cache ---------------------------------------------------------------------------

    def _key(self, text: str, kind: Kind) -> str:
        return hashlib.blake2b(f"{self.spec}\x00{kind}\x00{text}".encode(), digest_size=16).hexdigest()

    def _lookup(self, key: str) -> np.ndarray | None:
        vec = self._memory.get(key)
        if vec is not None:
            self._memory.move_to_end(key)
            return vec
        if self._disk is not None:
            raw = self._disk.get(key)
            if raw is not None:
                vec = np.frombuffer(raw, dtype=np.float32)
                self._remember(key, vec)
                return vec
        return None

    def _store(self, key: str, vec: np.ndarray) -> None:
        self._remember(key, vec)
        if self._disk is not None:
            self._disk.set(key, vec.astype(np.float32).tobytes())

    def _remember(self, key: str, vec: np.ndarray) -> None:
        if self.settings.memory_cache_size <= 0:
            return
        self._memory[key] = vec
        if len(self._memory) > self.settings.memory_cache_size:
            self._memory.popitem(last=False)


def _normalise(vecs: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vecs / norms
