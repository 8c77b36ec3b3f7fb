"""`misguard memory scan | repair | log | rollback` on a real SQLite store written by
`SharedMemory`: one dissenting, overconfident record among agreeing ones."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from misguard.cli.main import app
from misguard.memory import MemoryRecord, Provenance, SharedMemory, open_store

pytest.importorskip("sqlalchemy", reason="needs the 'memory' extra")


def _store(path) -> str:
    with open_store(path) as store:
        memory = SharedMemory(store)
        good = [MemoryRecord(state="pos=1,1", context="task=p", action="E", confidence=0.9,
                             provenance=Provenance(agent=f"a{i % 4}", time=float(i))) for i in range(12)]
        bad = MemoryRecord(id="poison", state="pos=1,1", context="task=p", action="W", confidence=0.95,
                           provenance=Provenance(agent="a5", time=20.0, channel="tool-output"))
        memory.write(good + [bad])
    return str(path)


def test_scan_changes_nothing_repair_quarantines_and_rollback_restores(tmp_path):
    url = _store(tmp_path / "memory.db")
    runner = CliRunner()
    scanned = runner.invoke(app, ["memory", "scan", url, "--top", "3"])
    assert scanned.exit_code == 0, scanned.output
    assert "poison" in scanned.output and "1 flagged at 0.5; a repair would quarantine 1, rewrite 0 records" in scanned.output
    with open_store(url) as store:
        assert store.status("poison") == "active" and not store.audit_log()
    repaired = runner.invoke(app, ["memory", "repair", url])
    assert repaired.exit_code == 0, repaired.output
    assert "repaired: quarantine 1, rewrite 0 records" in repaired.output
    with open_store(url) as store:
        assert store.status("poison") == "quarantined" and store.count() == 13  # nothing deleted
        (entry,) = [e for e in store.audit_log() if e.target == "poison"]
    assert str(entry.seq) in runner.invoke(app, ["memory", "log", url]).output
    undone = runner.invoke(app, ["memory", "rollback", url, str(entry.seq)])
    assert undone.exit_code == 0, undone.output
    with open_store(url) as store:
        assert store.status("poison") == "active"


def test_an_empty_store_is_a_clear_error(tmp_path):
    with open_store(tmp_path / "empty.db"):
        pass
    out = CliRunner().invoke(app, ["memory", "scan", str(tmp_path / "empty.db")])
    assert out.exit_code == 2 and "no active records" in out.output
