"""A claim store in a Qdrant collection: one store shared by any number of service replicas
and writers, on one machine (`qdrant:DIR`, Qdrant's embedded local mode) or a Qdrant server
or cluster (`qdrant+http://HOST:6333/COLLECTION`), with the same code.

Each claim is one point. Its id is a hash of the claim id, so adding a claim again updates
it in place (idempotent, keyed like `ClaimStore`); that id is the claim's "slot" for the
guard. The payload keeps the claim's record and provenance (text, verdict, original
rating, language, topic, url, publisher, date), whether it can flag a text (`flaggable`:
a false-like verdict) and its hubness (`hub`, as the SQLite store computes it). Each point
has two vectors: the embedder's passage vector (`dense`, dot product: the same scores as
the exact SQLite store) and a sparse vector of its words (`words`, BM25-like with the
engine's IDF) for the guard's lexical candidates. The collection's metadata records the
embedder, its width and a generation token that every write changes: a reader that sees it
change drops what it cached (the guard's verdict cache included).

Searches run in the engine: exact in embedded mode, HNSW on a server (`index="exact"`
forces exact search there too); the false-rated-only search is a payload filter.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import numpy as np

from ..embed import Embedder
from ..errors import ConfigError, MissingExtraError, StoreError
from ..types import Claim, VerdictLabel
from ._ann import ANN_EF
from ._backends import STORE_BACKENDS
from ._storage import _COLUMNS, HUBNESS_REFERENCE, _row, hubness, hubness_of
from ._store import _LEXICAL_STOP, _LEXICAL_WORD, INDEX_MODES
from ._store_write import IngestReport, _Embeddings, _IngestPlan
from ._verdicts import FALSE_LIKE

log = logging.getLogger("misguard.claims")
T = TypeVar("T")

#: Spec prefixes: an embedded store in a directory, or a Qdrant server / cluster.
PREFIXES = ("qdrant:", "qdrant+http://", "qdrant+https://")
#: The collection of a `qdrant:DIR` store, and of a server URL that names none.
DEFAULT_COLLECTION = "claims"
#: An API key for a Qdrant server (never part of the spec, which is printed and logged).
API_KEY_ENV = "MISGUARD_QDRANT_API_KEY"
SCHEMA_VERSION = 1
DENSE, WORDS = "dense", "words"
#: Points per write request.
BATCH = 256
#: BM25's term-frequency saturation and length normalisation, as SQLite's FTS5 `bm25()`.
BM25_K1, BM25_B = 1.2, 0.75
#: Payload fields the engine filters or counts on (indexed on a server).
_KEYWORDS = ("verdict", "language", "topic", "publisher")
_CACHE_LIMIT = 200_000


@dataclass(frozen=True)
class QdrantLocation:
    """Where a Qdrant store lives: a local directory (embedded) or a server URL."""

    spec: str
    collection: str
    path: Path | None = None
    url: str | None = None

    @classmethod
    def parse(cls, spec: str) -> QdrantLocation:
        if spec.startswith(("qdrant+http://", "qdrant+https://")):
            url = spec[len("qdrant+"):]
            parts = urlsplit(url)
            if not parts.hostname:
                raise ConfigError(f"{spec!r} names no host; use qdrant+http://HOST:6333/COLLECTION")
            name = parts.path.strip("/") or DEFAULT_COLLECTION
            if "/" in name:
                raise ConfigError(f"{spec!r}: the path after the host is the collection, one name")
            return cls(spec, name, url=f"{parts.scheme}://{parts.netloc}")
        if spec.startswith("qdrant:") and spec[len("qdrant:"):].strip():
            return cls(spec, DEFAULT_COLLECTION, path=Path(spec[len("qdrant:"):]).expanduser())
        raise ConfigError(f"{spec!r} is not a Qdrant store; use qdrant:DIR or qdrant+http://HOST:6333/COLLECTION")


def point_id(claim_id: str) -> int:
    """The point (and slot) of a claim: 63 bits of a hash of its id."""
    return int.from_bytes(hashlib.blake2b(claim_id.encode("utf-8"), digest_size=8).digest(), "big") >> 1


def _word_index(word: str) -> int:
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=4).digest(), "big") >> 1


def _words(text: str) -> Counter[str]:
    """The words the lexical index holds (as the SQLite store's lexical search reads them)."""
    return Counter(w for w in _LEXICAL_WORD.findall(text.lower()) if w not in _LEXICAL_STOP)


def _client_module() -> Any:
    try:
        import qdrant_client
    except ImportError as exc:
        raise MissingExtraError("qdrant-client", "qdrant", "a claim store in Qdrant") from exc
    return qdrant_client


@dataclass
class _Point:
    vector: np.ndarray
    claim: Claim
    hub: float
    flaggable: bool


class _Column:
    """A read-only, array-like view of one per-claim value indexed by slot, as the guard
    reads `ClaimStore.vectors` / `hubs` / `flaggable`; points are fetched on demand."""

    def __init__(self, store: QdrantClaimStore, field: str, empty: Callable[[], np.ndarray]) -> None:
        self._store, self._field, self._empty = store, field, empty

    def __getitem__(self, key: Any) -> Any:
        if np.ndim(key) == 0:
            return getattr(self._store._points_of([int(key)])[int(key)], self._field)
        slots = [int(s) for s in np.asarray(key).ravel()]
        if not slots:
            return self._empty()
        points = self._store._points_of(slots)
        return np.array([getattr(points[s], self._field) for s in slots])

    def all(self) -> bool:
        """Every claim can flag a text (only meaningful for `flaggable`)."""
        return self._store._all_flaggable()


class QdrantClaimStore:
    """Fact-checked claims in a Qdrant collection, read and written like a `ClaimStore`
    (what `ClaimGuard`, `claims add|pull|stats|export` and the service use). Open with
    `QdrantClaimStore.open` or `open_claim_store("qdrant:...")`."""

    backend = "qdrant"

    def __init__(self, location: QdrantLocation, embedder: Embedder, client: Any, *, index: str = "auto") -> None:
        self.location = location
        self.embedder = embedder
        self.index_mode = index
        self.client = client
        self.models = _client_module().models
        #: Where the guard keeps its topic centroids: the store directory in embedded mode.
        self.path = location.path
        self.reloads = 0
        self._blas: Any = None
        self.generation = self.stored_generation()
        self._forget()
        self.vectors = _Column(self, "vector", lambda: np.zeros((0, embedder.dim), np.float32))
        self.hubs = _Column(self, "hub", lambda: np.zeros(0, np.float32))
        self.flaggable = _Column(self, "flaggable", lambda: np.zeros(0, bool))

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def open(cls, spec: str, embedder: Embedder, *, create: bool = False, index: str = "auto") -> QdrantClaimStore:
        """Open the store `spec` names (`qdrant:DIR`, `qdrant+http(s)://HOST:PORT/COLLECTION`);
        `create=True` makes an empty one when absent. A store made with another embedder
        is refused. The server's API key, if any, is the `qdrant_api_key` setting
        (`MISGUARD_QDRANT_API_KEY`)."""
        if index not in INDEX_MODES:
            raise ConfigError(f"index={index!r}: use one of {', '.join(INDEX_MODES)}")
        location = QdrantLocation.parse(spec)
        qdrant_client = _client_module()
        if location.path is not None and not location.path.is_dir() and not create:
            raise StoreError(f"No claim store at {spec}. Create one with: misguard claims add --db {spec} FILE")
        try:
            if location.path is not None:
                client = qdrant_client.QdrantClient(path=str(location.path))
            else:
                # The version check runs on a thread and only warns; an old server shows instead
                # as a collection without metadata (below), with an error that says so.
                client = qdrant_client.QdrantClient(url=location.url, api_key=_api_key(), check_compatibility=False)
        except RuntimeError as exc:  # embedded mode: another process holds the directory
            raise StoreError(f"Cannot open {spec}: {str(exc).rstrip('.')}. An embedded store serves one process; share one "
                             "between processes through a Qdrant server (qdrant+http://HOST:6333/COLLECTION)") from None
        try:
            cls._prepare(client, location, embedder, create)
        except BaseException:
            client.close()
            raise
        return cls(location, embedder, client, index=index)

    @staticmethod
    def _prepare(client: Any, location: QdrantLocation, embedder: Embedder, create: bool) -> None:
        """Make the collection when asked and absent; refuse one of another embedder."""
        models = _client_module().models
        name, spec = location.collection, location.spec
        try:
            exists = client.collection_exists(name)
        except Exception as exc:  # noqa: BLE001 - connection errors of every transport
            raise StoreError(f"Cannot reach the Qdrant store {spec}: {exc}") from None
        if not exists:
            if not create:
                raise StoreError(f"No claim store at {spec}. Create one with: misguard claims add --db {spec} FILE")
            try:
                client.create_collection(
                    name,
                    vectors_config={DENSE: models.VectorParams(size=embedder.dim, distance=models.Distance.DOT)},
                    sparse_vectors_config={WORDS: models.SparseVectorParams(modifier=models.Modifier.IDF)},
                    metadata={"schema": SCHEMA_VERSION, "embedder": embedder.spec, "dim": embedder.dim,
                              "generation": 0},
                )
            except Exception:  # another writer may have made it meanwhile
                if not client.collection_exists(name):
                    raise
            if location.url is not None:  # embedded mode scans payloads; a server indexes them
                for key in _KEYWORDS:
                    client.create_payload_index(name, key, models.PayloadSchemaType.KEYWORD)
                client.create_payload_index(name, "flaggable", models.PayloadSchemaType.BOOL)
        meta = client.get_collection(name).config.metadata or {}
        if "embedder" not in meta:
            raise StoreError(f"{spec} is not a misguard claim store: its collection's metadata names no embedder "
                             "(a Qdrant server older than the client, 1.20, may not keep collection metadata)")
        if meta.get("embedder") != embedder.spec:
            raise ConfigError(
                f"The store at {spec} was built with embedder {meta.get('embedder')!r}, not {embedder.spec!r}: "
                f"its vectors cannot be compared with this encoder's. Use --embedder {meta.get('embedder')}, or add "
                f"the claims again to a new collection with the configured one")

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> QdrantClaimStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- generations ---------------------------------------------------------------------

    def stored_generation(self) -> int:
        """The token the last write left in the collection's metadata."""
        meta = self.client.get_collection(self.location.collection).config.metadata or {}
        return int(meta.get("generation", 0))

    def _forget(self) -> None:
        self._points: dict[int, _Point] = {}
        self._count: int | None = None
        self._every_flaggable: bool | None = None
        self._languages: frozenset[str] | None = None

    def refresh(self) -> bool:
        """Drop what this handle cached when another handle or process wrote; True if so."""
        stored = self.stored_generation()
        if stored == self.generation:
            return False
        self.generation = stored
        self._forget()
        self.reloads += 1
        return True

    def consistent(self, read: Callable[[], T], *, on_reload: Callable[[], None] | None = None,
                   attempts: int = 2) -> T:
        """Run `read` again when a writer changed the store while it ran (as
        `ClaimStore.consistent`). Qdrant has no read lock: after `attempts` races the last
        run's result is returned as it is."""
        from ._store import read_consistently

        return read_consistently(self, read, on_reload=on_reload, attempts=attempts, last_run=nullcontext())

    def reading(self) -> AbstractContextManager[None]:
        return nullcontext()

    def blas_single_thread(self) -> AbstractContextManager[object]:
        from ._store import ClaimStore

        return ClaimStore.blas_single_thread(self)  # type: ignore[arg-type]

    def __len__(self) -> int:
        if self._count is None:
            self._count = int(self.client.count(self.location.collection, exact=True).count)
        return self._count

    # -- reading -------------------------------------------------------------------------

    def _filter(self, *, flaggable_only: bool = False, topics: Sequence[str] | None = None) -> Any:
        m = self.models
        # When every claim is false-rated the filter changes nothing (and embedded mode
        # evaluates a filter point by point in Python): leave it out, as ClaimStore does.
        must = ([m.FieldCondition(key="flaggable", match=m.MatchValue(value=True))]
                if flaggable_only and not self._all_flaggable() else [])
        if topics is not None:
            # Claims without a topic are always searched (never unreachable), as in ClaimStore.
            must.append(m.Filter(should=[m.FieldCondition(key="topic", match=m.MatchAny(any=list(topics))),
                                         m.IsEmptyCondition(is_empty=m.PayloadField(key="topic"))]))
        return m.Filter(must=must) if must else None

    def _params(self) -> Any:
        if self.location.url is None:
            return None  # embedded mode always searches exactly
        if self.index_mode == "exact":
            return self.models.SearchParams(exact=True)
        return self.models.SearchParams(hnsw_ef=ANN_EF)

    def search(self, queries: np.ndarray, k: int = 5, *, topics: Sequence[Sequence[str]] | None = None,
               flaggable_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Top-k dot product (cosine of unit vectors) for each query row -> (scores (m, k),
        slots (m, k)); slot -1 = none. Filters as `ClaimStore.search`, in the engine."""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        m = queries.shape[0]
        scores = np.full((m, k), -np.inf, dtype=np.float32)
        slots = np.full((m, k), -1, dtype=np.int64)
        if m == 0 or k <= 0:
            return scores, slots
        requests = [
            self.models.QueryRequest(query=q.tolist(), using=DENSE, limit=k, params=self._params(), with_payload=True,
                                     with_vector=[DENSE],
                                     filter=self._filter(flaggable_only=flaggable_only,
                                                         topics=None if topics is None else topics[i]))
            for i, q in enumerate(queries)
        ]
        for i, answer in enumerate(self.client.query_batch_points(self.location.collection, requests)):
            for j, hit in enumerate(answer.points[:k]):
                scores[i, j], slots[i, j] = hit.score, int(hit.id)
                self._remember(int(hit.id), hit.payload, hit.vector)
        return scores, slots

    def search_flaggable_and_every(self, queries: np.ndarray, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
        """Top-k slots among the flaggable claims and among every claim, as
        `ClaimStore.search_flaggable_and_every` (two filtered queries in the engine)."""
        return self.search(queries, k, flaggable_only=True)[1], self.search(queries, k)[1]

    def lexical_search(self, text: str, k: int = 20, *, flaggable_only: bool = False) -> list[tuple[int, float]]:
        """Top-k claims sharing words with `text`, by BM25-like scores over the sparse word
        vectors (the engine weighs each word by its IDF) -> [(slot, score)], best first."""
        words = _words(text)
        if k <= 0 or not words:
            return []
        indices = sorted({_word_index(w) for w in words})
        query = self.models.SparseVector(indices=indices, values=[1.0] * len(indices))
        # Points come with their payload and vector: the guard reads both for every candidate.
        answer = self.client.query_points(self.location.collection, query=query, using=WORDS, limit=k,
                                          query_filter=self._filter(flaggable_only=flaggable_only), with_payload=True,
                                          with_vectors=[DENSE])
        hits = [hit for hit in answer.points if hit.score > 0]
        for hit in hits:
            self._remember(int(hit.id), hit.payload, hit.vector)
        return [(int(hit.id), float(hit.score)) for hit in hits]

    def languages(self) -> frozenset[str]:
        if self._languages is None:
            self._languages = frozenset(str(v) for v in self._facet("language"))
        return self._languages

    def _facet(self, key: str, flaggable: bool | None = None) -> dict[Any, int]:
        m = self.models
        condition = None if flaggable is None else m.Filter(
            must=[m.FieldCondition(key="flaggable", match=m.MatchValue(value=flaggable))])
        answer = self.client.facet(self.location.collection, key=key, facet_filter=condition, limit=1_000_000,
                                   exact=True)
        return {hit.value: int(hit.count) for hit in answer.hits}

    def _all_flaggable(self) -> bool:
        if self._every_flaggable is None:
            m = self.models
            others = self.client.count(self.location.collection, exact=True, count_filter=m.Filter(
                must=[m.FieldCondition(key="flaggable", match=m.MatchValue(value=False))])).count
            self._every_flaggable = others == 0
        return self._every_flaggable

    def _remember(self, pid: int, payload: Any, vector: Any) -> None:
        if len(self._points) > _CACHE_LIMIT:
            self._points.clear()
        vec = vector[DENSE] if isinstance(vector, dict) else vector
        self._points[pid] = _Point(np.asarray(vec, dtype=np.float32), _claim_of(payload), float(payload.get("hub", 0.0)),
                                   bool(payload.get("flaggable", False)))

    def _points_of(self, slots: Iterable[int]) -> dict[int, _Point]:
        """The points of `slots` (cached per generation); unknown slots are left out."""
        wanted = list(dict.fromkeys(int(s) for s in slots if s >= 0))
        missing = [s for s in wanted if s not in self._points]
        for i in range(0, len(missing), 1000):
            for point in self.client.retrieve(self.location.collection, missing[i : i + 1000], with_payload=True,
                                              with_vectors=[DENSE]):
                self._remember(int(point.id), point.payload, point.vector)
        return {s: self._points[s] for s in wanted if s in self._points}

    def get_slots(self, slots: Iterable[int]) -> dict[int, Claim]:
        return {s: p.claim for s, p in self._points_of(slots).items()}

    def texts_of_slots(self, slots: Sequence[int]) -> dict[int, str]:
        return {s: p.claim.text for s, p in self._points_of(slots).items()}

    def slot_of(self, claim_id: str) -> int | None:
        claim = self.get(claim_id)
        return point_id(claim_id) if claim is not None else None

    def get(self, claim_id: str) -> Claim | None:
        found = self._points_of([point_id(claim_id)])
        claim = next(iter(found.values())).claim if found else None
        return claim if claim is not None and claim.id == claim_id else None

    def iter_claims(self) -> Iterable[Claim]:
        offset = None
        while True:
            points, offset = self.client.scroll(self.location.collection, limit=1000, offset=offset,
                                                with_payload=True, with_vectors=False)
            for point in points:
                yield _claim_of(point.payload)
            if offset is None:
                return

    def page(self, offset: int, limit: int) -> list[Claim]:
        """Claims `offset` to `offset + limit` in the store's order (point id order)."""
        answer = self.client.query_points(self.location.collection, limit=limit, offset=offset, with_payload=True)
        return [_claim_of(point.payload) for point in answer.points]

    def stats(self) -> dict[str, object]:
        """Counts by verdict, language, topic and publisher, plus the index size and embedder."""
        n = len(self)
        meta = self.client.get_collection(self.location.collection).config.metadata or {}

        def counts(key: str) -> dict[str, int]:
            found = self._facet(key)
            if sum(found.values()) < n:
                found["(none)"] = n - sum(found.values())
            return dict(sorted(((str(k), v) for k, v in found.items()), key=lambda kv: -kv[1]))

        return {
            "path": self.location.spec,
            "claims": n,
            "embedder": meta.get("embedder"),
            "dim": int(meta.get("dim", self.embedder.dim)),
            "index_bytes": n * self.embedder.dim * 4,
            "approximate_index": None if self.location.url is None or self.index_mode == "exact" else "qdrant (hnsw)",
            "generation": self.generation,
            "verdict": counts("verdict"),
            "language": counts("language"),
            "topic": counts("topic"),
            "publisher": counts("publisher"),
        }

    # -- writing -------------------------------------------------------------------------

    def add(self, claims: Iterable[Claim], *, source: str = "input",
            assign_topics: Callable[[np.ndarray], list[str]] | None = None,
            vectors: dict[str, np.ndarray] | None = None) -> IngestReport:
        """Insert or update claims by id (as `ClaimStore.add`). Everything is embedded before
        anything is written, so a failed embedding writes nothing; the points are then written
        in batches of `BATCH`, so a write cut short midway is completed by running it again."""
        started = time.perf_counter()
        batch: dict[str, Claim] = {}
        for claim in claims:
            batch[claim.id] = claim
        if not batch:
            return IngestReport(0, 0, 0, 0, time.perf_counter() - started)
        self.refresh()
        existing = self._existing(list(batch))
        topic_col = _COLUMNS.index("topic")
        for cid, (_, text, row) in existing.items():
            if not batch[cid].topic and row[topic_col] and text == batch[cid].text:
                batch[cid] = batch[cid].model_copy(update={"topic": row[topic_col]})
        new_ids = [cid for cid in batch if cid not in existing]
        changed = [cid for cid in batch if cid in existing and existing[cid][1] != batch[cid].text]
        plan = _IngestPlan(batch, existing, new_ids, changed)
        prepared = _Embeddings(self, vectors or {}, assign_topics)
        prepared.embed(plan)
        fresh: dict[str, np.ndarray] = {}
        for cid in plan.to_embed:
            vec = prepared.vector(cid, batch[cid].text)
            if vec.shape != (self.embedder.dim,):
                raise StoreError(f"vectors of width {vec.shape[-1]} for a store of width {self.embedder.dim}")
            fresh[cid] = vec
            topic = prepared.topic(cid, batch[cid].text)
            if not batch[cid].topic and topic is not None:
                batch[cid] = batch[cid].model_copy(update={"topic": topic})
        updated = unchanged = 0
        relabelled: list[str] = []
        for cid in batch:
            if cid in existing:
                if cid not in fresh and existing[cid][2] == _row(batch[cid]):
                    unchanged += 1
                    continue
                updated += 1
                if cid not in fresh:
                    relabelled.append(cid)
        hubs = self._hubs_after({point_id(cid): v for cid, v in fresh.items()})
        m = self.models
        average = self._average_length([batch[cid].text for cid in fresh])
        points = [m.PointStruct(id=point_id(cid), vector={DENSE: vec.tolist(), WORDS: _sparse(m, batch[cid].text, average)},
                                payload=_payload(batch[cid], hubs.pop(point_id(cid), 0.0)))
                  for cid, vec in fresh.items()]
        operations = [m.SetPayloadOperation(set_payload=m.SetPayload(payload=_payload(batch[cid]), points=[point_id(cid)]))
                      for cid in relabelled]
        operations += [m.SetPayloadOperation(set_payload=m.SetPayload(payload={"hub": hub}, points=[pid]))
                       for pid, hub in hubs.items()]
        if points or operations:
            self._write(points, operations, source)
        return IngestReport(len(new_ids), updated, unchanged, prepared.embedded, time.perf_counter() - started)

    def remove(self, claim_ids: Iterable[str], *, source: str = "input") -> int:
        """Delete claims by id; returns how many existed."""
        self.refresh()
        gone = [point_id(cid) for cid in self._existing(list(dict.fromkeys(claim_ids)))]
        if not gone:
            return 0
        m = self.models
        hubs = self._hubs_after({pid: None for pid in gone})
        operations = [m.DeleteOperation(delete=m.PointIdsList(points=gone))]
        operations += [m.SetPayloadOperation(set_payload=m.SetPayload(payload={"hub": hub}, points=[pid]))
                       for pid, hub in hubs.items()]
        self._write([], operations, source)
        return len(gone)

    def _average_length(self, texts: list[str]) -> float:
        """BM25's average claim length: measured on the first claims written, then kept in
        the collection's metadata (changing it would leave older points weighed differently)."""
        name = self.location.collection
        meta = self.client.get_collection(name).config.metadata or {}
        if "average_length" not in meta and texts:
            meta["average_length"] = max(1.0, float(np.mean([_length(t) for t in texts])))
            self.client.update_collection(name, metadata={"average_length": meta["average_length"]})
        return float(meta.get("average_length", 1.0))

    def _existing(self, ids: list[str]) -> dict[str, tuple[int, str, tuple]]:
        """Stored claims among `ids`: id -> (slot, text, record row)."""
        found = self._points_of([point_id(c) for c in ids])
        out = {}
        for cid in ids:
            point = found.get(point_id(cid))
            if point is None:
                continue
            if point.claim.id != cid:
                raise StoreError(f"claim ids {cid!r} and {point.claim.id!r} hash to one point of {self.location.spec}; "
                                 "give one of them another id")
            out[cid] = (point_id(cid), point.claim.text, _row(point.claim))
        return out

    def _hubs_after(self, changes: dict[int, np.ndarray | None]) -> dict[int, float]:
        """Hubness after a write that sets (a vector) or deletes (None) these points, as
        `ClaimStore` computes it: for every claim while the store holds at most
        `HUBNESS_REFERENCE` claims (every claim is a reference); above that for the written
        claims only, against a sample of about `HUBNESS_REFERENCE` claims (those of the
        lowest point ids, a uniform sample since ids are hashes). Returns the hubness that
        changed, by point."""
        put = {pid: v for pid, v in changes.items() if v is not None}
        ids, vectors, old, complete = self._scan(HUBNESS_REFERENCE + len(changes))
        keep = [r for r, pid in enumerate(ids) if changes.get(pid, 0) is not None]  # drops the deleted
        ids, vectors, old = [ids[r] for r in keep], vectors[keep], old[keep]
        row = {pid: r for r, pid in enumerate(ids)}
        for pid, vec in put.items():
            if pid in row:
                vectors[row[pid]] = vec
        added = [pid for pid in put if pid not in row]
        if added:
            ids += added
            vectors = np.concatenate([vectors, np.stack([put[pid] for pid in added])])
            old = np.concatenate([old, np.full(len(added), np.nan, dtype=np.float32)])
        if not ids:
            return {}
        if complete and len(ids) <= HUBNESS_REFERENCE:
            new = hubness(vectors)
            return {pid: float(h) for pid, h, was in zip(ids, new, old)
                    if pid in put or not abs(float(h) - float(was)) <= 1e-7}
        written = np.array([r for r, pid in enumerate(ids) if pid in put], dtype=np.int64)
        new = hubness_of(vectors, written) if len(written) else np.zeros(0, np.float32)
        return {ids[r]: float(h) for r, h in zip(written, new)}

    def _scan(self, limit: int) -> tuple[list[int], np.ndarray, np.ndarray, bool]:
        """(ids, vectors, hubness, whether that is every point) of the first `limit` points by id."""
        ids: list[int] = []
        vecs: list[list[float]] = []
        hubs: list[float] = []
        offset = None
        while len(ids) < limit:
            points, offset = self.client.scroll(self.location.collection, limit=min(1000, limit - len(ids)),
                                                offset=offset, with_payload=["hub"], with_vectors=[DENSE])
            for point in points:
                ids.append(int(point.id))
                vecs.append(point.vector[DENSE])
                hubs.append(float(point.payload.get("hub", np.nan)))
            if offset is None:
                break
        vectors = np.asarray(vecs, dtype=np.float32).reshape(len(ids), self.embedder.dim)
        return ids, vectors, np.asarray(hubs, dtype=np.float32), offset is None

    def _write(self, points: list[Any], operations: list[Any], source: str) -> None:
        """Upsert `points`, then run `operations`, `BATCH` at a time; after each request the
        generation token changes, so readers drop what they cached of the points it wrote."""
        name = self.location.collection
        requests = [lambda chunk=points[i : i + BATCH]: self.client.upsert(name, chunk, wait=True)
                    for i in range(0, len(points), BATCH)]
        requests += [lambda chunk=operations[i : i + BATCH]: self.client.batch_update_points(name, chunk, wait=True)
                     for i in range(0, len(operations), BATCH)]
        try:
            for request in requests:
                request()
                self.generation = secrets.randbits(62)
                self.client.update_collection(name, metadata={"generation": self.generation})
        except Exception as exc:  # noqa: BLE001 - every transport's errors
            raise StoreError(f"Could not write {self.location.spec} ({source}): {exc}. Claims are keyed by id: "
                             "running the same write again completes it") from None
        finally:
            self._forget()


def _payload(claim: Claim, hub: float | None = None) -> dict[str, Any]:
    record = dict(zip(_COLUMNS, _row(claim)))
    record["flaggable"] = VerdictLabel(claim.verdict) in FALSE_LIKE
    if hub is not None:
        record["hub"] = float(hub)
    return record


def _claim_of(payload: Any) -> Claim:
    data = {key: payload.get(key) for key in _COLUMNS}
    data["verdict"] = VerdictLabel(data["verdict"])
    return Claim(**data)


def _length(text: str) -> int:
    """A text's length in words as FTS5 counts it (every word, short and common ones too)."""
    return len(_TOKEN.findall(text))


_TOKEN = re.compile(r"[^\W_]+")


def _sparse(models: Any, text: str, average_length: float) -> Any:
    """BM25's document side of each word (the engine multiplies in the word's IDF)."""
    weights: dict[int, float] = {}
    for word, tf in _words(text).items():
        index = _word_index(word)
        weights[index] = weights.get(index, 0.0) + tf
    indices = sorted(weights)
    norm = BM25_K1 * (1 - BM25_B + BM25_B * _length(text) / average_length)
    values = [weights[i] * (BM25_K1 + 1) / (weights[i] + norm) for i in indices]
    return models.SparseVector(indices=indices, values=values)


@STORE_BACKENDS.register("qdrant", prefixes=PREFIXES, extra="qdrant", network=True,
                         help="a Qdrant collection: qdrant:DIR (embedded) or qdrant+http://HOST:6333/COLLECTION")
def _qdrant(spec: str, embedder: Embedder, *, create: bool = False, index: str = "auto") -> QdrantClaimStore:
    return QdrantClaimStore.open(spec, embedder, create=create, index=index)


def _api_key() -> str | None:
    """The server's API key: the environment first (no settings file needed), then the settings."""
    if os.environ.get(API_KEY_ENV):
        return os.environ[API_KEY_ENV]
    from ..config import load_settings

    key = load_settings().qdrant_api_key
    return key.get_secret_value() if key else None


__all__ = ["API_KEY_ENV", "PREFIXES", "QdrantClaimStore", "QdrantLocation", "point_id"]
