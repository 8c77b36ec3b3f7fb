"""`misguard bench redteam`: the claims target end to end on the dev set (hashing embedder,
a plain threshold), the report's arithmetic, and the CLI's list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from misguard.bench.redteam import run_claims_redteam, split_groups, summarize
from misguard.claims import ThresholdDecision
from misguard.cli.main import app
from misguard.config import load_settings

DATA = Path(__file__).resolve().parents[4] / "shared" / "data"


def test_split_halves_are_disjoint_fixed_and_cover_every_claim():
    groups = [f"DF{i:02d}" for i in range(1, 41)] * 3
    dev, test = split_groups(groups, "dev"), split_groups(groups, "test")
    assert not dev & test and dev | test == set(groups) and len(dev) == 20
    assert split_groups(groups, "dev") == dev


def test_summary_pairs_each_text_with_its_undisguised_self():
    rows = []
    for i in range(20):
        for spec, flagged in (("none", True), ("leet", i % 4 != 0)):
            rows.append({"arm": "hardened", "spec": spec, "family": "none" if spec == "none" else "character",
                         "qid": f"q{i}", "group": f"g{i // 2}", "label": "false", "flagged": flagged})
    out = summarize(rows)["hardened"]["leet"]["false"]
    assert out["before"]["mean"] == 1.0 and out["after"]["mean"] == 0.75
    assert out["change"]["mean"] == pytest.approx(-0.25) and out["change"]["lo"] <= -0.25 <= out["change"]["hi"]
    assert out["after"]["groups"] == 10


@pytest.mark.skipif(not (DATA / "claims" / "devset-multilingual").is_dir(), reason="no shared data at ../shared/data")
def test_claims_target_logs_every_text_and_reports_both_arms(tmp_path):
    settings = load_settings(None, embed={"model": "hashing/256"})
    summary = run_claims_redteam(
        settings, tmp_path / "out", transforms=["homoglyph", "inject:style=ignore", "markup-alt"], data_dir=DATA,
        distractors=0, split="dev", decision=ThresholdDecision(0.5), limit=24, console=Console(quiet=True))
    lines = (tmp_path / "out" / "runlog.jsonl").read_text(encoding="utf-8").splitlines()
    header, rows = json.loads(lines[0]), [json.loads(x)["data"] for x in lines[1:] if '"check"' in x]
    assert header["params"]["transforms"]["homoglyph"]["steps"][0]["params"]["rate"] == 0.6
    specs = {r["spec"] for r in rows}
    assert specs == {"none", "markup-plain", "homoglyph", "inject:style=ignore", "markup-alt"}
    assert len([r for r in rows if r["arm"] == "hardened" and r["spec"] == "homoglyph"]) == 24
    hardened, unhardened = summary["arms"]["hardened"], summary["arms"]["unhardened"]
    assert hardened["homoglyph"]["false"]["after"]["n"] > 0 and hardened["markup-alt"]["baseline"] == "markup-plain"
    # the hardened guard reads a disguised text as the plain one: never fewer flags than the unhardened
    assert hardened["homoglyph"]["false"]["after"]["mean"] >= unhardened["homoglyph"]["false"]["after"]["mean"]
    assert (tmp_path / "out" / "report.md").read_text(encoding="utf-8").count("| homoglyph |") == 2
    # rerun: everything is resumed from the log
    again = run_claims_redteam(
        settings, tmp_path / "out", transforms=["homoglyph"], data_dir=DATA, distractors=0, split="dev",
        decision=ThresholdDecision(0.5), limit=24, console=Console(quiet=True))
    assert again["arms"]["hardened"]["homoglyph"] == summary["arms"]["hardened"]["homoglyph"]


def test_cli_lists_every_transform_with_its_family(monkeypatch):
    import io

    from rich.console import Console as RichConsole

    import misguard.cli.redteam as cli

    out = io.StringIO()
    monkeypatch.setattr(cli, "console", RichConsole(file=out, width=400))
    result = CliRunner().invoke(app, ["bench", "redteam", "--list"])
    assert result.exit_code == 0, result.output
    for name in ("homoglyph", "transliterate", "markup-alt", "inject", "paraphrase-llm", "code-switch"):
        assert name in out.getvalue()


@pytest.mark.skipif(not (DATA / "claims" / "devset-multilingual").is_dir(), reason="no shared data at ../shared/data")
def test_cost_target_times_both_arms_on_both_text_sets(tmp_path):
    from misguard.bench.redteam import run_hardening_cost

    settings = load_settings(None, embed={"model": "hashing/256"})
    summary = run_hardening_cost(settings, tmp_path / "cost", data_dir=DATA, distractors=0, repeats=1, embed_texts=8, decision=ThresholdDecision(0.5),
                                 console=Console(quiet=True))
    for name in ("undisguised", "homoglyph+leet"):
        row = summary[name]
        assert row["texts"] == 480 and row["hardened_ms"] > 0 and row["unhardened_ms"] > 0
        assert row["ratio"] == pytest.approx(row["hardened_ms"] / row["unhardened_ms"])
    events = [json.loads(x) for x in (tmp_path / "cost" / "runlog.jsonl").read_text(encoding="utf-8").splitlines()[1:]]
    assert [e["type"] for e in events].count("views") == 2 and summary["embed_ms_per_text"] > 0
