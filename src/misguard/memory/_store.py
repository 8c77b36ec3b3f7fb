"""Shared memory stores: one SQL schema, an embedded SQLite backend and a PostgreSQL backend.

Nothing is ever deleted. Every record keeps all its versions (`memory_versions`), repair
changes a record's status or writes a new version, reuse edges are diluted or marked
pruned, and each of these actions is an `audit_log` row that `rollback(seq)` can undo
(the undo is itself audited).

Tables:
    memories          the head (current version and status) of every record
    memory_versions   every version of every record, append-only
    reuse_edges       the memory propagation graph: src memory -> dst memory or decision
    audit_log         quarantine / release / rewrite / dilute / prune / rollback
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..errors import ConfigError, MissingExtraError, StoreError
from ..registry import Registry
from ..types import MemoryRecord, Provenance

if TYPE_CHECKING:
    from ._verify import MemoryVerifyReport

Status = Literal["active", "quarantined"]
DstKind = Literal["memory", "decision"]

#: Record fields a rewrite may change (identity and provenance never change).
REWRITABLE = frozenset({"state", "context", "action", "tags", "success", "reward", "confidence", "embedding"})


@dataclass(frozen=True)
class ReuseEdge:
    """One reuse event: `src` memory was retrieved to produce `dst` (a memory or a decision)."""

    id: int
    src: str
    dst: str
    dst_kind: str
    agent: str
    time: float
    weight: float
    pruned: bool


@dataclass(frozen=True)
class AuditEntry:
    """One repair action, with the state before and after so it can be rolled back."""

    seq: int
    time: float
    action: str
    target: str
    before: dict[str, Any]
    after: dict[str, Any]
    actor: str
    reason: str
    rolled_back: bool


class MemoryStore(ABC):
    """The interface every shared-memory backend implements (contract-tested for each)."""

    backend: str = ""

    @abstractmethod
    def add_many(self, records: Sequence[MemoryRecord], embeddings: np.ndarray | None = None) -> None:
        """Insert new records atomically (all or none); an existing id is a StoreError.

        `embeddings` (n, d), when given, is stored instead of `record.embedding` (bulk loads).
        """

    def add(self, record: MemoryRecord) -> None:
        self.add_many([record])

    @abstractmethod
    def get(self, record_id: str) -> MemoryRecord:
        """The current version of a record (quarantined ones included)."""

    @abstractmethod
    def versions(self, record_id: str) -> list[MemoryRecord]:
        """Every version of a record, oldest first."""

    @abstractmethod
    def status(self, record_id: str) -> Status: ...

    @abstractmethod
    def ids(self, status: Status | None = None) -> list[str]:
        """Record ids in insertion order, optionally only those with `status`."""

    @abstractmethod
    def iter_records(self, status: Status | None = None, batch: int = 5000) -> Iterator[MemoryRecord]: ...

    def records_with_embeddings(self, status: Status | None = None) -> tuple[list[MemoryRecord], np.ndarray]:
        """The records that have an embedding, in insertion order, and their embeddings as one
        (n, d) float32 array; the records themselves come without it (`embedding=None`).

        For scoring a whole store: it skips building a list of floats per record and
        converting it back to an array, which costs more than the rest of the read.
        """
        records, vectors = [], []
        for r in self.iter_records(status):
            if r.embedding is not None:
                vectors.append(np.asarray(r.embedding, dtype=np.float32))
                records.append(r.model_copy(update={"embedding": None}))
        return records, (np.stack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32))

    @abstractmethod
    def count(self, status: Status | None = None) -> int: ...

    @abstractmethod
    def record_reuses(self, edges: Iterable[tuple[str, str, DstKind, str]]) -> None:
        """Record reuse edges `(src, dst, dst_kind, agent)` atomically."""

    def record_reuse(self, src: str, dst: str, dst_kind: DstKind, agent: str) -> None:
        self.record_reuses([(src, dst, dst_kind, agent)])

    @abstractmethod
    def edges(self, include_pruned: bool = False) -> list[ReuseEdge]: ...

    @abstractmethod
    def quarantine(self, record_id: str, reason: str, actor: str = "repair") -> int:
        """Exclude a record from retrieval (kept, versioned, audited); returns the audit seq."""

    def quarantine_many(self, record_ids: Sequence[str], reasons: Sequence[str], actor: str = "repair") -> list[int]:
        """`quarantine` for each record in one transaction (the same audit entries, in order)."""
        if len(record_ids) != len(reasons):
            raise StoreError(f"{len(record_ids)} records but {len(reasons)} reasons")
        with self.batch():
            return [self.quarantine(rid, why, actor) for rid, why in zip(record_ids, reasons)]

    @abstractmethod
    def release(self, record_id: str, reason: str, actor: str = "repair") -> int: ...

    @abstractmethod
    def rewrite(self, record_id: str, changes: dict[str, Any], reason: str, actor: str = "repair") -> int:
        """Write a new version with `changes` applied; the old version stays in history."""

    @abstractmethod
    def set_edge_weight(self, edge_id: int, weight: float, reason: str, actor: str = "repair") -> int:
        """Dilute (or restore) a reuse edge's weight."""

    @abstractmethod
    def prune_edge(self, edge_id: int, reason: str, actor: str = "repair") -> int:
        """Mark an edge pruned (it stays in the table)."""

    def prune_edges(self, edge_ids: Sequence[int], reason: str, actor: str = "repair") -> list[int]:
        """`prune_edge` for each edge in one transaction (the same audit entries, in order)."""
        with self.batch():
            return [self.prune_edge(e, reason, actor) for e in edge_ids]

    @abstractmethod
    def audit_log(self) -> list[AuditEntry]: ...

    @abstractmethod
    def rollback(self, seq: int, actor: str = "operator") -> int:
        """Undo audit entry `seq`, restoring its `before` state; returns the new audit seq."""

    @abstractmethod
    def close(self) -> None: ...

    def verify(self) -> MemoryVerifyReport:
        """Check that records, history, reuse edges and the audit log agree (`_verify`)."""
        raise StoreError(f"the {self.backend or type(self).__name__} memory store cannot be verified")

    def batch(self) -> contextlib.AbstractContextManager[None]:
        """Run the operations inside the `with` block as one transaction: all or none.

        A repair plan, or a batch of records with their reuse edges, then commits once
        instead of once per operation. Backends without transactions run them one by one.
        """
        return contextlib.nullcontext()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _sqlalchemy() -> Any:
    try:
        import sqlalchemy
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingExtraError("sqlalchemy", "memory", "the shared memory store") from exc
    return sqlalchemy


