"""ClaimStore: fact-checked claims in SQLite plus a persisted vector index beside it.

Layout of a store directory:

    claims.sqlite          records (one row per claim id) + a `meta` table + `claims_fts`,
                           an FTS5 (BM25) index of the claim texts, rowid = slot
    index-<gen>.npy        float32 (n, dim) embeddings, row i = slot i
    topics-<gen>.npy       int16 topic id per slot (-1 = none), for topic-restricted search
    hubs-<gen>.npy         float32 per slot: how central the claim is (see `hubness`)
    ann-<gen>.usearch      from `ANN_THRESHOLD` claims on: the approximate (HNSW) index
    delta-<gen>.npy        in a large store, a small write's new and changed vectors, with
    deltaslots-<gen>.npy   their slots: the generation keeps an earlier one's `index-` and
                           `ann-` files as its base (see `Layout`) and searches the delta
                           exactly, until the delta outgrows `DELTA_LIMIT` and a write
                           merges it into a new base

The `meta` table names the current generation. An ingest embeds first (no lock held),
then takes SQLite's write lock, catches up with the generation on disk when another handle
or process wrote meanwhile (its claims are kept, nothing is lost), writes the new index
files, commits SQLite (which switches the generation) and deletes older files: a crash at
any point leaves either the old or the new store, never a mix. An index is loaded inside a
read transaction, so the files of the generation it names cannot be replaced meanwhile.
Search is exact (one matrix product) below `ANN_THRESHOLD` claims; from there on it asks the
approximate index for candidates and scores them exactly (`index="auto"`, the default;
`"exact"` and `"approximate"` force one).
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ..embed import Embedder
from ..errors import ConfigError, StoreError
from ..types import Claim
from ._ann import ANN_EF, ANN_THRESHOLD, AnnIndex, ann_file
from ._lexical import LexicalIndex
from ._storage import (
    _COLUMNS,
    _TOPIC_IDS,
    DELTA_LIMIT,
    IndexProblem,
    Layout,
    _claim,
    _connect,
    _set_meta,
    _snapshot,
    _ThreadConnections,
    _transaction,
    hubness,
    read_index_files,
)
from ._store_write import IngestReport, StoreWrites
from ._verdicts import FALSE_LIKE

if TYPE_CHECKING:
    from ._integrity import VerifyReport

log = logging.getLogger("misguard.claims")
T = TypeVar("T")

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
#: Most postings a lexical query reads: of those rarest words, the rarest are kept while the
#: claims holding them add up to at most this many (the rarest always). A word held by
#: thousands of claims adds little to BM25 but every one of its claims must be scored: in a
#: store of a million claims that was 70% of a check. Stores of ~10,000 claims never reach it.
LEXICAL_POSTINGS = 5_000
#: How to search: see `ClaimStore.open`.
INDEX_MODES = ("auto", "exact", "approximate")
#: Most candidates asked of the approximate index for a flaggable-only search; a store whose
#: flaggable share needs more has few flaggable claims, which exact search covers fast.
MAX_CANDIDATES = 512


class ClaimStore(StoreWrites):
    """Fact-checked claims with exact vector search. Open with `ClaimStore.open`.

    Any number of handles, in any number of processes, may read and write one store
    directory: each write catches up with the generation on disk under SQLite's write lock,
    and `refresh` / `consistent` bring a reader up to date.
    """

    #: The approximate index's library (the `scale` extra).
    ann_library = "usearch"
    #: From how many claims on a store keeps (and `auto` searches) an approximate index.
    ann_threshold = ANN_THRESHOLD
    #: Candidates the approximate index returns per search, all scored exactly.
    ann_ef = ANN_EF
    #: Most vectors in a generation's delta (see `DELTA_LIMIT`).
    delta_limit = DELTA_LIMIT

    def __init__(self, path: Path, embedder: Embedder, conn: sqlite3.Connection, *, load: bool = True,
                 index: str = "auto") -> None:
        if index not in INDEX_MODES:
            raise ConfigError(f"index={index!r}: use one of {', '.join(INDEX_MODES)}")
        self.path = path
        self.embedder = embedder
        self.index_mode = index
        self._ann: AnnIndex | None = None
        self._connections = _ThreadConnections(path / "claims.sqlite", conn)
        self._blas: Any = None  # threadpoolctl controller, made on first search (False: absent)
        self._room: np.ndarray | None = None  # vectors with spare rows for adds (see `_appended`)
        self.reloads = 0
        """How often this handle reloaded its index because another handle had written."""
        self._set_state(Layout(-1, 0, -1, 0), np.zeros((0, embedder.dim), np.float32), np.zeros(0, np.int16),
                        np.zeros(0, np.float32), np.zeros(0, bool), np.zeros(0, np.int64))
        if not load:
            return
        try:
            self._load_index()
        except IndexProblem as exc:
            if not exc.rebuildable:
                self.close()
                raise
            # A missing or stale index is rebuilt from the records, which are the truth; a
            # corrupt one is left for `misguard claims verify --repair` to look at first.
            log.warning("%s; rebuilding it from the records (re-embedding them)", exc)
            from ._integrity import rebuild_index

            try:
                rebuild_index(self, reason=str(exc))
            except BaseException:
                self.close()
                raise

    @classmethod
    def _unloaded(cls, path: Path, embedder: Embedder) -> ClaimStore:
        """A handle that has not loaded the index (to rebuild a broken one)."""
        try:
            conn = _connect(path / "claims.sqlite")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {path / 'claims.sqlite'}: {exc}") from None
        return cls(path, embedder, conn, load=False)

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, embedder: Embedder, *, create: bool = False, index: str = "auto") -> ClaimStore:
        """Open the store in `path`; `create=True` makes an empty one when absent. A missing
        or stale vector index is rebuilt from the records (with a warning in the log).
        `index`: how to search, `auto` (approximate from `ANN_THRESHOLD` claims on, exact
        below), `exact`, or `approximate` (built in memory when the store has none)."""
        if index not in INDEX_MODES:
            raise ConfigError(f"index={index!r}: use one of {', '.join(INDEX_MODES)}")
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
            if not meta:
                with _transaction(conn):  # two processes may create the store at once
                    if not conn.execute("SELECT COUNT(*) FROM meta").fetchone()[0]:
                        _set_meta(conn, schema=str(SCHEMA_VERSION), embedder=embedder.spec,
                                  dim=str(embedder.dim), generation="0", count="0")
                    meta = dict(conn.execute("SELECT key, value FROM meta"))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{db} is not a readable claim store: {exc}; check it with: "
                             f"misguard claims verify --db {path}") from None
        if meta.get("embedder") != embedder.spec:
            conn.close()
            raise ConfigError(
                f"The store at {path} was built with embedder {meta.get('embedder')!r}, not "
                f"{embedder.spec!r}: its vectors cannot be compared with this encoder's. Use "
                f"--embedder {meta.get('embedder')}, or re-embed the store with the configured one: "
                f"misguard --embedder {embedder.spec} claims reembed --db {path}"
            )
        _backfill_lexical(conn)
        return cls(path, embedder, conn, index=index)

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
        """Load the generation the records name, with its files, in one read transaction: a
        writer cannot commit (and so cannot delete these files) until it ends."""
        with _snapshot(self._conn):
            meta = self._meta()
            layout, dim = Layout.of(meta), int(meta["dim"])
            count = layout.count
            if count == 0:
                vectors = np.zeros((0, dim), dtype=np.float32)
                topic_ids = np.zeros(0, dtype=np.int16)
                hubs = np.zeros(0, dtype=np.float32)
                delta = np.zeros(0, dtype=np.int64)
            else:
                vectors, topic_ids, hubs, delta = read_index_files(self.path, layout, dim)
            flags = self._read_flags(count)
            ann = self._read_ann(meta.get("ann", ""), layout, dim)
        self._set_state(layout, vectors, topic_ids, hubs, flags, delta)
        if isinstance(vectors.base, np.memmap):
            self._room = vectors.base  # the mapping's spare rows take this handle's next adds
        if ann is None and self.index_mode == "approximate" and count:
            ann = AnnIndex.build(self.ann_library, vectors)
        self._set_ann(ann)

    def _reload_ann(self) -> None:
        """After a failed write: this generation's approximate index, from its file again."""
        self._ann = None
        if self.generation >= 0 and len(self):
            self._set_ann(self._read_ann(self._meta().get("ann", ""), self.layout, self.vectors.shape[1]))

    def _set_ann(self, ann: AnnIndex | None) -> None:
        self._ann = ann
        if ann is not None:
            ann.set_ef(self.ann_ef)

    def _read_ann(self, library: str, layout: Layout, dim: int) -> AnnIndex | None:
        """The approximate index of `layout`'s base (inside the read transaction of its load).
        A missing or unreadable one is not fatal: search is then exact, with a warning."""
        if not library or self.index_mode == "exact":
            return None
        if self.index_mode == "approximate" and library != self.ann_library:
            return None  # built in memory with this handle's library
        file = ann_file(self.path, layout.base, library)
        try:
            return AnnIndex.load(file, library, dim, layout.base_count)
        except (OSError, ValueError, RuntimeError, ImportError) as exc:  # ImportError: the extra is missing
            log.warning("the approximate index of %s is missing or unreadable (%s: %s); searching exactly. "
                        "The next write makes it again, or: misguard claims verify --db %s --repair",
                        self.path, file.name, exc, self.path)
            return None

    def _current_ann(self) -> AnnIndex | None:
        """This generation's approximate index, also when this handle searches exactly."""
        if self._ann is None and self.index_mode == "exact":
            library = self._meta().get("ann", "")
            if library:
                try:
                    return AnnIndex.load(ann_file(self.path, self.layout.base, library), library,
                                         self.vectors.shape[1], self.layout.base_count)
                except (OSError, ValueError, RuntimeError):
                    return None
        return self._ann

    def _read_flags(self, count: int) -> np.ndarray:
        """Which slots hold a false-like verdict (only those can make a text flagged)."""
        flags = np.zeros(count, dtype=bool)
        marks = ",".join("?" * len(FALSE_LIKE))
        for (slot,) in self._conn.execute(
            f"SELECT slot FROM claims WHERE verdict IN ({marks})", [v.value for v in FALSE_LIKE]
        ):
            if 0 <= slot < count:
                flags[slot] = True
        return flags

    def _set_state(self, layout: Layout, vectors: np.ndarray, topic_ids: np.ndarray, hubs: np.ndarray,
                   flags: np.ndarray, delta: np.ndarray) -> None:
        self.layout = layout
        self.generation = layout.generation
        self.vectors = vectors
        #: Slots whose vectors are not in the base's approximate index (or changed since),
        #: and their vectors, contiguous: every approximate search scores them exactly.
        self.delta_slots = delta
        self.delta_vectors = np.ascontiguousarray(vectors[delta])
        self.topic_ids = topic_ids
        self.hubs = hubs
        self.flaggable = flags
        self._blocks: dict[tuple[int, int, bool], tuple[np.ndarray, np.ndarray]] = {}
        self._document_frequency: dict[str, int] | None = None  # of the lexical index, loaded on first use
        self._lexical: LexicalIndex | None = None  # BM25 in memory, made on the first lexical search
        self._languages: frozenset[str] | None = None

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    def stored_generation(self) -> int:
        """The generation committed on disk: it differs from `generation` once another
        handle or process has written (`refresh` catches up)."""
        return int(self._conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])

    def refresh(self) -> bool:
        """Reload the index when another handle or process wrote since; True if it did."""
        if self.stored_generation() == self.generation:
            return False
        self._load_index()
        self.reloads += 1
        return True

    def consistent(self, read: Callable[[], T], *, on_reload: Callable[[], None] | None = None,
                   attempts: int = 2) -> T:
        """Run `read` (searches and row reads of this store) so that all it sees is one
        generation, the latest: refresh, run, and run again if a writer committed meanwhile
        (every write moves the generation on), whether the run returned or failed. After
        `attempts` such races the last run holds a read lock instead, so writers wait for
        that one run. `on_reload` is called after each reload (e.g. to drop caches)."""
        return read_consistently(self, read, on_reload=on_reload, attempts=attempts, last_run=_snapshot(self._conn))

    def verify(self, *, repair: bool = False, sample: int = 16) -> VerifyReport:
        """Check the store on disk (`verify_store`); with `repair`, rebuild a broken index
        from the records, then reload it."""
        from ._integrity import verify_store

        report = verify_store(self.path, self.embedder, repair=repair, sample=sample)
        if report.repaired:
            self.refresh()
        return report

    def reading(self) -> AbstractContextManager[None]:
        """Hold a read transaction on this thread: the records do not change inside it
        (writers wait for it to end). `consistent` is the lock-free way."""
        return _snapshot(self._conn)

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

    def search_flaggable_and_every(self, queries: np.ndarray, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
        """Top-k slots of each query row among the flaggable claims and among every claim
        -> (flaggable slots (m, k), every slots (m, k)): what `search` returns with and
        without `flaggable_only`. On the exact index one product serves both (the
        flaggable claims' scores are columns of it), not one per list."""
        with self.blas_single_thread():
            if self._ann is not None:
                return (self._search(queries, k, topics=None, flaggable_only=True)[1],
                        self._search(queries, k, topics=None, flaggable_only=False)[1])
            queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
            m = queries.shape[0]
            flaggable = np.full((m, k), -1, dtype=np.int64)
            every = np.full((m, k), -1, dtype=np.int64)
            if len(self) == 0:
                return flaggable, every
            scores = np.full((m, k), -np.inf, dtype=np.float32)
            sims = queries @ self.vectors.T
            _topk(sims, k, scores, every, None)
            candidates, _ = self._topic_block(None, True)
            if candidates.size:
                _topk(sims[:, candidates], k, scores.copy(), flaggable, candidates)
            return flaggable, every

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
        exact: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        m = queries.shape[0]
        scores = np.full((m, k), -np.inf, dtype=np.float32)
        slots = np.full((m, k), -1, dtype=np.int64)
        if len(self) == 0:
            return scores, slots
        every = flaggable_only and bool(self.flaggable.all())
        ann = self._ann  # once: a write on another thread may replace it meanwhile
        if topics is None and ann is not None and not exact:
            return self._approximate_search(ann, queries, k, flaggable_only=flaggable_only and not every,
                                            scores=scores, slots=slots)
        if topics is None and (not flaggable_only or every):
            sims = queries @ self.vectors.T
            return _topk(sims, k, scores, slots, None)
        if topics is None:
            # The false-rated claims' rows, copied once per generation (not per query).
            candidates, block = self._topic_block(None, True)
            if candidates.size:
                _topk(queries @ block.T, k, scores, slots, candidates)
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

    def _approximate_search(self, ann: AnnIndex, queries: np.ndarray, k: int, *, flaggable_only: bool,
                            scores: np.ndarray, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Candidates from the approximate index, scored exactly. With `flaggable_only` it
        asks for more candidates (in proportion to how few claims are flaggable) and keeps
        the flaggable ones; when those are too few to need the graph (or it finds fewer
        than k), the flaggable claims are searched exactly."""
        n = len(self)
        wanted = k
        if flaggable_only:
            share = max(float(self.flaggable.mean()), 1e-6)
            wanted = int(np.ceil(2 * k / share))
            if wanted > MAX_CANDIDATES:
                return self._search(queries, k, topics=None, flaggable_only=True, exact=True)
        candidates = ann.search(queries, wanted)  # at least `ann_ef` per query
        vectors, flaggable = self.vectors, self.flaggable  # one state, even if a write replaces it
        delta_slots, delta_vectors = self.delta_slots, self.delta_vectors
        if flaggable_only and len(delta_slots):
            keep = flaggable[delta_slots]
            delta_slots, delta_vectors = delta_slots[keep], delta_vectors[keep]
        for i, row in enumerate(candidates):
            row = row[(row >= 0) & (row < n)]  # a concurrent write may add slots this state lacks
            if flaggable_only:
                row = row[flaggable[row]]
            if len(delta_slots):  # the delta is scored whole below (a changed slot once)
                row = row[~np.isin(row, delta_slots)]
            sims = vectors[row] @ queries[i]
            if len(delta_slots):
                row = np.concatenate([row, delta_slots])
                sims = np.concatenate([sims, delta_vectors @ queries[i]])
            if len(row) < k and (flaggable_only or len(row) < n):
                _, exact_slots = self._search(queries[i : i + 1], k, topics=None, flaggable_only=flaggable_only,
                                              exact=True)
                row = exact_slots[0][exact_slots[0] >= 0]
                sims = vectors[row] @ queries[i]
            kk = min(k, len(row))
            order = np.argsort(-sims, kind="stable")[:kk]
            scores[i, :kk], slots[i, :kk] = sims[order], row[order]
        return scores, slots

    def lexical_search(self, text: str, k: int = 20, *, flaggable_only: bool = False) -> list[tuple[int, float]]:
        """Top-k claims for `text` by BM25 over the claim texts (SQLite FTS5's index and
        formula) -> [(slot, score)], best first, score = -bm25 (higher is better). Names,
        numbers and rare words that embeddings blur are what this finds. Words are OR-ed, so
        any shared word can retrieve; the `LEXICAL_TERMS` of the text's words that are
        rarest in the store are used (words no claim has cannot retrieve anything), fewer
        when their claims exceed `LEXICAL_POSTINGS`. Scored in memory (`LexicalIndex`: the
        answer of FTS5's `bm25()`, several times faster), from postings read once per word
        and generation."""
        if k <= 0:
            return []
        terms = self._lexical_terms(text)
        if not terms:
            return []
        wanted = k * 3 if flaggable_only else k
        postings = self._lexical_postings(terms)
        rows = LexicalIndex.top(postings, wanted) if postings is not None else self._fts5_search(terms, wanted)
        out = [(slot, score) for slot, score in rows if slot < len(self.flaggable)]
        if flaggable_only:
            out = [(slot, score) for slot, score in out if self.flaggable[slot]]
        return out[:k]

    def _lexical_terms(self, text: str) -> list[str]:
        """The words of `text` a lexical query ORs, rarest in the store first."""
        frequency = self.document_frequency()
        words = set(_LEXICAL_WORD.findall(text.lower())) - _LEXICAL_STOP
        terms = sorted((w for w in words if w in frequency), key=lambda w: (frequency[w], w))
        return _within_postings(terms[:LEXICAL_TERMS], frequency) if terms else []

    def _lexical_postings(self, terms: list[str]) -> list[tuple[np.ndarray, np.ndarray]] | None:
        """The weighed postings of `terms` from this generation's in-memory lexical index,
        made or completed from the FTS5 tables; None when the store on disk has moved on
        from this handle's generation (FTS5 itself then answers, as it reads the latest)."""
        conn = self._conn
        index = self._lexical  # once: a write on another thread may replace it meanwhile
        held = index.held(terms) if index is not None and index.generation == self.generation else {}
        if len(held) < len(terms):
            with _snapshot(conn):
                generation = self.generation
                if self.stored_generation() != generation:
                    return None
                if index is None or index.generation != generation:  # (a write on another thread moved it on)
                    index = self._lexical = LexicalIndex.read(conn, generation)
                    held = {}
                for term in terms:
                    if term not in held:
                        held[term] = index.hold(conn, term)
        return [held[t] for t in terms]

    def _fts5_search(self, terms: list[str], wanted: int) -> list[tuple[int, float]]:
        """BM25 by SQLite FTS5 itself -> [(slot, -bm25)], best first: what `LexicalIndex`
        reproduces in memory (and the answer when this handle's generation is behind)."""
        query = " OR ".join(f'"{t}"' for t in terms)
        try:
            rows = self._conn.execute(
                "SELECT rowid, bm25(claims_fts) FROM claims_fts WHERE claims_fts MATCH ? ORDER BY rank LIMIT ?",
                (query, wanted),
            ).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"The lexical index of {self.path} failed: {exc}") from None
        return [(int(slot), -float(score)) for slot, score in rows]

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

    def _topic_block(self, topic_id: int | None, flaggable_only: bool) -> tuple[np.ndarray, np.ndarray]:
        """(slots, contiguous vectors) of one topic (None: every topic), cached per
        generation: routing then multiplies only those rows instead of masking the whole
        index per query."""
        key = (self.generation, -2 if topic_id is None else topic_id, flaggable_only)
        if key not in self._blocks:
            mask = np.ones(len(self), dtype=bool) if topic_id is None else self.topic_ids == topic_id
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

    def page(self, offset: int, limit: int) -> list[Claim]:
        """Claims `offset` to `offset + limit` in the store's order (slot order)."""
        return list(self.get_slots(range(offset, min(len(self), offset + limit))).values())

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
            "approximate_index": self._ann.library if self._ann is not None else None,
            "generation": self.generation,
            "verdict": counts("verdict"),
            "language": counts("language"),
            "topic": counts("topic"),
            "publisher": counts("publisher"),
        }


_LEXICAL_WORD = re.compile(r"[^\W_]{3,}")
_LEXICAL_STOP = frozenset(
    ["the", "and", "for", "that", "with", "this", "from", "are", "was", "were", "has", "have", "had", "not", "but", "you", "your", "they", "their", "them", "its", "his", "her", "she", "him", "who", "what", "when", "where", "which", "why", "how", "all", "any", "can", "will", "would", "should", "could", "been", "being", "into", "about", "after", "before", "over", "than", "then", "there", "these", "those", "our", "out", "just", "also", "more", "most", "some", "such", "only", "very", "said", "says", "say", "new", "does", "did", "via", "amp"]
)


def _within_postings(terms: list[str], frequency: dict[str, int]) -> list[str]:
    """The leading `terms` (rarest first) whose claims add up to at most `LEXICAL_POSTINGS`;
    the first always."""
    kept: list[str] = []
    postings = 0
    for term in terms:
        postings += frequency[term]
        if kept and postings > LEXICAL_POSTINGS:
            break
        kept.append(term)
    return kept


def read_consistently(store: Any, read: Callable[[], T], *, on_reload: Callable[[], None] | None, attempts: int,
                      last_run: AbstractContextManager[object]) -> T:
    """`consistent` of any store with `refresh`, `generation` and `stored_generation`: run
    `read` again while a writer moves the generation on meanwhile; after `attempts` races the
    last run goes inside `last_run` (a read lock where the store has one)."""
    for _ in range(attempts):
        if store.refresh() and on_reload is not None:
            on_reload()
        try:
            result = read()
        except Exception:
            # Rows read under an index a writer has since replaced may be missing (a
            # removal moved the slots): then the error is the race's, not the read's.
            if store.stored_generation() != store.generation:
                continue
            raise
        if store.stored_generation() == store.generation:
            return result
    with last_run:
        if store.refresh() and on_reload is not None:
            on_reload()
        return read()


def _backfill_lexical(conn: sqlite3.Connection) -> None:
    """Index the claims of a store made before the lexical index existed (one transaction)."""
    if _lexical_complete(conn):
        return
    with _transaction(conn):
        if not _lexical_complete(conn):  # another process may have done it meanwhile
            conn.execute("DELETE FROM claims_fts")
            conn.execute("INSERT INTO claims_fts (rowid, text) SELECT slot, text FROM claims")


def _lexical_complete(conn: sqlite3.Connection) -> bool:
    indexed = conn.execute("SELECT COUNT(*) FROM claims_fts").fetchone()[0]
    stored = conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0]
    return bool(indexed == stored)


