import json

import pytest
from typer.testing import CliRunner

from misguard.cli.main import app

from .conftest import SAMPLE

runner = CliRunner()
H = ["--embedder", "hashing/256"]


def _flat(result) -> str:
    """Output with rich's line wrapping undone."""
    return " ".join(result.output.split())


def _add(db):
    result = runner.invoke(app, [*H, "claims", "add", "--db", str(db), str(SAMPLE)])
    assert result.exit_code == 0, result.output
    return result


def test_add_stats_and_reingest(tmp_path):
    db = tmp_path / "db"
    assert "32 added" in _flat(_add(db))
    assert "32 unchanged" in _flat(_add(db))
    result = runner.invoke(app, [*H, "claims", "stats", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["claims"] == 32


def test_format_override_and_bad_file(tmp_path):
    db = tmp_path / "db"
    odd = tmp_path / "claims.txt"
    odd.write_text('{"id": "a", "text": "The moon is made of cheese", "verdict": "false"}\n')
    result = runner.invoke(app, [*H, "claims", "add", "--db", str(db), "--format", "jsonl", str(odd)])
    assert result.exit_code == 0, result.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "b", "text": "ok", "verdict": "false"}\nnot json\n')
    result = runner.invoke(app, [*H, "claims", "add", "--db", str(db), str(bad)])
    assert result.exit_code == 2 and "bad.jsonl:2" in _flat(result)
    stats = runner.invoke(app, [*H, "claims", "stats", "--db", str(db), "--json"])
    assert json.loads(stats.output)["claims"] == 1


def test_check_text_and_batch(tmp_path):
    db = tmp_path / "db"
    _add(db)
    result = runner.invoke(app, [*H, "check", "--db", str(db), "--threshold", "0.6",
                                 "Answer the following question: Why?\nA. Vikings wore helmets with horns into battle\nB. x y z\nC. a b c\nD. d e f"])
    assert result.exit_code == 0, result.output
    assert "FLAGGED" in _flat(result) and "S13" in _flat(result)
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text("\n".join(json.dumps(r) for r in [
        {"id": "a", "text": "Cracking your knuckles causes arthritis"},
        {"id": "b", "text": "A recipe for lentil soup with carrots"},
        {"id": "c", "text": ""},
    ]) + "\n")
    result = runner.invoke(app, [*H, "check", "--db", str(db), "--threshold", "0.6", "--input", str(inp), "--output", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a", "b", "c"]
    assert rows[0]["flagged"] is True and rows[0]["matched_claim_id"] == "S28"
    assert rows[1]["flagged"] is False and rows[1]["matched_claim_id"] is None
    assert all(isinstance(r["score"], float) for r in rows)
    assert rows[0]["candidates"][0]["claim_id"] == "S28" and len(rows[0]["candidates"]) == 5
    assert rows[2]["candidates"] == []
    result = runner.invoke(app, [*H, "check", "--db", str(db), "--threshold", "0.6", "--candidates", "2",
                                 "--ranking", "dense", "--input", str(inp), "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert len(json.loads(out.read_text().splitlines()[0])["candidates"]) == 2


def test_export_claimreview(tmp_path):
    db = tmp_path / "db"
    _add(db)
    out = tmp_path / "export.json"
    result = runner.invoke(app, [*H, "claims", "export", "--db", str(db), "--output", str(out)])
    assert result.exit_code == 0, result.output
    items = json.loads(out.read_text())
    assert len(items) == 32 and items[0]["@type"] == "ClaimReview"


def test_clear_errors(tmp_path):
    result = runner.invoke(app, [*H, "check", "--db", str(tmp_path / "missing"), "hello"])
    assert result.exit_code == 2 and "No claim store" in _flat(result)
    db = tmp_path / "db"
    _add(db)
    result = runner.invoke(app, [*H, "check", "--db", str(db), "hello"])
    assert result.exit_code == 2 and "No fitted decision model" in _flat(result)
    result = runner.invoke(app, [*H, "check", "--db", str(db), "--threshold", "0.6"])
    assert result.exit_code == 2 and "either a TEXT" in _flat(result)
    bad = tmp_path / "in.jsonl"
    bad.write_bytes(b'{"id": 1, "text": "ok"}\n\xff\xfe\n')
    result = runner.invoke(app, [*H, "check", "--db", str(db), "--threshold", "0.6", "--input", str(bad), "--output", str(tmp_path / "o.jsonl")])
    assert result.exit_code == 2 and "in.jsonl:2" in _flat(result)
    result = runner.invoke(app, ["--embedder", "hashing/128", "check", "--db", str(db), "--threshold", "0.6", "x"])
    assert result.exit_code == 2 and "hashing/256" in _flat(result)
    for removed in ("--judge-band", "--route-topics"):  # options the measurements rejected
        result = runner.invoke(app, [*H, "check", "--db", str(db), "--threshold", "0.6", removed, "x"])
        assert result.exit_code == 2 and "No such option" in _flat(result)


def test_fit_decision_writes_a_decision_that_check_and_serve_load(tmp_path):
    from .conftest import write_data

    data = write_data(tmp_path / "data")
    decision = tmp_path / "decision.json"
    result = runner.invoke(app, [*H, "claims", "fit-decision", "--data", str(data), "--output", str(decision),
                                 "--paper", "4", "--work-dir", str(tmp_path / "work")])
    assert result.exit_code == 0, result.output
    text = _flat(result)
    assert "fitted on the dev set" in text and "devset" in text and "paper" in text and "check --decision" in text
    assert json.loads(decision.read_text())["embedder"] == "hashing/256"
    assert (tmp_path / "work" / "store" / "claims.sqlite").is_file()  # kept for the next run
    db = tmp_path / "db"
    _add(db)
    result = runner.invoke(app, [*H, "check", "--db", str(db), "--decision", str(decision),
                                 "Cracking your knuckles causes arthritis"])
    assert result.exit_code == 0, result.output
    assert "decide:logistic" in _flat(result)
    pytest.importorskip("fastapi", reason="serve needs the service extra")
    from fastapi.testclient import TestClient

    from misguard.config import EmbedSettings
    from misguard.service import ServiceSettings, create_app

    settings = ServiceSettings(db=db, embed=EmbedSettings(model="hashing/256"), api_keys=["k"], decision=decision)
    with TestClient(create_app(settings)) as client:
        response = client.post("/v1/check", json={"texts": ["Cracking your knuckles causes arthritis"]},
                               headers={"Authorization": "Bearer k"})
    assert response.status_code == 200, response.text


def test_fit_decision_errors_say_what_to_do(tmp_path):
    result = runner.invoke(app, [*H, "claims", "fit-decision", "--data", str(tmp_path), "--output", str(tmp_path / "d.json")])
    assert result.exit_code == 2 and "devset-multilingual" in _flat(result) and "bench" not in _flat(result)
    assert not (tmp_path / "d.json").exists()


def test_add_warns_about_what_it_does_not_read_and_strict_refuses(tmp_path):
    db = tmp_path / "db"
    odd = tmp_path / "odd.csv"
    odd.write_text("id,text,verdict,source_name\n1,The moon is made of cheese,banana,x\n2,Cats can fly,false,y\n")
    result = runner.invoke(app, [*H, "claims", "add", "--db", str(db), "--strict", str(odd)])
    assert result.exit_code == 2 and "--strict" in _flat(result) and not (db / "claims.sqlite").exists()
    result = runner.invoke(app, [*H, "claims", "add", "--db", str(db), str(odd)])
    assert result.exit_code == 0, result.output
    err = " ".join(result.stderr.split())
    assert "'source_name' (2 rows)" in err and "'banana' (1 rows)" in err and "2 added" in _flat(result)


def test_add_help_documents_the_fields_and_the_sample(tmp_path):
    result = runner.invoke(app, ["claims", "add", "--help"])
    text = _flat(result)
    for word in ("text", "verdict", "claimReviewed", "verdict_original", "publisher", "--sample", "--strict", "banana"):
        assert word in text, word
    result = runner.invoke(app, [*H, "claims", "add", "--db", str(tmp_path / "db"), "--sample"])
    assert result.exit_code == 0, result.output
    assert "32 added" in _flat(result)
    result = runner.invoke(app, [*H, "claims", "add", "--db", str(tmp_path / "db")])
    assert result.exit_code == 2 and "--sample" in _flat(result)


def test_check_reads_standard_input_and_writes_standard_output(tmp_path):
    db = tmp_path / "db"
    _add(db)
    rows = "".join(json.dumps(r) + "\n" for r in [{"id": "a", "text": "Cracking your knuckles causes arthritis"},
                                                 {"id": "b", "text": "Octopuses have three hearts"}])
    result = runner.invoke(app, [*H, "check", "--db", str(db), "--threshold", "0.6", "--input", "-"], input=rows)
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.stdout.splitlines()]  # standard output: the rows only
    assert [r["id"] for r in out] == ["a", "b"] and out[0]["flagged"] and out[0]["matched_claim_id"] == "S28"
    assert out[1]["nearest_claim_id"] == "S22" and out[1]["nearest_claim_verdict"] == "true" and not out[1]["flagged"]
    assert "2 texts checked" in result.stderr and "standard output" in result.stderr
    bad = runner.invoke(app, [*H, "check", "--db", str(db), "--threshold", "0.6", "--input", "-"], input="not json\n")
    assert bad.exit_code == 2 and "standard input:1" in _flat(bad)
    help_text = _flat(runner.invoke(app, ["check", "--help"]))
    assert "standard input" in help_text and "standard output" in help_text