def _record_row(record: MemoryRecord, vector: np.ndarray | None = None) -> dict[str, Any]:
    if vector is not None:
        emb = np.asarray(vector, dtype=np.float32).tobytes()
    else:
        emb = None if record.embedding is None else np.asarray(record.embedding, dtype=np.float32).tobytes()
    return {
        "id": record.id,
        "version": record.version,
        "agent": record.provenance.agent,
        "time": record.provenance.time,
        "channel": record.provenance.channel,
        "state": record.state,
        "context": record.context,
        "action": record.action,
        "tags": json.dumps(record.tags),
        "success": record.success,
        "reward": record.reward,
        "confidence": record.confidence,
        "embedding": emb,
    }


def _row_record(row: Any, embedding: bool = True) -> MemoryRecord:
    # A row holds a MemoryRecord's fields in typed columns, so the record is built without
    # re-validating: validation cost ~100 us per record (most of it the embedding's floats)
    # on every read of a large store.
    m = row._mapping
    emb = None if not embedding or m["embedding"] is None else np.frombuffer(m["embedding"], dtype=np.float32).tolist()
    return MemoryRecord.model_construct(
        id=m["id"],
        version=m["version"],
        state=m["state"],
        context=m["context"],
        action=m["action"],
        tags=json.loads(m["tags"]),
        provenance=Provenance.model_construct(agent=m["agent"], time=m["time"], channel=m["channel"]),
        success=m["success"],
        reward=m["reward"],
        confidence=m["confidence"],
        embedding=emb,
    )