def _topk(sims: np.ndarray, k: int, scores: np.ndarray, slots: np.ndarray, candidates: np.ndarray | None):
    """Fill each row's k highest columns of `sims` into `scores`/`slots`, best first (equal
    scores: the lower column first). `candidates` maps columns to slots."""
    m, n = sims.shape
    kk = min(k, n)
    columns = _top_columns(sims, kk)
    values = np.take_along_axis(sims, columns, axis=1)
    order = np.lexsort((columns, -values), axis=-1)
    top = np.take_along_axis(columns, order, axis=1)
    scores[:, :kk] = np.take_along_axis(values, order, axis=1)
    slots[:, :kk] = top if candidates is None else candidates[top]
    return scores, slots


#: Columns per block of `_top_columns`' first pass.
_TOPK_BLOCK = 64


def _top_columns(sims: np.ndarray, kk: int) -> np.ndarray:
    """The columns of each row's kk highest values, in no order. On a wide matrix (a store
    of thousands of claims) it selects among the kk blocks of columns with the highest
    maxima only: a row's kk highest values all lie in them (a value outside them has kk
    block maxima above it), and selecting in a row of 10,000 columns cost most of a
    batch's retrieval."""
    m, n = sims.shape
    blocks = n // _TOPK_BLOCK
    if blocks <= 4 * kk:
        return np.argpartition(sims, n - kk, axis=1)[:, n - kk :]
    whole = blocks * _TOPK_BLOCK
    maxima = sims[:, :whole].reshape(m, blocks, _TOPK_BLOCK).max(axis=2)
    best = np.argpartition(maxima, blocks - kk, axis=1)[:, blocks - kk :]
    columns = (best[:, :, None] * _TOPK_BLOCK + np.arange(_TOPK_BLOCK)).reshape(m, -1)
    if whole < n:  # the columns after the last whole block are always looked at
        columns = np.concatenate([columns, np.broadcast_to(np.arange(whole, n), (m, n - whole))], axis=1)
    values = np.take_along_axis(sims, columns, axis=1)
    keep = np.argpartition(values, values.shape[1] - kk, axis=1)[:, values.shape[1] - kk :]
    return np.take_along_axis(columns, keep, axis=1)


def export_rows(store: ClaimStore) -> list[dict[str, object]]:
    """Every claim as a plain dict (for JSONL export)."""
    return [json.loads(c.model_dump_json()) for c in store.iter_claims()]


__all__ = ["ANN_THRESHOLD", "INDEX_MODES", "ClaimStore", "IndexProblem", "IngestReport", "hubness"]
