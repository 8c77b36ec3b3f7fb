"""`misguard bench pull` on the shipped sample claims (hashing embedder: the code path, not the figure)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from misguard.cli.main import app
from misguard.runlog import read_runlog
from tests.claims.conftest import SAMPLE

runner = CliRunner()


def test_bench_pull_writes_its_log_then_the_summary(tmp_path):
    out = tmp_path / "bench"
    result = runner.invoke(app, ["--embedder", "hashing/64", "bench", "pull", "--data", str(SAMPLE), "--claims", "20",
                                 "--repeats", "2", "--output", str(out)])
    assert result.exit_code == 0, result.output
    header, events = read_runlog(out / "runlog.jsonl")
    assert header.kind == "bench.pull" and header.params["claims"] == 20
    kinds = [e.type for e in events]
    assert kinds.count("raw") == 2 and kinds.count("pull") == 2 and kinds.count("repull") == 2
    assert [e.type for e in events if e.type in ("raw", "pull")] == ["raw", "pull", "pull", "raw"]  # order alternates
    pulls = [e.data for e in events if e.type == "pull"]
    assert all(p["added"] == 20 and p["embedded"] == 20 for p in pulls)
    assert all(e.data["unchanged"] == 20 and e.data["embedded"] == 0 for e in events if e.type == "repull")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["repeats"] == 2 and len(summary["pull_to_raw_ratios"]) == 2
    assert summary["pull_rate_median"] > 0 and summary["raw_rate_median"] > 0
    too_many = runner.invoke(app, ["--embedder", "hashing/64", "bench", "pull", "--data", str(SAMPLE), "--claims", "999",
                                   "--output", str(tmp_path / "x")])
    assert too_many.exit_code == 2 and "distinct claims" in too_many.output
