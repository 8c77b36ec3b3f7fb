"""`misguard bench integration-overhead` end to end on the three frameworks (one pair, one
run each): the run log and summary are written from real runs of real apps."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from misguard.cli.main import app as cli

pytest.importorskip("langgraph")
pytest.importorskip("agents")
pytest.importorskip("autogen_core")


def test_overhead_bench_writes_its_log_and_summary(tmp_path):
    out = tmp_path / "bench"
    result = CliRunner().invoke(cli, ["bench", "integration-overhead", "--repeats", "1", "--loops", "1",
                                      "--agents", "3", "--output", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "summary.json").read_text())
    assert [r["app"] for r in rows] == ["langgraph invoke", "langgraph ainvoke", "openai-agents", "autogen"]
    # messages screened per run: each of 3 nodes / agents reads what every earlier one wrote
    # (shared state, handed-over history): 0 + 1 + 2; a round-robin team of 3 speaking 3 times
    # (the task is the 4th message) broadcasts each response to the 2 others
    assert [r["messages"] for r in rows] == [3, 3, 3, 6]
    header = json.loads((out / "runlog.jsonl").read_text().splitlines()[0])
    assert header["kind"] == "bench.integration_overhead" and header["components"]["frameworks"]["langgraph"]
    bad = CliRunner().invoke(cli, ["bench", "integration-overhead", "--framework", "crewai", "--output", str(out)])
    assert bad.exit_code == 2 and "unknown framework" in bad.output
