"""ClaimStore: fact-checked claims in SQLite plus a persisted vector index beside it.

Layout of a store directory:

    claims.sqlite          records (one row per claim id) + a `meta` table + `claims_fts`,
                           an FTS5 (BM25) index of the claim texts, rowid = slot
    index-<gen>.npy        float32 (n, dim) embeddings, row i = slot i
    topics-<gen>.npy       int16 topic id per slot (-1 = none), for topic-restricted search
    hubs-<gen>.npy         float32 per slot: how central the claim is (see `hubness`)

The `meta` table names the current generation. An ingest writes the new index files
first, then commits SQLite (which switches the generation), then deletes the old files:
a crash at any point leaves either the old or the new store, never a mix. Search is exact
(one matrix product); at 100k x 384 that is ~150 MB and a few ms per query.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..embed import Embedder
from ..errors import ConfigError, StoreError
from ..types import Claim, VerdictLabel
from ._topics import TOPICS
from ._verdicts import FALSE_LIKE

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS claims (
    slot INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    text TEXT NOT NULL,
    verdict TEXT NOT NULL,
    verdict_original TEXT,
    language TEXT NOT NULL,
    topic TEXT,
    url TEXT,
    publisher TEXT,
    date TEXT
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS claims_fts USING fts5(text, tokenize = 'unicode61 remove_diacritics 2');
"""
#: Words of a query sent to the lexical index: its rarest words in the store (rare words
#: are what BM25 adds to the embedding; a query of every word scored thousands of claims).
LEXICAL_TERMS = 12
_COLUMNS = ("id", "text", "verdict", "verdict_original", "language", "topic", "url", "publisher", "date")
_TOPIC_IDS = {name: i for i, name in enumerate(TOPICS)}


@dataclass(frozen=True)
class IngestReport:
    """What one ingest did."""

    added: int
    updated: int
    unchanged: int
    embedded: int
    seconds: float


