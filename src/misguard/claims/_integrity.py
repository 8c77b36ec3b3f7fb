"""Integrity of a claim store: `verify_store` checks the records against the vector index
and `rebuild_index` makes the index again from the records (which are the truth).

What is checked (each one a named `Check` in the report):

    sqlite      PRAGMA integrity_check of claims.sqlite
    meta        the store's settings are there and readable
    slots       slots are 0..count-1 and count matches the records
    lexical     the FTS5 index holds exactly the records' texts, by slot
    files       the generation's index files exist, load, and have the records' shape
    checksums   their sha256 is the one recorded when they were written
    vectors     finite, unit length (or all zero), and the topics array matches the records
    sample      a sample of claims re-embedded: the stored vector is the claim's own
    leftovers   files of other generations or half-written temp files (not an error)

A corrupt or stale index is repaired by `verify_store(..., repair=True)` (`misguard claims
verify --repair`); damage inside SQLite itself cannot be repaired from the store: restore a
backup or ingest the claim files again.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..embed import Embedder
from ..errors import StoreError
from ._ann import ann_file
from ._storage import (
    _TOPIC_IDS,
    IndexProblem,
    Layout,
    _connect,
    _set_meta,
    _snapshot,
    file_sha256,
    hubness,
    index_files,
    read_index_files,
)
from ._store import ClaimStore
from ._store_write import _Next

#: Checks whose failure a rebuild of the index from the records repairs.
REBUILDABLE = frozenset({"slots", "lexical", "files", "checksums", "vectors", "sample"})
#: A stored vector re-embedded from its claim's text must be at least this similar. With
#: e5, the same text embedded again (another batch) gave a cosine of at least 0.9999998
#: (64 LIAR test claims), while a claim's most similar other claim reached at most 0.951
#: (1,000 distinct LIAR test claims; 0.897 in the shipped sample): 0.99 lies between.
SAME_VECTOR = 0.99


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class VerifyReport:
    """What `verify_store` found (and repaired)."""

    path: str
    generation: int
    claims: int
    checks: list[Check] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    """Checks that failed and were repaired (the `checks` are those after the repair)."""

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def problems(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "ok": self.ok, "generation": self.generation, "claims": self.claims,
                "checks": [vars(c) for c in self.checks], "repaired": self.repaired}


def verify_store(path: str | Path, embedder: Embedder, *, repair: bool = False, sample: int = 16,
                 seed: int = 0) -> VerifyReport:
    """Check the store in `path` (see the module docstring); with `repair`, rebuild a
    missing, stale or corrupt index from the records and check again.

    Args:
        path: the store directory.
        embedder: the store's embedder (re-embeds the sample; the rebuild).
        repair: rebuild the index when a check that a rebuild repairs failed.
        sample: claims re-embedded and compared with their stored vectors (0: none).
        seed: which claims are sampled.
    """
    path = Path(path)
    db = path / "claims.sqlite"
    if not db.is_file():
        raise StoreError(f"No claim store at {path} (no claims.sqlite)")
    report = _verify(path, embedder, sample, seed)
    if repair and any(not c.ok and c.name in REBUILDABLE for c in report.checks):
        if not next(c for c in report.checks if c.name == "sqlite").ok:
            raise StoreError(
                f"{db} itself is damaged (PRAGMA integrity_check failed): the index cannot be rebuilt "
                "from damaged records; restore a backup or ingest the claim files into a new --db")
        failed = [c.name for c in report.problems]
        store = ClaimStore._unloaded(path, embedder)
        try:
            rebuild_index(store, reason=", ".join(failed))
        finally:
            store.close()
        report = _verify(path, embedder, sample, seed)
        report.repaired = failed
    elif repair and next(c for c in report.checks if c.name == "leftovers").detail != "none":
        store = ClaimStore._unloaded(path, embedder)
        try:
            store.sweep()
        finally:
            store.close()
        report = _verify(path, embedder, sample, seed)
        report.repaired = ["leftovers"]
    return report


def _verify(path: Path, embedder: Embedder, sample: int, seed: int) -> VerifyReport:
    try:
        conn = _connect(path / "claims.sqlite")
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path / 'claims.sqlite'}: {exc}") from None
    checks: list[Check] = []
    generation = count = -1
    try:
        with _snapshot(conn):  # one state of the store, even while a writer works
            try:
                result = [r[0] for r in conn.execute("PRAGMA integrity_check")]
            except sqlite3.DatabaseError as exc:
                result = [str(exc)]
            checks.append(Check("sqlite", result == ["ok"], "ok" if result == ["ok"] else "; ".join(result[:5])))
            try:
                meta = dict(conn.execute("SELECT key, value FROM meta"))
                generation, count, dim = int(meta["generation"]), int(meta["count"]), int(meta["dim"])
            except (sqlite3.Error, KeyError, ValueError) as exc:
                checks.append(Check("meta", False, f"unreadable: {exc}"))
                return VerifyReport(str(path), generation, count, checks)
            if meta.get("embedder") != embedder.spec:
                checks.append(Check("meta", False, f"built with embedder {meta.get('embedder')!r}, checked with "
                                                   f"{embedder.spec!r}; pass --embedder {meta.get('embedder')}"))
                return VerifyReport(str(path), generation, count, checks)
            checks.append(Check("meta", True, f"generation {generation}, {count} claims, embedder {embedder.spec}"))
            checks.append(_check_slots(conn, count))
            checks.append(_check_lexical(conn))
            try:
                layout = Layout.of(meta)
                vectors, topic_ids, hubs, _ = read_index_files(path, layout, dim)
            except IndexProblem as exc:
                checks.append(Check("files", False, str(exc)))
            else:
                base = f" (vectors of slots below {layout.base_count} in generation {layout.base}'s)" \
                    if layout.has_delta else ""
                checks.append(Check("files", True, f"{len(layout.files(path))} files of generation {generation}{base}, "
                                                   f"shape {vectors.shape}"))
                checks.append(_check_checksums(path, layout, meta))
                checks.append(_check_vectors(conn, vectors, topic_ids, hubs))
                checks.append(_check_sample(conn, embedder, vectors, sample, seed))
            checks.append(_check_leftovers(path, Layout.of(meta), meta.get("ann", "")))
    finally:
        conn.close()
    return VerifyReport(str(path), generation, count, checks)


def _check_slots(conn: sqlite3.Connection, count: int) -> Check:
    rows, low, high, distinct = conn.execute("SELECT COUNT(*), MIN(slot), MAX(slot), COUNT(DISTINCT id) FROM claims").fetchone()
    if rows != count:
        return Check("slots", False, f"{rows} records, but the store says {count}")
    if rows and (low != 0 or high != rows - 1):
        return Check("slots", False, f"slots run {low}..{high} for {rows} records (expected 0..{rows - 1})")
    if distinct != rows:
        return Check("slots", False, f"{rows - distinct} duplicate claim ids")
    return Check("slots", True, f"{rows} records in slots 0..{rows - 1}")


def _check_lexical(conn: sqlite3.Connection) -> Check:
    indexed = conn.execute("SELECT COUNT(*) FROM claims_fts").fetchone()[0]
    records = conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0]
    wrong = conn.execute(
        "SELECT COUNT(*) FROM claims c LEFT JOIN claims_fts f ON f.rowid = c.slot WHERE f.text IS NOT c.text"
    ).fetchone()[0]
    if indexed != records or wrong:
        return Check("lexical", False, f"{indexed} indexed texts for {records} records, {wrong} missing or different")
    return Check("lexical", True, f"{indexed} texts indexed")


def _check_checksums(path: Path, layout: Layout, meta: dict[str, str]) -> Check:
    if "checksums" not in meta:
        return Check("checksums", True, "none recorded (written before checksums); not compared")
    recorded = json.loads(meta["checksums"])
    bad = [kind for kind, file in layout.files(path).items() if file_sha256(file) != recorded.get(kind)]
    if meta.get("ann") and "ann" in recorded:
        file = ann_file(path, layout.base, meta["ann"])
        if not file.is_file() or file_sha256(file) != recorded["ann"]:
            bad.append(file.name)
    if bad:
        return Check("checksums", False, f"{', '.join(bad)} file(s) changed since they were written (sha256 differs)")
    return Check("checksums", True, "sha256 of every index file as written")


def _check_vectors(conn: sqlite3.Connection, vectors: np.ndarray, topic_ids: np.ndarray, hubs: np.ndarray) -> Check:
    problems = []
    if vectors.dtype != np.float32:
        problems.append(f"vectors are {vectors.dtype}, not float32")
    finite = np.isfinite(vectors).all(axis=1)
    if not finite.all():
        problems.append(f"{int((~finite).sum())} vectors with NaN or infinite values")
    norms = np.linalg.norm(np.where(np.isfinite(vectors), vectors, 0.0), axis=1)
    off = ~((np.abs(norms - 1.0) < 1e-3) | (norms == 0.0))
    if off.any():
        problems.append(f"{int(off.sum())} vectors not of unit length (norms {norms[off].min():.3g}..{norms[off].max():.3g})")
    if not np.isfinite(hubs).all():
        problems.append("hubness values with NaN or infinite values")
    expected = np.full(len(vectors), -1, dtype=np.int16)
    for slot, topic in conn.execute("SELECT slot, topic FROM claims"):
        if 0 <= slot < len(expected):
            expected[slot] = _TOPIC_IDS.get(topic or "", -1)
    mismatched = int((expected != topic_ids).sum()) if topic_ids.shape == expected.shape else len(expected)
    if mismatched:
        problems.append(f"{mismatched} slots whose topic differs from the record's")
    if problems:
        return Check("vectors", False, "; ".join(problems))
    zero = int((norms == 0.0).sum())
    return Check("vectors", True, f"{len(vectors)} finite unit vectors" + (f" ({zero} all-zero: empty texts)" if zero else ""))


def _check_sample(conn: sqlite3.Connection, embedder: Embedder, vectors: np.ndarray, sample: int, seed: int) -> Check:
    n = len(vectors)
    if sample <= 0 or n == 0:
        return Check("sample", True, "no claims re-embedded")
    slots = np.sort(np.random.default_rng(seed).choice(n, min(sample, n), replace=False))
    texts = dict(conn.execute(f"SELECT slot, text FROM claims WHERE slot IN ({','.join('?' * len(slots))})",
                              [int(s) for s in slots]))
    missing = [int(s) for s in slots if int(s) not in texts]
    if missing:
        return Check("sample", False, f"no record in slot(s) {missing[:5]}")
    fresh = embedder.embed([texts[int(s)] for s in slots], "passage")
    sims = np.einsum("ij,ij->i", fresh, vectors[slots])
    fresh_norm = np.linalg.norm(fresh, axis=1)
    wrong = [int(s) for s, sim, fn in zip(slots, sims, fresh_norm) if fn > 0 and sim < SAME_VECTOR]
    if wrong:
        return Check("sample", False, f"{len(wrong)} of {len(slots)} sampled slots hold another text's vector "
                                      f"(e.g. slot {wrong[0]}): the index does not belong to these records")
    return Check("sample", True, f"{len(slots)} claims re-embedded, min cosine {float(sims.min()):.4f}")


def _check_leftovers(path: Path, layout: Layout, ann_library: str) -> Check:
    current = set(layout.files(path, ann_library).values())
    others = sorted(f.name for files in index_files(path).values() for f in files if f not in current)
    temps = sorted(f.name for f in path.glob("*.tmp"))
    if others or temps:
        return Check("leftovers", True, f"{len(others) + len(temps)} files of other generations or unfinished "
                                        f"writes ({', '.join((others + temps)[:4])}); --repair deletes them")
    return Check("leftovers", True, "none")


def rebuild_index(store: ClaimStore, *, reason: str = "", record_embedder: bool = False) -> int:
    """Make the vector index again from the records: re-embed every claim, renumber slots
    that are not 0..n-1, re-index the texts for lexical search, and commit it as a new
    generation (crash-safe like any write). Returns the number of claims.
    `record_embedder`: the store's recorded embedder becomes `store.embedder` in the same
    commit (a re-embedding with another encoder)."""
    # Embed outside the write lock (the slow part); under the lock only texts another
    # writer changed meanwhile are embedded.
    with store.reading():
        rows = store._conn.execute("SELECT slot, id, text, topic FROM claims ORDER BY slot").fetchall()
    vectors: dict[str, np.ndarray] = {}

    def embed(texts: list[str]) -> None:
        todo = list(dict.fromkeys(t for t in texts if t not in vectors))
        for start in range(0, len(todo), 256):
            chunk = todo[start : start + 256]
            vectors.update(zip(chunk, store.embedder.embed(chunk, "passage")))

    embed([r[2] for r in rows])

    def build() -> _Next:
        now = store._conn.execute("SELECT slot, id, text, topic FROM claims ORDER BY slot").fetchall()
        embed([r[2] for r in now])
        dim = store.embedder.dim
        matrix = (np.stack([vectors[r[2]] for r in now]).astype(np.float32) if now
                  else np.zeros((0, dim), dtype=np.float32))
        topic_ids = np.array([_TOPIC_IDS.get(r[3] or "", -1) for r in now], dtype=np.int16)

        def write_rows(conn: sqlite3.Connection) -> None:
            if [r[0] for r in now] != list(range(len(now))):
                # Two steps, past every slot in use and back: no target is ever taken.
                offset = max(r[0] for r in now) + len(now) + 1
                conn.executemany("UPDATE claims SET slot = ? WHERE slot = ?", [(offset + i, r[0]) for i, r in enumerate(now)])
                conn.execute("UPDATE claims SET slot = slot - ?", (offset,))
            conn.execute("DELETE FROM claims_fts")
            conn.execute("INSERT INTO claims_fts (rowid, text) SELECT slot, text FROM claims")
            if record_embedder:
                _set_meta(conn, embedder=store.embedder.spec, dim=str(dim))

        return _Next(matrix, topic_ids, hubness(matrix), write_rows, (len(now),))

    written = store._write(f"rebuild of the index ({reason})" if reason else "rebuild of the index", build,
                           catch_up=False)
    assert written is not None
    return written.counts[0]


def reembed_store(path: str | Path, embedder: Embedder) -> tuple[str, int]:
    """Re-embed every claim of the store at `path` with `embedder` and record it as the
    store's embedder, in one commit: until it commits, the store is the old one, whole.
    Returns (the embedder it had, the number of claims)."""
    path = Path(path)
    if not (path / "claims.sqlite").is_file():
        raise StoreError(f"No claim store at {path}")
    store = ClaimStore._unloaded(path, embedder)
    try:
        old = store._meta().get("embedder", "?")
        count = rebuild_index(store, reason=f"re-embedded with {embedder.spec}, was {old}", record_embedder=True)
    finally:
        store.close()
    return old, count


__all__ = ["Check", "VerifyReport", "rebuild_index", "reembed_store", "verify_store"]