class SQLMemoryStore(MemoryStore):
    """SQLAlchemy Core implementation shared by the SQLite and PostgreSQL backends."""

    def __init__(self, url: str, *, backend: str) -> None:
        sa = _sqlalchemy()
        self.backend = backend
        self._location = self._safe(url)  # for reports: never a password
        self._sa = sa
        self._local = threading.local()  # the open batch's connection, per thread
        md = sa.MetaData()
        record_cols = lambda: [  # noqa: E731 - the same columns in two tables
            sa.Column("agent", sa.String(128), nullable=False),
            sa.Column("time", sa.Float, nullable=False),
            sa.Column("channel", sa.String(64), nullable=False),
            sa.Column("state", sa.Text, nullable=False),
            sa.Column("context", sa.Text, nullable=False),
            sa.Column("action", sa.Text, nullable=False),
            sa.Column("tags", sa.Text, nullable=False),
            sa.Column("success", sa.Float),
            sa.Column("reward", sa.Float),
            sa.Column("confidence", sa.Float),
            sa.Column("embedding", sa.LargeBinary),
        ]
        self._mem = sa.Table(
            "memories", md,
            sa.Column("seq", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
            sa.Column("id", sa.String(64), nullable=False, unique=True),
            sa.Column("version", sa.Integer, nullable=False),
            sa.Column("status", sa.String(16), nullable=False, default="active"),
            *record_cols(),
        )
        self._ver = sa.Table(
            "memory_versions", md,
            sa.Column("id", sa.String(64), primary_key=True),
            sa.Column("version", sa.Integer, primary_key=True),
            sa.Column("written", sa.Float, nullable=False),
            *record_cols(),
        )
        self._edges = sa.Table(
            "reuse_edges", md,
            sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
            sa.Column("src", sa.String(64), nullable=False, index=True),
            sa.Column("dst", sa.String(64), nullable=False, index=True),
            sa.Column("dst_kind", sa.String(16), nullable=False),
            sa.Column("agent", sa.String(128), nullable=False),
            sa.Column("time", sa.Float, nullable=False),
            sa.Column("weight", sa.Float, nullable=False, default=1.0),
            sa.Column("pruned", sa.Boolean, nullable=False, default=False),
        )
        self._audit = sa.Table(
            "audit_log", md,
            sa.Column("seq", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
            sa.Column("time", sa.Float, nullable=False),
            sa.Column("action", sa.String(32), nullable=False),
            sa.Column("target", sa.String(64), nullable=False),
            sa.Column("before", sa.Text, nullable=False),
            sa.Column("after", sa.Text, nullable=False),
            sa.Column("actor", sa.String(64), nullable=False),
            sa.Column("reason", sa.Text, nullable=False),
            sa.Column("rolled_back", sa.Boolean, nullable=False, default=False),
        )
        try:
            self._engine = self._make_engine(url)
            with self._begin() as conn:
                md.create_all(conn, checkfirst=True)
        except sa.exc.IntegrityError:
            # Two processes creating the schema at once: the loser finds the tables there.
            pass
        except sa.exc.SQLAlchemyError as exc:
            raise StoreError(f"cannot open memory store {self._safe(url)}: {exc}") from exc

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        if getattr(self._local, "conn", None) is not None:  # nested: part of the outer batch
            yield
            return
        with self._engine.begin() as conn:
            self._local.conn = conn
            try:
                yield
            finally:
                self._local.conn = None

    def _begin(self) -> contextlib.AbstractContextManager[Any]:
        """A write transaction, or the open batch's (committed when the batch ends)."""
        conn = getattr(self._local, "conn", None)
        return self._engine.begin() if conn is None else contextlib.nullcontext(conn)

    def _connect(self) -> contextlib.AbstractContextManager[Any]:
        """A connection for reads; inside a batch its own, so reads see the batch's writes."""
        conn = getattr(self._local, "conn", None)
        return self._engine.connect() if conn is None else contextlib.nullcontext(conn)

    @staticmethod
    def _safe(url: str) -> str:
        head, sep, tail = url.partition("@")
        return ("***@" + tail) if sep else head

    def _make_engine(self, url: str) -> Any:
        return self._sa.create_engine(url, future=True)

    # --- records -------------------------------------------------------------------------
    def add_many(self, records: Sequence[MemoryRecord], embeddings: np.ndarray | None = None) -> None:
        if not records:
            return
        if embeddings is not None and len(embeddings) != len(records):
            raise StoreError(f"{len(records)} records but {len(embeddings)} embeddings")
        rows = [_record_row(r, None if embeddings is None else embeddings[i]) for i, r in enumerate(records)]
        now = time.time()
        cols = list(rows[0])
        try:
            with self._begin() as conn:
                self._insert(conn, self._mem, [*cols, "status"], [(*r.values(), "active") for r in rows])
                self._insert(conn, self._ver, [*cols, "written"], [(*r.values(), now) for r in rows])
        except self._sa.exc.IntegrityError as exc:
            raise StoreError(f"memory record id already stored ({len(rows)} records rejected, none written)") from exc

    @staticmethod
    def _insert(conn: Any, table: Any, columns: list[str], rows: list[tuple[Any, ...]]) -> None:
        """Bulk insert through the driver's executemany: SQLAlchemy's per-row parameter
        processing cost more than the insert itself on the hot write path of agents."""
        mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
        sql = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join([mark] * len(columns))})"
        conn.exec_driver_sql(sql, rows)

    def _head(self, conn: Any, record_id: str) -> Any:
        row = conn.execute(self._mem.select().where(self._mem.c.id == record_id)).first()
        if row is None:
            raise StoreError(f"no memory record {record_id!r}")
        return row

    def get(self, record_id: str) -> MemoryRecord:
        with self._connect() as conn:
            return _row_record(self._head(conn, record_id))

    def versions(self, record_id: str) -> list[MemoryRecord]:
        with self._connect() as conn:
            rows = conn.execute(
                self._ver.select().where(self._ver.c.id == record_id).order_by(self._ver.c.version)
            ).all()
        if not rows:
            raise StoreError(f"no memory record {record_id!r}")
        return [_row_record(r) for r in rows]

    def status(self, record_id: str) -> Status:
        with self._connect() as conn:
            return self._head(conn, record_id)._mapping["status"]

    def ids(self, status: Status | None = None) -> list[str]:
        q = self._sa.select(self._mem.c.id).order_by(self._mem.c.seq)
        if status is not None:
            q = q.where(self._mem.c.status == status)
        with self._connect() as conn:
            return [r[0] for r in conn.execute(q)]

    def iter_records(self, status: Status | None = None, batch: int = 5000) -> Iterator[MemoryRecord]:
        last = 0
        while True:
            q = self._mem.select().where(self._mem.c.seq > last).order_by(self._mem.c.seq).limit(batch)
            if status is not None:
                q = q.where(self._mem.c.status == status)
            with self._connect() as conn:
                rows = conn.execute(q).all()
            if not rows:
                return
            last = rows[-1]._mapping["seq"]
            yield from (_row_record(r) for r in rows)

    def records_with_embeddings(self, status: Status | None = None) -> tuple[list[MemoryRecord], np.ndarray]:
        q = self._mem.select().where(self._mem.c.embedding.is_not(None)).order_by(self._mem.c.seq)
        if status is not None:
            q = q.where(self._mem.c.status == status)
        with self._connect() as conn:
            rows = conn.execute(q).all()
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        blobs = [r._mapping["embedding"] for r in rows]
        if len({len(b) for b in blobs}) > 1:
            raise StoreError("records with embeddings of different dimensions; read them with iter_records")
        emb = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(rows), -1).copy()
        return [_row_record(r, embedding=False) for r in rows], emb

    def count(self, status: Status | None = None) -> int:
        q = self._sa.select(self._sa.func.count()).select_from(self._mem)
        if status is not None:
            q = q.where(self._mem.c.status == status)
        with self._connect() as conn:
            return int(conn.execute(q).scalar_one())

    # --- propagation graph ----------------------------------------------------------------
    def record_reuses(self, edges: Iterable[tuple[str, str, DstKind, str]]) -> None:
        now = time.time()
        rows = [(s, d, k, a, now, 1.0, False) for s, d, k, a in edges]
        if rows:
            with self._begin() as conn:
                self._insert(conn, self._edges, ["src", "dst", "dst_kind", "agent", "time", "weight", "pruned"], rows)

    def edges(self, include_pruned: bool = False) -> list[ReuseEdge]:
        c = self._edges.c  # selected in ReuseEdge's field order: rows unpack positionally
        q = self._sa.select(c.id, c.src, c.dst, c.dst_kind, c.agent, c.time, c.weight, c.pruned).order_by(c.id)
        if not include_pruned:
            q = q.where(c.pruned.is_(False))
        with self._connect() as conn:
            return [ReuseEdge(*r) for r in conn.execute(q)]

    # --- repair actions, all audited -----------------------------------------------------
    def _log(self, conn: Any, action: str, target: str, before: dict, after: dict, actor: str, reason: str) -> int:
        res = conn.execute(
            self._audit.insert().values(
                time=time.time(), action=action, target=target, before=json.dumps(before),
                after=json.dumps(after), actor=actor, reason=reason, rolled_back=False,
            )
        )
        return int(res.inserted_primary_key[0])

    def _log_many(self, conn: Any, entries: list[tuple[str, str, dict, dict, str]], actor: str) -> list[int]:
        """`_log` for many (action, target, before, after, reason) entries; seqs in entry order."""
        if not entries:
            return []
        now = time.time()
        rows = [{"time": now, "action": a, "target": t, "before": json.dumps(b), "after": json.dumps(af), "actor": actor,
                 "reason": why, "rolled_back": False} for a, t, b, af, why in entries]
        stmt = self._audit.insert().returning(self._audit.c.seq, sort_by_parameter_order=True)
        return [int(seq) for seq in conn.execute(stmt, rows).scalars()]

    def _current(self, conn: Any, column: Any, key: Any, wanted: Sequence[Any], what: str) -> dict[Any, Any]:
        """`column` of the rows whose `key` is in `wanted` (in chunks: drivers cap parameters)."""
        found: dict[Any, Any] = {}
        unique = list(dict.fromkeys(wanted))
        for s in range(0, len(unique), 500):
            found.update(conn.execute(self._sa.select(key, column).where(key.in_(unique[s:s + 500]))).all())
        missing = [w for w in unique if w not in found]
        if missing:
            raise StoreError(f"no {what} {missing[0]!r}")
        return found

    def quarantine_many(self, record_ids: Sequence[str], reasons: Sequence[str], actor: str = "repair") -> list[int]:
        if len(record_ids) != len(reasons):
            raise StoreError(f"{len(record_ids)} records but {len(reasons)} reasons")
        if not record_ids:
            return []
        with self._begin() as conn:
            status = self._current(conn, self._mem.c.status, self._mem.c.id, record_ids, "memory record")
            entries = []
            for rid, why in zip(record_ids, reasons):
                entries.append(("quarantine", rid, {"status": status[rid]}, {"status": "quarantined"}, why))
                status[rid] = "quarantined"
            conn.execute(self._mem.update().where(self._mem.c.id == self._sa.bindparam("rid")).values(status="quarantined"),
                         [{"rid": rid} for rid in dict.fromkeys(record_ids)])
            return self._log_many(conn, entries, actor)

    def prune_edges(self, edge_ids: Sequence[int], reason: str, actor: str = "repair") -> list[int]:
        if not len(edge_ids):
            return []
        ids = [int(e) for e in edge_ids]
        with self._begin() as conn:
            pruned = self._current(conn, self._edges.c.pruned, self._edges.c.id, ids, "reuse edge")
            entries = []
            for e in ids:
                entries.append(("prune", str(e), {"pruned": bool(pruned[e])}, {"pruned": True}, reason))
                pruned[e] = True
            conn.execute(self._edges.update().where(self._edges.c.id == self._sa.bindparam("eid")).values(pruned=True),
                         [{"eid": e} for e in dict.fromkeys(ids)])
            return self._log_many(conn, entries, actor)

    def _set_status(self, record_id: str, status: Status, action: str, reason: str, actor: str) -> int:
        with self._begin() as conn:
            old = self._head(conn, record_id)._mapping["status"]
            conn.execute(self._mem.update().where(self._mem.c.id == record_id).values(status=status))
            return self._log(conn, action, record_id, {"status": old}, {"status": status}, actor, reason)

    def quarantine(self, record_id: str, reason: str, actor: str = "repair") -> int:
        return self._set_status(record_id, "quarantined", "quarantine", reason, actor)

    def release(self, record_id: str, reason: str, actor: str = "repair") -> int:
        return self._set_status(record_id, "active", "release", reason, actor)

    def _write_version(self, conn: Any, head: Any, changes: dict[str, Any]) -> int:
        rec = _row_record(head)
        new_version = int(conn.execute(
            self._sa.select(self._sa.func.max(self._ver.c.version)).where(self._ver.c.id == rec.id)
        ).scalar_one()) + 1
        new = rec.model_copy(update={**changes, "version": new_version})
        MemoryRecord.model_validate(new.model_dump())  # reject ill-typed changes before writing
        row = _record_row(new)
        conn.execute(self._ver.insert().values(**row, written=time.time()))
        conn.execute(self._mem.update().where(self._mem.c.id == rec.id).values(**{k: v for k, v in row.items() if k != "id"}))
        return new_version

    def rewrite(self, record_id: str, changes: dict[str, Any], reason: str, actor: str = "repair") -> int:
        bad = set(changes) - REWRITABLE
        if bad:
            raise ConfigError(f"cannot rewrite {sorted(bad)}; rewritable fields: {sorted(REWRITABLE)}")
        with self._begin() as conn:
            head = self._head(conn, record_id)
            old_version = head._mapping["version"]
            new_version = self._write_version(conn, head, changes)
            shown = {k: v for k, v in changes.items() if k != "embedding"}
            return self._log(conn, "rewrite", record_id, {"version": old_version},
                             {"version": new_version, "changes": shown}, actor, reason)

    def _edge(self, conn: Any, edge_id: int) -> Any:
        row = conn.execute(self._edges.select().where(self._edges.c.id == edge_id)).first()
        if row is None:
            raise StoreError(f"no reuse edge {edge_id}")
        return row._mapping

    def set_edge_weight(self, edge_id: int, weight: float, reason: str, actor: str = "repair") -> int:
        with self._begin() as conn:
            old = self._edge(conn, edge_id)["weight"]
            conn.execute(self._edges.update().where(self._edges.c.id == edge_id).values(weight=float(weight)))
            return self._log(conn, "dilute", str(edge_id), {"weight": old}, {"weight": float(weight)}, actor, reason)

    def prune_edge(self, edge_id: int, reason: str, actor: str = "repair") -> int:
        with self._begin() as conn:
            old = self._edge(conn, edge_id)["pruned"]
            conn.execute(self._edges.update().where(self._edges.c.id == edge_id).values(pruned=True))
            return self._log(conn, "prune", str(edge_id), {"pruned": bool(old)}, {"pruned": True}, actor, reason)

    def audit_log(self) -> list[AuditEntry]:
        with self._connect() as conn:
            rows = conn.execute(self._audit.select().order_by(self._audit.c.seq)).all()
        out = []
        for r in rows:
            m = dict(r._mapping)
            m["before"], m["after"] = json.loads(m["before"]), json.loads(m["after"])
            out.append(AuditEntry(**m))
        return out

    def rollback(self, seq: int, actor: str = "operator") -> int:
        with self._begin() as conn:
            row = conn.execute(self._audit.select().where(self._audit.c.seq == seq)).first()
            if row is None:
                raise StoreError(f"no audit entry {seq}")
            entry = row._mapping
            if entry["rolled_back"]:
                raise StoreError(f"audit entry {seq} is already rolled back")
            before, target, action = json.loads(entry["before"]), entry["target"], entry["action"]
            if action in ("quarantine", "release"):
                conn.execute(self._mem.update().where(self._mem.c.id == target).values(status=before["status"]))
            elif action == "rewrite":
                # Restoring an old version writes it again as the newest one: history only grows.
                old = conn.execute(self._ver.select().where(
                    (self._ver.c.id == target) & (self._ver.c.version == before["version"]))).first()
                old_rec = _row_record(old)
                self._write_version(conn, self._head(conn, target), {k: getattr(old_rec, k) for k in REWRITABLE})
            elif action == "dilute":
                conn.execute(self._edges.update().where(self._edges.c.id == int(target)).values(weight=before["weight"]))
            elif action == "prune":
                conn.execute(self._edges.update().where(self._edges.c.id == int(target)).values(pruned=before["pruned"]))
            else:
                raise StoreError(f"audit entry {seq} ({action}) cannot be rolled back")
            conn.execute(self._audit.update().where(self._audit.c.seq == seq).values(rolled_back=True))
            return self._log(conn, "rollback", str(seq), {"action": action}, before, actor, f"rollback of {seq}")

    def close(self) -> None:
        self._engine.dispose()

    def verify(self) -> MemoryVerifyReport:
        from ._verify import verify_memory_store

        return verify_memory_store(self, location=self._location)


