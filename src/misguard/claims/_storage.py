"""Storage under a claim store: SQLite connections (one per thread), write and read
transactions, and the index files of one generation (durable writes, checksums).

Writers make index files only while they hold SQLite's write lock, and delete older ones
only after their commit; readers load a generation's files inside a read transaction,
during which no writer can commit. So a reader never finds the files it was told about
gone, and a crashed writer's leftovers are recognised as such by the next writer.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import StoreError
from ..types import Claim, VerdictLabel
from ._ann import ann_file
from ._topics import TOPICS

#: The record columns of a claim, in the `claims` table's order (after `slot`).
_COLUMNS = ("id", "text", "verdict", "verdict_original", "language", "topic", "url", "publisher", "date")
_TOPIC_IDS = {name: i for i, name in enumerate(TOPICS)}


def _save(path: Path, array: np.ndarray, spare: int = 0) -> str:
    """Write `array` to `path` durably (temp file, fsync, rename, fsync of the directory),
    followed by `spare` rows of zeros (room for a delta, see `Layout`); returns the sha256 of
    the file (recorded in `meta` for `verify`)."""
    tmp = path.with_suffix(".tmp")
    digest = hashlib.sha256()
    with tmp.open("wb") as fh:
        out = _Hashing(fh, digest)
        if spare:
            array = np.ascontiguousarray(array)
            header = {"descr": np.lib.format.dtype_to_descr(array.dtype), "fortran_order": False,
                      "shape": (array.shape[0] + spare, *array.shape[1:])}
            np.lib.format.write_array_header_1_0(out, header)
            rows = max(1, (64 << 20) // max(1, array[:1].nbytes))  # 64 MiB at a time
            for start in range(0, len(array), rows):
                out.write(array[start : start + rows].tobytes())
            out.write(np.zeros((spare, *array.shape[1:]), dtype=array.dtype).tobytes())
        else:
            np.save(out, array)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)
    return digest.hexdigest()


class _Hashing:
    """A write-only file that hashes what passes through (np.save writes through it)."""

    def __init__(self, fh: Any, digest: Any) -> None:
        self._fh, self._digest = fh, digest

    def write(self, data: Any) -> int:
        self._digest.update(data)
        return self._fh.write(data)


def _fsync_dir(path: Path) -> None:
    # The rename itself must reach the disk before the commit that names the new files.
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return  # e.g. a platform without directory handles
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


#: The index files of one generation: `<kind>-<generation>.npy`, and in a large store the
#: approximate index `ann-<generation>.<library>` (see `_ann`). A generation written as a
#: delta (`Layout`) has `delta-` and `deltaslots-` files instead of its own `index-` and `ann-`.
INDEX_KINDS = ("index", "topics", "hubs")
DELTA_KINDS = ("delta", "deltaslots")
#: Most vectors a large store keeps in a delta beside its base index before a write merges
#: them into a new base (writing the whole index and approximate index again). Every search
#: scores the delta exactly: at this size one product of about 4 million multiply-adds.
#: A base's index file has this many spare rows at least, for the deltas laid over it.
DELTA_LIMIT = 10_000
_GENERATION_FILE = re.compile(r"(?:(index|topics|hubs|delta|deltaslots)-(\d+)\.npy|ann-(\d+)\.usearch)")


@dataclass(frozen=True)
class Layout:
    """Which files hold a generation. The vectors of slots below `base_count` are those of
    generation `base` (its `index-` and `ann-` files, written whole when it was made);
    topics and hubness are the generation's own files. In a generation written as a delta
    (`base` before it), the vectors of later slots and of slots changed since the base are
    in its `delta-` file (rows) and `deltaslots-` file (their slots): a small write does not
    write the whole index again, and searches cover the delta exactly."""

    generation: int
    count: int
    base: int
    base_count: int
    #: Rows of zeros after the base's vectors in its `index-` file: a process maps the file
    #: copy-on-write and lays the delta over them, so memory holds only the delta's pages.
    spare: int = 0

    @classmethod
    def of(cls, meta: dict[str, str]) -> Layout:
        generation, count = int(meta["generation"]), int(meta["count"])
        # Stores written before deltas existed: every generation is its own base.
        return cls(generation, count, int(meta.get("base", generation)), int(meta.get("base_count", count)),
                   int(meta.get("base_spare", 0)))

    @property
    def has_delta(self) -> bool:
        return self.base != self.generation

    def files(self, path: Path, ann_library: str = "") -> dict[str, Path]:
        """The files of this generation by kind (`ann` when the base has an approximate index)."""
        g = self.generation
        files = {"index": path / f"index-{self.base}.npy", "topics": path / f"topics-{g}.npy",
                 "hubs": path / f"hubs-{g}.npy"}
        if self.has_delta:
            files.update({kind: path / f"{kind}-{g}.npy" for kind in DELTA_KINDS})
        if ann_library:
            files["ann"] = ann_file(path, self.base, ann_library)
        return files


class IndexProblem(StoreError):
    """The vector index files do not match the records. `rebuildable`: missing or stale
    (rebuilt on open); otherwise corrupt (rebuilt by `verify --repair`)."""

    def __init__(self, message: str, *, rebuildable: bool) -> None:
        super().__init__(message)
        self.rebuildable = rebuildable


def read_index_files(path: Path, layout: Layout, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The (vectors, topic ids, hubness, delta slots) of a generation, checked against the
    records. The base vectors are mapped from their file copy-on-write: a process's memory
    holds the rows it reads and the delta laid over them, and the file never changes. The
    vectors are a view of the whole mapping (`.base`), whose spare rows an add may fill."""
    arrays = {}
    for kind, file in layout.files(path).items():
        if not file.is_file():
            raise IndexProblem(f"The vector index of {path} is missing ({file.name})", rebuildable=True)
        try:
            arrays[kind] = np.load(file, allow_pickle=False, mmap_mode="c" if kind == "index" else None)
        except (OSError, ValueError, EOFError) as exc:
            raise IndexProblem(
                f"The vector index of {path} is missing or corrupt ({file.name}: {exc}); rebuild it with: "
                f"misguard claims verify --db {path} --repair", rebuildable=False) from None
    base, topic_ids, hubs = arrays["index"], arrays["topics"], arrays["hubs"]
    count = layout.count
    rows = layout.base_count + layout.spare
    if base.shape != (rows, dim) or topic_ids.shape != (count,) or hubs.shape != (count,):
        raise IndexProblem(
            f"The vector index of {path} is stale: it has shape {base.shape}, the records need "
            f"({rows}, {dim})", rebuildable=True)
    if not layout.has_delta:
        return base[:count], topic_ids, hubs, np.zeros(0, dtype=np.int64)
    delta, slots = arrays["delta"], arrays["deltaslots"]
    later = np.arange(layout.base_count, count)
    if (delta.shape != (len(slots), dim) or slots.ndim != 1 or (len(slots) and not 0 <= slots.min() <= slots.max() < count)
            or not np.isin(later, slots).all()):
        raise IndexProblem(
            f"The vector index of {path} is corrupt (the delta of generation {layout.generation} does not match "
            f"the records); rebuild it with: misguard claims verify --db {path} --repair", rebuildable=False)
    if count <= rows:
        vectors = base[:count]
    else:  # more new claims than spare rows: a copy in memory
        vectors = np.empty((count, dim), dtype=np.float32)
        vectors[: layout.base_count] = base[: layout.base_count]
    vectors[slots] = delta
    return vectors, topic_ids, hubs, slots.astype(np.int64)


