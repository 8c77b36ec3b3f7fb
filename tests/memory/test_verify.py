"""`MemoryStore.verify` on SQLite and PostgreSQL: a store used through its API verifies;
each kind of damage (a change that bypassed the audit log, a lost version, a dangling
edge, a half-applied repair) is named."""

from __future__ import annotations

import pytest

pytest.importorskip("sqlalchemy", reason="needs the 'memory' extra")

from typer.testing import CliRunner  # noqa: E402

from misguard.cli.main import app  # noqa: E402
from misguard.memory import open_store  # noqa: E402
from misguard.types import MemoryRecord, Provenance  # noqa: E402


def _rec(i: int, agent: str = "a1", action: str = "N") -> MemoryRecord:
    return MemoryRecord(id=f"r{i}", state=f"pos={i},0", context="task=t", action=action, tags=["nav"],
                        provenance=Provenance(agent=agent, time=float(i)), confidence=0.8, success=1.0,
                        embedding=[float(i), 1.0, 0.0])


def used_store(location: str):
    """A store through every operation its API has, rollbacks included."""
    store = open_store(location)
    store.add_many([_rec(i, action="NS"[i % 2]) for i in range(6)])
    store.record_reuses([("r0", "r1", "memory", "a1"), ("r1", "r2", "memory", "a2"), ("r2", "plan-1", "decision", "a3"),
                         ("r3", "r4", "memory", "a1")])
    edges = [e.id for e in store.edges()]
    with store.batch():
        store.quarantine_many(["r1", "r2"], ["flagged", "flagged"])
        rewrite = store.rewrite("r3", {"action": "E", "confidence": 0.3}, "reconstruction")
        store.set_edge_weight(edges[0], 0.4, "dilution")
        store.prune_edges([edges[1], edges[3]], "pruning")
    store.rollback(rewrite)
    store.release("r2", "false alarm")
    store.rollback(store.quarantine("r5", "test"))
    store.rewrite("r4", {"confidence": 0.5}, "dilution")
    return store


def failed(report) -> set[str]:
    return {c.name for c in report.problems}


def test_a_store_used_through_its_api_verifies(store_location):
    with used_store(store_location) as store:
        report = store.verify()
        assert report.ok, report.problems
        assert [c.name for c in report.checks] == ["database", "heads", "versions", "embeddings", "edges", "audit", "replay"]
        assert (report.records, report.edges) == (6, 4) and report.audit_entries == 11


def tamper(store, sql: str) -> None:
    with store._engine.begin() as conn:
        conn.exec_driver_sql(sql)


@pytest.mark.parametrize("sql, check, words", [
    ("UPDATE memories SET status = 'quarantined' WHERE id = 'r0'", "replay", "status quarantined, the log says active"),
    ("UPDATE memories SET action = 'W' WHERE id = 'r0'", "heads", "differs from its version row"),
    ("DELETE FROM memory_versions WHERE id = 'r3' AND version = 2", "versions", "gaps"),
    ("UPDATE reuse_edges SET weight = 0.9 WHERE id = (SELECT MIN(id) FROM reuse_edges)", "replay", "weight 0.9, the log says 0.4"),
    ("UPDATE reuse_edges SET pruned = false WHERE id = (SELECT MAX(id) FROM reuse_edges)", "replay", "pruned=False, the log says True"),
    ("UPDATE reuse_edges SET src = 'gone' WHERE id = (SELECT MIN(id) FROM reuse_edges)", "edges", "'gone' is not stored"),
    ("DELETE FROM audit_log WHERE action = 'release'", "replay", "status active, the log says quarantined"),
    ("UPDATE audit_log SET rolled_back = false WHERE action = 'rewrite' AND target = 'r3'", "audit", "with 1 rollback entries"),
    ("UPDATE audit_log SET action = 'erase' WHERE action = 'dilute'", "audit", "unknown action 'erase'"),
])
def test_damage_is_named(store_location, sql, check, words):
    with used_store(store_location) as store:
        tamper(store, sql)
        report = store.verify()
        assert check in failed(report), report.checks
        assert words in next(c for c in report.problems if c.name == check).detail


def test_a_truncated_embedding_is_named(tmp_path):
    with used_store(str(tmp_path / "m.db")) as store:
        tamper(store, "UPDATE memories SET embedding = substr(embedding, 1, 5) WHERE id = 'r0'")
        tamper(store, "UPDATE memory_versions SET embedding = substr(embedding, 1, 5) WHERE id = 'r0'")
        report = store.verify()
        assert failed(report) == {"embeddings"} and "5 bytes" in report.problems[0].detail


def test_a_half_applied_repair_is_found(tmp_path):
    """What `batch()` prevents: the audit entries of a repair without all of its changes."""
    with used_store(str(tmp_path / "m.db")) as store:
        with store._engine.begin() as conn:  # an audit entry whose change never happened
            conn.exec_driver_sql(
                "INSERT INTO audit_log (time, action, target, before, after, actor, reason, rolled_back) "
                "VALUES (0, 'quarantine', 'r0', '{\"status\": \"active\"}', '{\"status\": \"quarantined\"}', 'x', 'y', 0)")
        assert "status active, the log says quarantined" in next(c for c in store.verify().problems if c.name == "replay").detail


def test_sqlite_page_damage_is_reported(tmp_path):
    path = tmp_path / "m.db"
    store = used_store(str(path))
    store.add_many([_rec(i) for i in range(10, 400)])
    store.close()
    data = bytearray(path.read_bytes())
    for start in range(2 * 4096, len(data), 3 * 4096):
        data[start + 200 : start + 600] = bytes(400)
    path.write_bytes(bytes(data))
    with open_store(str(path)) as damaged:
        report = damaged.verify()
    assert failed(report) == {"database"} and "integrity_check" in report.problems[0].detail
    assert "restore a backup" in report.problems[0].detail


def test_memory_verify_cli(tmp_path):
    runner = CliRunner()
    location = str(tmp_path / "m.db")
    used_store(location).close()
    ok = runner.invoke(app, ["memory", "verify", location])
    assert ok.exit_code == 0, ok.output
    assert "6 records" in " ".join(ok.output.split())
    with open_store(location) as store:
        tamper(store, "UPDATE memories SET status = 'quarantined' WHERE id = 'r0'")
    bad = runner.invoke(app, ["memory", "verify", location, "--json"])
    assert bad.exit_code == 1 and '"replay"' in bad.output
    missing = runner.invoke(app, ["memory", "verify", "mysql://nowhere/db"])
    assert missing.exit_code == 2 and "unknown memory store location" in missing.output