class SQLiteMemoryStore(SQLMemoryStore):
    """The embedded default: one SQLite file (WAL, busy timeout) shared by local processes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        super().__init__(f"sqlite:///{self.path}", backend="sqlite")

    def _make_engine(self, url: str) -> Any:
        sa = self._sa
        engine = sa.create_engine(url, future=True, connect_args={"timeout": 60})

        @sa.event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            # WAL lets readers run while another process writes; writers queue on the lock.
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=60000")
            cur.close()

        return engine


class PostgresMemoryStore(SQLMemoryStore):
    """Shared memory for agents on several hosts: PostgreSQL through psycopg 3."""

    def __init__(self, url: str) -> None:
        try:
            import psycopg  # noqa: F401
        except ImportError as exc:
            raise MissingExtraError("psycopg", "postgres", "the PostgreSQL memory store") from exc
        if url.startswith("postgresql://") or url.startswith("postgres://"):
            url = "postgresql+psycopg://" + url.split("://", 1)[1]
        super().__init__(url, backend="postgres")


MEMORY_BACKENDS: Registry[MemoryStore] = Registry("memory store backend")


@MEMORY_BACKENDS.register("sqlite", extra="memory", network=False)
def _sqlite(location: str) -> MemoryStore:
    return SQLiteMemoryStore(location)


@MEMORY_BACKENDS.register("postgres", extra="postgres", network=True)
def _postgres(location: str) -> MemoryStore:
    return PostgresMemoryStore(location)


def open_store(location: str | Path) -> MemoryStore:
    """Open a store: a `postgresql://...` URL, or a SQLite file path (`sqlite:///` optional)."""
    text = str(location)
    if text.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        return MEMORY_BACKENDS.build("postgres", text)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///"):]
    if "://" in text:
        raise ConfigError(f"unknown memory store location {text!r}; use a file path or postgresql://...")
    return MEMORY_BACKENDS.build("sqlite", text)
