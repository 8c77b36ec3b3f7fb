"""`misguard serve` through the CLI runner, and the real command as a child process."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from misguard.cli.main import app

runner = CliRunner()


def test_serve_refuses_to_start_without_a_key(db):
    result = runner.invoke(app, ["--embedder", "hashing/256", "serve", "--db", str(db), "--threshold", "0.6"])
    assert result.exit_code == 2 and "MISGUARD_API_KEYS" in result.output


def test_serve_refuses_a_missing_store(tmp_path):
    result = runner.invoke(app, ["serve", "--db", str(tmp_path / "none"), "--api-key", "k"])
    assert result.exit_code == 2 and "claims add" in result.output


def test_serve_and_bench_service_have_help():
    assert "--api-key" in runner.invoke(app, ["serve", "--help"]).output
    assert "--concurrency" in runner.invoke(app, ["bench", "service", "--help"]).output


@pytest.mark.slow
def test_the_real_command_serves_checks_on_loopback(db, tmp_path):
    """`misguard serve` in a child process, key from MISGUARD_API_KEYS, as the demo uses it."""
    import httpx

    from misguard.service import ServiceProcess

    with ServiceProcess(db, tmp_path / "server.log", embedder="hashing/256", extra_args=["--threshold", "0.6"]) as server:
        [result] = server.check_texts(["Goldfish can only remember things for three seconds"])
        assert result["flagged"] and result["matched_claim_id"] == "S03"
        assert httpx.post(f"{server.url}/v1/check", json={"text": "x"}).status_code == 401
    assert server.proc is not None and server.proc.returncode is not None
    assert server.key not in (tmp_path / "server.log").read_text()


def test_serve_without_a_fitted_decision_says_what_to_do(db):
    result = runner.invoke(app, ["--embedder", "hashing/256", "serve", "--db", str(db), "--api-key", "k"])
    assert result.exit_code == 2 and "--decision" in result.output