class ClaimStore:
    """Fact-checked claims with exact vector search. Open with `ClaimStore.open`."""

    def __init__(self, path: Path, embedder: Embedder, conn: sqlite3.Connection) -> None:
        self.path = path
        self.embedder = embedder
        self._connections = _ThreadConnections(path / "claims.sqlite", conn)
        self._blas: Any = None  # threadpoolctl controller, made on first search (False: absent)
        self._load_index()

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, embedder: Embedder, *, create: bool = False) -> ClaimStore:
        """Open the store in `path`; `create=True` makes an empty one when absent."""
        path = Path(path)
        db = path / "claims.sqlite"
        if not db.is_file():
            if not create:
                raise StoreError(
                    f"No claim store at {path}. Create one with: misguard claims add --db {path} FILE"
                )
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"Cannot create the claim store directory {path}: {exc}") from None
        try:
            conn = _connect(db)
            conn.executescript(_SCHEMA)
            meta = dict(conn.execute("SELECT key, value FROM meta"))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{db} is not a readable claim store: {exc}") from None
        if not meta:
            with _transaction(conn):
                _set_meta(conn, schema=str(SCHEMA_VERSION), embedder=embedder.spec,
                          dim=str(embedder.dim), generation="0", count="0")
        elif meta.get("embedder") != embedder.spec:
            conn.close()
            raise ConfigError(
                f"The store at {path} was built with embedder {meta.get('embedder')!r}, not "
                f"{embedder.spec!r}; use --embedder {meta.get('embedder')} or a new --db"
            )
        _backfill_lexical(conn)
        return cls(path, embedder, conn)

    @property
    def _conn(self) -> sqlite3.Connection:
        """This thread's connection: a store opened on one thread can be read from any other
        (a web service checks on worker threads). Writes to the in-memory index (`add`)
        must still be serialised by the caller."""
        return self._connections.get()

    def close(self) -> None:
        self._connections.close()

    def __enter__(self) -> ClaimStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- index ---------------------------------------------------------------------------

    def _meta(self) -> dict[str, str]:
        return dict(self._conn.execute("SELECT key, value FROM meta"))

    def _load_index(self) -> None:
        meta = self._meta()
        self.generation = int(meta["generation"])
        count = int(meta["count"])
        dim = int(meta["dim"])
        if count == 0:
            self.vectors = np.zeros((0, dim), dtype=np.float32)
            self.topic_ids = np.zeros(0, dtype=np.int16)
            self.hubs = np.zeros(0, dtype=np.float32)
            self._load_flags()
            return
        try:
            self.vectors = np.load(self.path / f"index-{self.generation}.npy")
            self.topic_ids = np.load(self.path / f"topics-{self.generation}.npy")
            self.hubs = np.load(self.path / f"hubs-{self.generation}.npy")
        except (OSError, ValueError) as exc:
            raise StoreError(f"The vector index of {self.path} is missing or corrupt: {exc}") from None
        if self.vectors.shape != (count, dim) or self.topic_ids.shape != (count,) or self.hubs.shape != (count,):
            raise StoreError(
                f"The vector index of {self.path} has shape {self.vectors.shape}, expected "
                f"({count}, {dim}); re-ingest the claims into a new store"
            )
        self._load_flags()

    def _load_flags(self) -> None:
        """Which slots hold a false-like verdict (only those can make a text flagged)."""
        flags = np.zeros(len(self.vectors), dtype=bool)
        marks = ",".join("?" * len(FALSE_LIKE))
        for (slot,) in self._conn.execute(
            f"SELECT slot FROM claims WHERE verdict IN ({marks})", [v.value for v in FALSE_LIKE]
        ):
            flags[slot] = True
        self.flaggable = flags
        self._blocks: dict[tuple[int, int, bool], tuple[np.ndarray, np.ndarray]] = {}
        self._document_frequency: dict[str, int] | None = None  # of the lexical index, loaded on first use
        self._languages: frozenset[str] | None = None

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    def stored_generation(self) -> int:
        """The generation committed on disk: it differs from `generation` once another
        process has ingested (reopen the store to serve the new claims)."""
        return int(self._meta()["generation"])

    # -- writing -------------------------------------------------------------------------

    def add(
        self,
        claims: Iterable[Claim],
        *,
        source: str = "input",
        assign_topics: Callable[[np.ndarray], list[str]] | None = None,
        vectors: dict[str, np.ndarray] | None = None,
    ) -> IngestReport:
        """Insert or update claims by id, all or nothing.

        New and changed texts are embedded first; if anything fails (a bad record, the
        embedder), nothing is written. `assign_topics` maps the new vectors to one topic
        each, for claims that arrive without one (the topic agent). `vectors` supplies
        precomputed passage embeddings by claim id (e.g. from another system), skipping
        the embedder for those.
        """
        started = time.perf_counter()
        supplied = vectors or {}
        batch: dict[str, Claim] = {}
        for claim in claims:
            batch[claim.id] = claim  # a repeated id in one file: the last row wins
        if not batch:
            return IngestReport(0, 0, 0, 0, time.perf_counter() - started)
        existing: dict[str, tuple[int, str, tuple]] = {}
        ids = list(batch)
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._conn.execute(
                f"SELECT slot, {', '.join(_COLUMNS)} FROM claims WHERE id IN ({marks})", chunk
            ):
                existing[row[1]] = (row[0], row[2], tuple(row[1:]))
        # A re-ingested claim that comes without a topic keeps the one it has (e.g. the
        # topic agent's): otherwise every re-ingest of a topic-less file would wipe them.
        topic_col = _COLUMNS.index("topic")
        for cid, (_, text, row) in existing.items():
            if not batch[cid].topic and row[topic_col] and text == batch[cid].text:
                batch[cid] = batch[cid].model_copy(update={"topic": row[topic_col]})
        n = len(self)
        new_ids = [cid for cid in ids if cid not in existing]
        changed = [cid for cid in ids if cid in existing and existing[cid][1] != batch[cid].text]
        to_embed = new_ids + changed
        vectors = self.vectors
        topic_ids = self.topic_ids
        embedded = 0
        if to_embed:
            need = [cid for cid in to_embed if cid not in supplied]
            fresh = self.embedder.embed([batch[cid].text for cid in need], "passage") if need else None
            given = {cid: r for r, cid in enumerate(need)}
            new_vecs = np.stack(
                [fresh[given[cid]] if fresh is not None and cid in given else np.asarray(supplied[cid], np.float32)
                 for cid in to_embed]
            ).astype(np.float32)
            if new_vecs.shape[1] != self.vectors.shape[1]:
                raise StoreError(f"vectors of width {new_vecs.shape[1]} for a store of width {self.vectors.shape[1]}")
            embedded = len(need)
            vectors = np.concatenate([vectors, new_vecs[: len(new_ids)]]) if new_ids else vectors.copy()
            for j, cid in enumerate(changed):
                vectors[existing[cid][0]] = new_vecs[len(new_ids) + j]
            if assign_topics is not None:
                untopical = [j for j, cid in enumerate(to_embed) if not batch[cid].topic]
                if untopical:
                    for j, topic in zip(untopical, assign_topics(new_vecs[untopical])):
                        batch[to_embed[j]] = batch[to_embed[j]].model_copy(update={"topic": topic})
        slots = {cid: existing[cid][0] for cid in existing}
        slots.update({cid: n + j for j, cid in enumerate(new_ids)})
        topic_ids = np.concatenate([topic_ids, np.full(len(new_ids), -1, dtype=np.int16)])
        updated = unchanged = 0
        rows = []
        for cid in ids:
            row = _row(batch[cid])
            if cid in existing:
                if existing[cid][2] == row:
                    unchanged += 1
                    continue
                updated += 1
            topic_ids[slots[cid]] = _TOPIC_IDS.get(batch[cid].topic or "", -1)
            rows.append((slots[cid], *row))
        generation = self.generation + 1
        index_file = self.path / f"index-{generation}.npy"
        topics_file = self.path / f"topics-{generation}.npy"
        hubs_file = self.path / f"hubs-{generation}.npy"
        hubs = hubness(vectors) if to_embed else self.hubs
        try:
            _save(index_file, vectors.astype(np.float32, copy=False))
            _save(topics_file, topic_ids)
            _save(hubs_file, hubs)
            with _transaction(self._conn):
                self._conn.executemany(
                    f"INSERT OR REPLACE INTO claims (slot, {', '.join(_COLUMNS)}) "
                    f"VALUES ({', '.join('?' * (len(_COLUMNS) + 1))})",
                    rows,
                )
                self._conn.executemany("DELETE FROM claims_fts WHERE rowid = ?", [(r[0],) for r in rows])
                self._conn.executemany("INSERT INTO claims_fts (rowid, text) VALUES (?, ?)", [(r[0], r[2]) for r in rows])
                _set_meta(self._conn, generation=str(generation), count=str(len(vectors)))
        except (OSError, sqlite3.Error) as exc:
            for leftover in (index_file, topics_file, hubs_file):
                leftover.unlink(missing_ok=True)
            raise StoreError(f"Could not write {self.path} ({source}); nothing was changed: {exc}") from None
        for kind in ("index", "topics", "hubs"):
            (self.path / f"{kind}-{self.generation}.npy").unlink(missing_ok=True)
        self.generation = generation
        self.vectors = vectors
        self.topic_ids = topic_ids
        self.hubs = hubs
        self._load_flags()
        return IngestReport(len(new_ids), updated, unchanged, embedded, time.perf_counter() - started)

    def remove(self, claim_ids: Iterable[str], *, source: str = "input") -> int:
        """Delete claims by id, all or nothing; returns how many existed. The slots after
        each removed one move down, in a new index generation (crash-safe like `add`)."""
        wanted = list(dict.fromkeys(claim_ids))
        gone = sorted(s for s in (self.slot_of(cid) for cid in wanted) if s is not None)
        if not gone:
            return 0
        keep = np.ones(len(self), dtype=bool)
        keep[gone] = False
        new_slot = np.cumsum(keep) - 1
        vectors, topic_ids = self.vectors[keep], self.topic_ids[keep]
        hubs = hubness(vectors)
        generation = self.generation + 1
        files = [self.path / f"{kind}-{generation}.npy" for kind in ("index", "topics", "hubs")]
        try:
            for file, array in zip(files, (vectors, topic_ids, hubs)):
                _save(file, array)
            with _transaction(self._conn):
                self._conn.executemany("DELETE FROM claims WHERE slot = ?", [(s,) for s in gone])
                # Ascending order: each target slot is free (removed, or already moved down).
                moves = [(int(new_slot[s]), s) for s in range(gone[0] + 1, len(keep)) if keep[s]]
                self._conn.executemany("UPDATE claims SET slot = ? WHERE slot = ?", moves)
                # The lexical index is keyed by slot too: rebuild it (removals are rare).
                self._conn.execute("DELETE FROM claims_fts")
                self._conn.execute("INSERT INTO claims_fts (rowid, text) SELECT slot, text FROM claims")
                _set_meta(self._conn, generation=str(generation), count=str(len(vectors)))
        except (OSError, sqlite3.Error) as exc:
            for leftover in files:
                leftover.unlink(missing_ok=True)
            raise StoreError(f"Could not write {self.path} ({source}); nothing was changed: {exc}") from None
        for kind in ("index", "topics", "hubs"):
            (self.path / f"{kind}-{self.generation}.npy").unlink(missing_ok=True)
        self.generation, self.vectors, self.topic_ids, self.hubs = generation, vectors, topic_ids, hubs
        self._load_flags()
        return len(gone)

    # -- reading -------------------------------------------------------------------------

    def search(
        self,
        queries: np.ndarray,
        k: int = 5,
        *,
        topics: Sequence[Sequence[str]] | None = None,
        flaggable_only: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k cosine for each query row -> (scores (m, k), slots (m, k)); slot -1 = none.

        `topics[i]` restricts query i to claims of those topics (claims without a topic
        are always searched, so an unclassified claim is never unreachable).
        `flaggable_only` searches only claims with a false-like verdict.
        """
        with self.blas_single_thread():
            return self._search(queries, k, topics=topics, flaggable_only=flaggable_only)

    def blas_single_thread(self) -> AbstractContextManager[object]:
        """Run the index products on one BLAS thread. OpenBLAS worker threads keep spinning
        for a while after a product; on a small machine they then compete with the
        embedder's threads, which made the next query embedding ~2x slower (single check
        p50 91 ms against a 36 ms embedding). One thread does a query's product in a few ms.
        """
        if self._blas is None:
            try:
                from threadpoolctl import ThreadpoolController  # with scikit-learn (claims extra)
            except ImportError:
                self._blas = False
            else:
                self._blas = ThreadpoolController()
        if self._blas is False:
            return nullcontext()
        return self._blas.limit(limits=1, user_api="blas")

    def _search(
        self,
        queries: np.ndarray,
        k: int,
        *,
        topics: Sequence[Sequence[str]] | None,
        flaggable_only: bool,
    ) -> tuple[np.ndarray, np.ndarray]:
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        m = queries.shape[0]
        scores = np.full((m, k), -np.inf, dtype=np.float32)
        slots = np.full((m, k), -1, dtype=np.int64)
        if len(self) == 0:
            return scores, slots
        every = flaggable_only and bool(self.flaggable.all())
        if topics is None and (not flaggable_only or every):
            sims = queries @ self.vectors.T
            return _topk(sims, k, scores, slots, None)
        if topics is None:
            candidates = np.flatnonzero(self.flaggable)
            if candidates.size:
                _topk(queries @ self.vectors[candidates].T, k, scores, slots, candidates)
            return scores, slots
        groups: dict[tuple[str, ...], list[int]] = {}
        for i in range(m):
            groups.setdefault(tuple(sorted(topics[i])), []).append(i)
        for wanted_topics, rows in groups.items():
            blocks = [self._topic_block(_TOPIC_IDS[t], flaggable_only) for t in wanted_topics if t in _TOPIC_IDS]
            blocks.append(self._topic_block(-1, flaggable_only))
            candidates = np.concatenate([b[0] for b in blocks])
            if candidates.size == 0:
                continue
            sims = np.concatenate([queries[rows] @ b[1].T for b in blocks], axis=1)
            sub_scores, sub_slots = scores[rows], slots[rows]
            _topk(sims, k, sub_scores, sub_slots, candidates)
            scores[rows], slots[rows] = sub_scores, sub_slots
        return scores, slots

    def lexical_search(self, text: str, k: int = 20, *, flaggable_only: bool = False) -> list[tuple[int, float]]:
        """Top-k claims for `text` by BM25 over the claim texts (SQLite FTS5) -> [(slot,
        score)], best first, score = -bm25 (higher is better). Names, numbers and rare words
        that embeddings blur are what this finds. Words are OR-ed, so any shared word can
        retrieve; the `LEXICAL_TERMS` of the text's words that are rarest in the store are
        used (words no claim has cannot retrieve anything)."""
        if k <= 0:
            return []
        frequency = self.document_frequency()
        words = set(_LEXICAL_WORD.findall(text.lower())) - _LEXICAL_STOP
        terms = sorted((w for w in words if w in frequency), key=lambda w: (frequency[w], w))
        if not terms:
            return []
        query = " OR ".join(f'"{t}"' for t in terms[:LEXICAL_TERMS])
        wanted = k * 3 if flaggable_only else k
        try:
            rows = self._conn.execute(
                "SELECT rowid, bm25(claims_fts) FROM claims_fts WHERE claims_fts MATCH ? ORDER BY rank LIMIT ?",
                (query, wanted),
            ).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"The lexical index of {self.path} failed: {exc}") from None
        out = [(int(slot), -float(score)) for slot, score in rows if slot < len(self.flaggable)]
        if flaggable_only:
            out = [(slot, score) for slot, score in out if self.flaggable[slot]]
        return out[:k]

    def document_frequency(self) -> dict[str, int]:
        """How many claims hold each indexed word (the FTS5 vocabulary; cached per generation)."""
        if self._document_frequency is None:
            self._conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.claims_vocab USING fts5vocab(main, claims_fts, row)")
            self._document_frequency = dict(self._conn.execute("SELECT term, doc FROM temp.claims_vocab"))
        return self._document_frequency

    def languages(self) -> frozenset[str]:
        """The languages of the stored claims (cached per generation)."""
        if self._languages is None:
            self._languages = frozenset(lang for (lang,) in self._conn.execute("SELECT DISTINCT language FROM claims"))
        return self._languages

    def texts_of_slots(self, slots: Sequence[int]) -> dict[int, str]:
        """Claim texts by slot (lighter than `get_slots` when only the text is needed)."""
        out: dict[int, str] = {}
        wanted = sorted({int(s) for s in slots if s >= 0})
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            out.update(self._conn.execute(f"SELECT slot, text FROM claims WHERE slot IN ({','.join('?' * len(chunk))})", chunk))
        return out

    def _topic_block(self, topic_id: int, flaggable_only: bool) -> tuple[np.ndarray, np.ndarray]:
        """(slots, contiguous vectors) of one topic, cached per generation: routing then
        multiplies only those rows instead of masking the whole index per query."""
        key = (self.generation, topic_id, flaggable_only)
        if key not in self._blocks:
            mask = self.topic_ids == topic_id
            if flaggable_only:
                mask &= self.flaggable
            idx = np.flatnonzero(mask)
            self._blocks = {k: v for k, v in self._blocks.items() if k[0] == self.generation}
            self._blocks[key] = (idx, np.ascontiguousarray(self.vectors[idx]))
        return self._blocks[key]

    def get_slots(self, slots: Iterable[int]) -> dict[int, Claim]:
        """Claims by slot (unknown slots are left out)."""
        wanted = sorted({int(s) for s in slots if s >= 0})
        out: dict[int, Claim] = {}
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._conn.execute(
                f"SELECT slot, {', '.join(_COLUMNS)} FROM claims WHERE slot IN ({marks})", chunk
            ):
                out[row[0]] = _claim(row[1:])
        return out

    def get(self, claim_id: str) -> Claim | None:
        row = self._conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM claims WHERE id = ?", (claim_id,)).fetchone()
        return _claim(row) if row else None

    def slot_of(self, claim_id: str) -> int | None:
        row = self._conn.execute("SELECT slot FROM claims WHERE id = ?", (claim_id,)).fetchone()
        return int(row[0]) if row else None

    def iter_claims(self) -> Iterable[Claim]:
        for row in self._conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM claims ORDER BY slot"):
            yield _claim(row)

    def stats(self) -> dict[str, object]:
        """Counts by verdict, language and topic, plus the index size and embedder."""

        def counts(column: str) -> dict[str, int]:
            return {
                (k if k is not None else "(none)"): v
                for k, v in self._conn.execute(
                    f"SELECT {column}, COUNT(*) FROM claims GROUP BY {column} ORDER BY COUNT(*) DESC"
                )
            }

        meta = self._meta()
        return {
            "path": str(self.path),
            "claims": len(self),
            "embedder": meta["embedder"],
            "dim": int(meta["dim"]),
            "index_bytes": int(self.vectors.nbytes),
            "generation": self.generation,
            "verdict": counts("verdict"),
            "language": counts("language"),
            "topic": counts("topic"),
            "publisher": counts("publisher"),
        }


def hubness(vectors: np.ndarray, k: int = 10, reference: int = 8192, seed: int = 0) -> np.ndarray:
    """Mean cosine of each claim to its k nearest other claims.

    Claims near many others ("hubs", e.g. generic political statements) win retrievals
    they should not; retrieval subtracts a share of this (CSLS-style). Measured against at
    most `reference` claims drawn with a fixed seed, so a 100k store costs O(n * 8192).
    """
    n = len(vectors)
    if n < 2:
        return np.zeros(n, dtype=np.float32)
    ref = vectors if n <= reference else vectors[np.random.default_rng(seed).choice(n, reference, replace=False)]
    kk = min(k, len(ref) - 1)
    out = np.empty(n, dtype=np.float32)
    for start in range(0, n, 2048):
        sims = vectors[start : start + 2048] @ ref.T
        sims[sims > 0.99999] = -np.inf  # the claim itself (or an exact duplicate)
        top = -np.partition(-sims, kk - 1, axis=1)[:, :kk]
        top[~np.isfinite(top)] = np.nan
        out[start : start + 2048] = np.nan_to_num(np.nanmean(top, axis=1), nan=0.0)
    return out


_LEXICAL_WORD = re.compile(r"[^\W_]{3,}")
_LEXICAL_STOP = frozenset(
    """the and for that with this from are was were has have had not but you your they their them its
    his her she him who what when where which why how all any can will would should could been being
    into about after before over than then there these those our out just also more most some such only
    very said says say new does did via amp""".split()
)


def _backfill_lexical(conn: sqlite3.Connection) -> None:
    """Index the claims of a store made before the lexical index existed (one transaction)."""
    indexed = conn.execute("SELECT COUNT(*) FROM claims_fts").fetchone()[0]
    stored = conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0]
    if indexed != stored:
        with _transaction(conn):
            conn.execute("DELETE FROM claims_fts")
            conn.execute("INSERT INTO claims_fts (rowid, text) SELECT slot, text FROM claims")


def _topk(sims: np.ndarray, k: int, scores: np.ndarray, slots: np.ndarray, candidates: np.ndarray | None):
    kk = min(k, sims.shape[1])
    part = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
    part_scores = np.take_along_axis(sims, part, axis=1)
    order = np.argsort(-part_scores, axis=1)
    top = np.take_along_axis(part, order, axis=1)
    scores[:, :kk] = np.take_along_axis(part_scores, order, axis=1)
    slots[:, :kk] = top if candidates is None else candidates[top]
    return scores, slots


def _row(claim: Claim) -> tuple:
    return (
        claim.id, claim.text, VerdictLabel(claim.verdict).value, claim.verdict_original, claim.language,
        claim.topic, claim.url, claim.publisher, claim.date,
    )


def _claim(row: Sequence) -> Claim:
    data = dict(zip(_COLUMNS, row))
    data["verdict"] = VerdictLabel(data["verdict"])
    return Claim(**data)


def _save(path: Path, array: np.ndarray) -> None:
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as fh:
        np.save(fh, array)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


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
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")


def export_rows(store: ClaimStore) -> list[dict[str, object]]:
    """Every claim as a plain dict (for JSONL export)."""
    return [json.loads(c.model_dump_json()) for c in store.iter_claims()]


__all__ = ["ClaimStore", "IngestReport"]
