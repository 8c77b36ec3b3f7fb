"""The benchmark's store path on a real PostgreSQL server (the same API as SQLite)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from misguard.cli.main import app
from misguard.memory import open_store

from .conftest import _create_db

pytest.importorskip("torch", reason="needs the 'memory' extra")
pytest.importorskip("mpe2", reason="needs the 'memory-env' extra")


def test_bench_memory_on_postgres(postgres_server: str, tmp_path) -> None:
    url = _create_db(postgres_server)
    res = CliRunner().invoke(app, ["bench", "memory", "--seeds", "1", "--records", "1500", "--scenarios", "5",
                                   "--encoder-steps", "20", "--eval-steps", "8", "--methods", "credibility", "--backend", "postgres", "--postgres-url", url,
                                   "--output", str(tmp_path)])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["params"]["backend"] == "postgres" and "postgres_url" not in summary["params"]
    with open_store(url) as store:
        assert store.count() > 0 and len(store.edges()) > 0
        quarantined = store.count("quarantined")
        assert quarantined > 0  # the repair went through the PostgreSQL store, audited
        assert sum(e.action == "quarantine" for e in store.audit_log()) == quarantined
