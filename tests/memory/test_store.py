"""Store contract: the same tests for SQLite and PostgreSQL (a real server the tests start)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from misguard.errors import ConfigError, StoreError
from misguard.memory import MEMORY_BACKENDS, MemoryStore, open_store
from misguard.types import MemoryRecord, Provenance

pytest.importorskip("sqlalchemy", reason="needs the 'memory' extra")


def _rec(i: int, agent: str = "a1", action: str = "N") -> MemoryRecord:
    return MemoryRecord(id=f"r{i}", state=f"pos={i},0", context="task=t", action=action, tags=["nav"],
                        provenance=Provenance(agent=agent, time=float(i)), confidence=0.8, success=1.0,
                        embedding=[float(i), 1.0, 0.0])


def test_records_roundtrip_and_versions(store_location: str) -> None:
    with open_store(store_location) as store:
        store.add_many([_rec(1), _rec(2, "a2", "S")])
        got = store.get("r2")
        assert (got.action, got.provenance.agent, got.tags, got.version) == ("S", "a2", ["nav"], 1)
        assert got.embedding == pytest.approx([2.0, 1.0, 0.0])
        assert store.ids() == ["r1", "r2"] and store.count() == 2
        seq = store.rewrite("r1", {"action": "E", "confidence": 0.4}, "test")
        assert store.get("r1").action == "E" and store.get("r1").version == 2
        assert [v.action for v in store.versions("r1")] == ["N", "E"]
        store.rollback(seq)
        head = store.get("r1")
        assert head.action == "N" and head.confidence == pytest.approx(0.8)
        assert [v.action for v in store.versions("r1")] == ["N", "E", "N"]  # history only grows


def test_duplicate_insert_is_atomic(store_location: str) -> None:
    with open_store(store_location) as store:
        store.add(_rec(1))
        with pytest.raises(StoreError, match="none written"):
            store.add_many([_rec(5), _rec(1)])
        assert store.ids() == ["r1"]


def test_batch_is_one_transaction(store_location: str) -> None:
    """Operations inside `batch()` commit together, reads inside see them, and an error
    anywhere in the block leaves the store as it was (records, edges, statuses, audit)."""
    with open_store(store_location) as store:
        store.add(_rec(1))
        with store.batch():
            store.add_many([_rec(2), _rec(3)])
            store.record_reuses([("r1", "r2", "memory", "a1")])
            store.quarantine("r1", "test")
            assert store.status("r1") == "quarantined" and store.count() == 3  # reads see the batch
        assert store.ids("active") == ["r2", "r3"] and len(store.edges()) == 1 and len(store.audit_log()) == 1
        with pytest.raises(StoreError, match="none written"):
            with store.batch():
                store.release("r1", "test")
                store.record_reuses([("r2", "r3", "memory", "a1")])
                store.add_many([_rec(4), _rec(2)])  # duplicate id: the whole batch is undone
        assert store.ids() == ["r1", "r2", "r3"] and store.status("r1") == "quarantined"
        assert len(store.edges()) == 1 and len(store.audit_log()) == 1


def test_quarantine_release_rollback_and_audit(store_location: str) -> None:
    with open_store(store_location) as store:
        store.add_many([_rec(i) for i in range(4)])
        q = store.quarantine("r2", "suspicious")
        assert store.status("r2") == "quarantined"
        assert store.ids("active") == ["r0", "r1", "r3"] and store.count("quarantined") == 1
        assert [r.id for r in store.iter_records("active", batch=2)] == ["r0", "r1", "r3"]
        store.rollback(q)
        assert store.status("r2") == "active"
        log = store.audit_log()
        assert [e.action for e in log] == ["quarantine", "rollback"]
        assert log[0].rolled_back and log[0].before == {"status": "active"}
        with pytest.raises(StoreError, match="already rolled back"):
            store.rollback(q)
        with pytest.raises(StoreError):
            store.quarantine("missing", "x")
        with pytest.raises(ConfigError, match="rewritable"):
            store.rewrite("r1", {"provenance": None}, "x")


def test_reuse_edges_dilute_prune_rollback(store_location: str) -> None:
    with open_store(store_location) as store:
        store.add_many([_rec(i) for i in range(3)])
        store.record_reuses([("r0", "r1", "memory", "a1"), ("r1", "r2", "memory", "a2"), ("r2", "decision-9", "decision", "a3")])
        edges = store.edges()
        assert [(e.src, e.dst, e.dst_kind) for e in edges] == [("r0", "r1", "memory"), ("r1", "r2", "memory"), ("r2", "decision-9", "decision")]
        d = store.set_edge_weight(edges[0].id, 0.25, "dilution")
        p = store.prune_edge(edges[1].id, "pruning")
        assert len(store.edges()) == 2 and len(store.edges(include_pruned=True)) == 3
        assert store.edges()[0].weight == pytest.approx(0.25)
        store.rollback(p)
        store.rollback(d)
        assert [e.weight for e in store.edges()] == [1.0, 1.0, 1.0]


def test_bulk_quarantine_and_prune_are_audited_like_single_calls(store_location: str) -> None:
    """`quarantine_many` / `prune_edges` write the entries the one-by-one calls write, in order,
    each undoable; an unknown id rejects the whole call."""
    with open_store(store_location) as store:
        store.add_many([_rec(i) for i in range(4)])
        store.record_reuses([("r0", "r1", "memory", "a1"), ("r1", "r2", "memory", "a1"), ("r2", "r3", "memory", "a1")])
        e = [x.id for x in store.edges()]
        logs = []
        for bulk in (False, True):
            start = len(store.audit_log())
            if bulk:
                seqs = store.quarantine_many(["r2", "r0"], ["why 2", "why 0"], "g") + store.prune_edges([e[2], e[0]], "cut", "g")
            else:
                seqs = [store.quarantine("r2", "why 2", "g"), store.quarantine("r0", "why 0", "g"),
                        store.prune_edge(e[2], "cut", "g"), store.prune_edge(e[0], "cut", "g")]
            new = store.audit_log()[start:]
            assert seqs == [x.seq for x in new]
            assert store.ids("active") == ["r1", "r3"] and [x.src for x in store.edges()] == ["r1"]
            logs.append([(x.action, x.target, x.before, x.after, x.actor, x.reason) for x in new])
            if bulk:
                with pytest.raises(StoreError, match="no memory record"):
                    store.quarantine_many(["r1", "nope"], ["a", "b"])
                with pytest.raises(StoreError, match="no reuse edge"):
                    store.prune_edges([e[1], 999_999], "cut")
                assert store.ids("active") == ["r1", "r3"] and len(store.edges()) == 1 and len(store.audit_log()) == start + 4
            for seq in reversed(seqs):
                store.rollback(seq)
            assert store.count("active") == 4 and len(store.edges()) == 3
        assert logs[0] == logs[1] and len(logs[0]) == 4


def test_records_with_embeddings_match_iter_records(store_location: str) -> None:
    with open_store(store_location) as store:
        store.add_many([_rec(i) for i in range(4)])
        store.add(MemoryRecord.model_construct(**{**_rec(9).__dict__, "embedding": None}))
        store.quarantine("r2", "test")
        for status in (None, "active"):
            records, emb = store.records_with_embeddings(status)
            full = [r for r in store.iter_records(status) if r.embedding is not None]
            assert [r.id for r in records] == [r.id for r in full] and all(r.embedding is None for r in records)
            assert [r.model_dump(exclude={"embedding"}) for r in records] == [r.model_dump(exclude={"embedding"}) for r in full]
            assert emb.dtype == np.float32 and np.array_equal(emb, np.array([r.embedding for r in full], dtype=np.float32))
        assert [r.id for r in store.records_with_embeddings("active")[0]] == ["r0", "r1", "r3"]


def test_bulk_embeddings_argument(store_location: str) -> None:
    with open_store(store_location) as store:
        recs = [MemoryRecord.model_construct(**{**_rec(i).__dict__, "embedding": None}) for i in range(3)]
        store.add_many(recs, embeddings=np.eye(3, dtype=np.float32))
        assert store.get("r1").embedding == [0.0, 1.0, 0.0]
        with pytest.raises(StoreError, match="embeddings"):
            store.add_many([_rec(7)], embeddings=np.eye(2, dtype=np.float32))


WRITER = textwrap.dedent(
    """
    import sys
    from misguard.memory import open_store
    from misguard.types import MemoryRecord, Provenance
    location, name = sys.argv[1], sys.argv[2]
    store = open_store(location)
    for batch in range(20):
        recs = [MemoryRecord(id=f"{name}-{batch}-{i}", state="s", action="a", provenance=Provenance(agent=name),
                             embedding=[1.0, 0.0]) for i in range(10)]
        store.add_many(recs)
        store.record_reuses([(r.id, f"decision-{name}", "decision", name) for r in recs])
        store.quarantine(recs[0].id, "writer test")
    store.close()
    print("ok")
    """
)


def test_two_writer_processes(store_location: str) -> None:
    open_store(store_location).close()  # schema first, as a deployment would
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, store_location, name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in ("w1", "w2")]
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        assert out.strip() == "ok"
    with open_store(store_location) as store:
        assert store.count() == 400 and store.count("quarantined") == 40
        assert len(store.edges()) == 400 and len(store.audit_log()) == 40
        assert store.get("w2-19-9").provenance.agent == "w2"


def test_backend_registry_walk(tmp_path) -> None:
    assert set(MEMORY_BACKENDS.names()) == {"sqlite", "postgres"}
    for entry in MEMORY_BACKENDS:
        assert {"extra", "network"} <= set(entry.metadata)
    store = MEMORY_BACKENDS.build("sqlite", str(tmp_path / "x.db"))
    assert isinstance(store, MemoryStore) and store.backend == "sqlite"
    store.close()
    assert open_store(f"sqlite:///{tmp_path / 'y.db'}").backend == "sqlite"
    with pytest.raises(ConfigError, match="unknown memory store"):
        open_store("redis://localhost")
