"""`misguard claims verify` through the CLI runner."""

import json

from typer.testing import CliRunner

from misguard.cli.main import app

from .conftest import SAMPLE

runner = CliRunner()
H = ["--embedder", "hashing/256"]


def test_verify_reports_repairs_and_exits_by_outcome(tmp_path):
    db = tmp_path / "db"
    assert runner.invoke(app, [*H, "claims", "add", "--db", str(db), str(SAMPLE)]).exit_code == 0
    ok = runner.invoke(app, [*H, "claims", "verify", "--db", str(db)])
    assert ok.exit_code == 0, ok.output
    assert "32 claims: ok" in " ".join(ok.output.split())
    (db / "index-1.npy").write_bytes(b"not an index")
    broken = runner.invoke(app, [*H, "claims", "verify", "--db", str(db), "--json"])
    assert broken.exit_code == 1
    report = json.loads(broken.output)
    assert report["ok"] is False and [c["name"] for c in report["checks"] if not c["ok"]] == ["files"]
    fixed = runner.invoke(app, [*H, "claims", "verify", "--db", str(db), "--repair"])
    assert fixed.exit_code == 0, fixed.output
    assert "repaired: files" in fixed.output
    assert runner.invoke(app, [*H, "check", "--db", str(db), "--threshold", "0.6",
                               "Cracking your knuckles causes arthritis"]).exit_code == 0


def test_verify_of_a_missing_store_is_a_clear_error(tmp_path):
    result = runner.invoke(app, [*H, "claims", "verify", "--db", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "No claim store" in result.output