def index_files(path: Path) -> dict[int, list[Path]]:
    """Index files in a store directory by generation."""
    out: dict[int, list[Path]] = {}
    for file in path.glob("*-*.*"):
        match = _GENERATION_FILE.fullmatch(file.name)
        if match:
            out.setdefault(int(match[2] or match[3]), []).append(file)
    return out


def drop_older_files(path: Path, layout: Layout) -> None:
    """Delete index files of generations before `layout`'s, except its base files (after it
    is committed: no reader can be loading them, see `_load_index`). Newer ones may be a
    writer's at work."""
    for gen, files in index_files(path).items():
        if gen < layout.generation:
            for file in files:
                if gen != layout.base or not file.name.startswith(("index-", "ann-")):
                    try:
                        file.unlink(missing_ok=True)
                    except OSError:  # e.g. still mapped on a platform that forbids it: swept later
                        pass


def _connect(db: Path) -> sqlite3.Connection:
    # check_same_thread=False only so that `close()` may close every thread's connection;
    # each connection is otherwise used by the thread that made it (`_ThreadConnections`).
    return sqlite3.connect(db, timeout=30.0, isolation_level=None, check_same_thread=False)


class _ThreadConnections:
    """One SQLite connection per thread, all closed together. SQLite itself then isolates
    the threads (a transaction on one connection is invisible to the others until commit)."""

    def __init__(self, db: Path, first: sqlite3.Connection) -> None:
        self.db = db
        self._local = threading.local()
        self._local.conn = first
        self._all = [first]
        self._lock = threading.Lock()
        self._closed = False

    def get(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            with self._lock:
                if self._closed:
                    raise StoreError(f"The claim store at {self.db.parent} is closed; open it again")
                conn = _connect(self.db)
                self._all.append(conn)
            self._local.conn = conn
        return conn

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for conn in self._all:
                conn.close()
            self._all.clear()


def _set_meta(conn: sqlite3.Connection, **values: str) -> None:
    conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", list(values.items()))


class _transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any error (one writer at a time)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is not None:
            self.conn.execute("ROLLBACK")
            return
        try:
            self.conn.execute("COMMIT")
        except sqlite3.Error:
            # e.g. readers held the lock past the busy timeout: the transaction is still
            # open; end it, so that nothing half-done stays pending on this connection.
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise


@contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """A read transaction (part of an open one, if any): every read inside sees one state."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")  # nothing was written: ends the read


#: Claims a hubness is measured against (a fixed-seed sample of the store above this size).
HUBNESS_REFERENCE = 8192


def hubness(vectors: np.ndarray, k: int = 10, reference: int = HUBNESS_REFERENCE, seed: int = 0) -> np.ndarray:
    """Mean cosine of each claim to its k nearest other claims.

    Claims near many others ("hubs", e.g. generic political statements) win retrievals
    they should not; retrieval subtracts a share of this (CSLS-style). Measured against at
    most `reference` claims drawn with a fixed seed, so a 100k store costs O(n * 8192).
    """
    return hubness_of(vectors, None, k=k, reference=reference, seed=seed)


def hubness_of(vectors: np.ndarray, rows: np.ndarray | None, *, k: int = 10, reference: int = HUBNESS_REFERENCE,
               seed: int = 0) -> np.ndarray:
    """`hubness` of the claims in `rows` only (None: all), against the same reference claims:
    a write to a large store computes it for the claims it adds or changes, not for all."""
    n = len(vectors)
    rows_n = n if rows is None else len(rows)
    if n < 2:
        return np.zeros(rows_n, dtype=np.float32)
    ref = vectors if n <= reference else vectors[np.random.default_rng(seed).choice(n, reference, replace=False)]
    kk = min(k, len(ref) - 1)
    out = np.empty(rows_n, dtype=np.float32)
    for start in range(0, rows_n, 2048):
        block = vectors[start : start + 2048] if rows is None else vectors[rows[start : start + 2048]]
        sims = block @ ref.T
        sims[sims > 0.99999] = -np.inf  # the claim itself (or an exact duplicate)
        top = -np.partition(-sims, kk - 1, axis=1)[:, :kk]
        top[~np.isfinite(top)] = np.nan
        out[start : start + 2048] = np.nan_to_num(np.nanmean(top, axis=1), nan=0.0)
    return out


def _row(claim: Claim) -> tuple:
    return (
        claim.id, claim.text, VerdictLabel(claim.verdict).value, claim.verdict_original, claim.language,
        claim.topic, claim.url, claim.publisher, claim.date,
    )


def _claim(row: Sequence) -> Claim:
    data = dict(zip(_COLUMNS, row))
    data["verdict"] = VerdictLabel(data["verdict"])
    return Claim(**data)
