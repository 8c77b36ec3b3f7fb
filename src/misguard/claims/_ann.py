"""The approximate (graph) vector index of a large claim store, keyed by slot.

Above `ANN_THRESHOLD` claims, exact search (one matrix product over every claim) costs too
much per check; an HNSW graph finds the nearest claims by visiting a few thousand of them.
The store keeps one such index per generation (`ann-<gen>.<library>`) beside the exact
vectors, adds new claims to it without a rebuild, and re-scores what it returns against
the exact vectors (so scores are exact; only which claims are found is approximate).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MissingExtraError

#: Stores with at least this many claims search the approximate index (`index="auto"`).
#: Below it exact search is fast enough (see docs/experiments/2026-11-26-claim-store-scale.md).
ANN_THRESHOLD = 100_000
#: Graph degree and build-time candidate list: the libraries' usual settings for ~384-d text
#: embeddings; recall is tuned with the search-time list (`ANN_EF`) instead.
ANN_M = 16
ANN_EF_CONSTRUCTION = 128
#: Search-time candidate list: a search returns this many candidates (at least the number
#: of results asked for), all scored exactly; chosen on CheckThat-2020 train tweets (see
#: docs/experiments/2026-11-26-claim-store-scale.md).
ANN_EF = 512
#: The library behind it (chosen by measurement: docs/experiments/2026-11-26-claim-store-scale.md).
LIBRARIES = ("usearch",)
#: How the graph stores its vectors: 8-bit integers (unit vectors scaled by 127). The graph
#: only proposes candidates, which are scored against the exact float32 vectors; i8 built
#: 3-5x faster than f32 and is a quarter of the size, for the same candidate recall (see
#: docs/experiments/2026-11-27-claim-store-segments.md).
ANN_DTYPE = "i8"


class AnnIndex:
    """An HNSW index over unit vectors (inner product), keys = slots.

    `library` is one of `LIBRARIES` (it names the file, so that another library's file is
    never read as this one's). `add` puts new slots in (or replaces the vector of an
    existing one); `search` returns candidate slots, -1 where fewer were found.
    """

    def __init__(self, library: str, dim: int, impl: Any, *, mutable: bool = True) -> None:
        self.library = library
        self.dim = dim
        self._impl = impl
        self.mutable = mutable
        self.ef = ANN_EF
        #: The last search (queries, breadth) and its candidates: a check searches the same
        #: query twice (the false-rated claims, then all claims), one graph walk serves both.
        self._last: tuple[bytes, int, np.ndarray] | None = None

    # -- making ------------------------------------------------------------------------

    @classmethod
    def empty(cls, library: str, dim: int, capacity: int = 1024) -> AnnIndex:
        if library == "usearch":
            Index = _usearch()
            impl = Index(ndim=dim, metric="ip", dtype=ANN_DTYPE, connectivity=ANN_M, expansion_add=ANN_EF_CONSTRUCTION,
                         expansion_search=ANN_EF)
        else:
            raise ValueError(f"unknown index library {library!r}; one of {', '.join(LIBRARIES)}")
        return cls(library, dim, impl)

    @classmethod
    def build(cls, library: str, vectors: np.ndarray, *, threads: int = 0) -> AnnIndex:
        """An index of every row of `vectors` (key = row)."""
        index = cls.empty(library, vectors.shape[1], capacity=len(vectors))
        index.add(np.arange(len(vectors)), vectors, threads=threads)
        return index

    @classmethod
    def load(cls, file: Path, library: str, dim: int, count: int) -> AnnIndex:
        """Load a saved index: usearch maps the file (read-only, little memory until a
        write asks for `mutable_copy`)."""
        if library == "usearch":
            impl = _usearch().restore(str(file), view=True)
            if impl is None:
                raise ValueError(f"{file.name} is not a usearch index")
            index = cls(library, dim, impl, mutable=False)
        else:
            raise ValueError(f"unknown index library {library!r}")
        if len(index) != count:
            raise ValueError(f"{file.name} holds {len(index)} vectors, the store {count}")
        return index

    def mutable_copy(self, file: Path) -> AnnIndex:
        """This index, writable (a mapped usearch index is loaded whole from `file`)."""
        if self.mutable:
            return self
        impl = _usearch().restore(str(file), view=False)
        impl.expansion_search = self.ef
        return AnnIndex(self.library, self.dim, impl)

    # -- using -------------------------------------------------------------------------

    def __len__(self) -> int:
        return int(self._impl.size)

    def set_ef(self, ef: int) -> None:
        self.ef = ef
        self._last = None
        self._impl.expansion_search = ef

    def add(self, slots: np.ndarray, vectors: np.ndarray, *, threads: int = 0) -> None:
        """Add `vectors` under `slots`; a slot already present gets the new vector."""
        if not self.mutable:
            raise RuntimeError("a mapped index is read-only; use mutable_copy")
        slots = np.asarray(slots, dtype=np.int64)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if len(slots) == 0:
            return
        present = slots[self._impl.contains(slots.astype(np.uint64))] if len(self) else slots[:0]
        for slot in present:  # usearch keeps duplicates of a key: drop the old vector first
            self._impl.remove(int(slot))
        self._impl.add(slots.astype(np.uint64), vectors, threads=threads)
        self._last = None

    def search(self, queries: np.ndarray, k: int) -> np.ndarray:
        """Candidate slots (m, max(k, ef)) nearest first, -1 where fewer were found. One thread:
        a check searches one query, and the machine's other core embeds the next one."""
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        m = queries.shape[0]
        out = np.full((m, k), -1, dtype=np.int64)
        n = len(self)
        if n == 0 or k <= 0:
            return out
        kk = min(max(k, self.ef), n)  # the graph search visits `ef` anyway: return them all
        if self.ef < kk:
            self.set_ef(kk)
        key = queries.tobytes()
        last = self._last  # once: another thread may replace it
        if last is not None and last[0] == key and last[1] == kk:
            return last[2].copy()
        out = np.full((m, kk), -1, dtype=np.int64)
        matches = self._impl.search(queries, kk, threads=1)
        if m == 1:  # one query gives `Matches`, as long as what it found
            found = np.asarray(matches.keys, dtype=np.int64)
            out[0, : len(found)] = found
        else:
            keys = np.asarray(matches.keys, dtype=np.int64).reshape(m, -1)
            counts = np.asarray(matches.counts).reshape(m)
            for i in range(m):
                out[i, : counts[i]] = keys[i, : counts[i]]
        self._last = (key, kk, out.copy())
        return out

    def save(self, file: Path) -> None:
        """Write the index to `file` durably (temp file, fsync, rename)."""
        tmp = file.with_name(file.name + ".tmp")
        self._impl.save(str(tmp))
        with tmp.open("rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, file)

    def memory_bytes(self) -> int:
        return int(self._impl.memory_usage)


def ann_file(path: Path, generation: int, library: str) -> Path:
    return path / f"ann-{generation}.{library}"


def _usearch() -> Any:
    # onnxruntime (the e5 runtime) must be loaded before usearch's compiled module: the other
    # order crashes the process on import (usearch 2.26.6, onnxruntime 1.32).
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        pass
    try:
        from usearch.index import Index
    except ImportError:
        raise MissingExtraError("usearch", "scale", "the approximate index of a large claim store") from None
    return Index
