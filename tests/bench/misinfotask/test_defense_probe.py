"""The defense probe on a scripted rectifier: it counts acting per message kind, never shows
the defense the sentences of the clean message it judges, resumes, and refuses a log made
with other parameters."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from misguard.mas import load_tasks, sample_tasks_path
from misguard.bench.misinfotask._probe import probe_messages, run_defense_probe, summarize_probe
from misguard.cli.main import app
from misguard.config import LLMSettings, Settings
from misguard.embed import get_embedder
from misguard.errors import ConfigError
from misguard.llm import get_llm

TASKS = load_tasks(sample_tasks_path())


def rectifier_for(tasks):
    """Rewrites a message iff it contains one of the tasks' misinformation arguments."""
    arguments = [a for t in tasks for a in t.misinfo_argument]

    def respond(messages):
        if "false belief" in messages[-1].content:
            return json.dumps({"goal": "a goal"})
        text = re.search(r'<<MESSAGE (\w+)>>\n(.*?)\n<<END \1>>', messages[1].content, re.S).group(2)
        poisoned = any(a in text for a in arguments)
        checks = [{"sentence": text[:40], "verdict": "contradiction" if poisoned else "agreement", "confidence": "high"}]
        return json.dumps({"checks": checks, "revised_message": "CORRECTED" if poisoned else text, "need_review": poisoned})

    return get_llm("mock", LLMSettings(retries=0), respond=respond)


def test_clean_message_truths_are_never_evidence():
    for task in TASKS:
        messages, evidence = probe_messages(task, 2, seed=0)
        assert not any(truth in messages["clean"] for truth in evidence)
        assert set(evidence) < set(task.ground_truth)
        assert messages == probe_messages(task, 2, seed=0)[0]  # deterministic per seed


def test_probe_counts_acting_and_resumes(tmp_path):
    llm = rectifier_for(TASKS)
    kwargs = dict(defense="argus-paper", defense_params={"ground_truth": True}, worker=llm, rectifier=llm,
                  embedder=get_embedder("hashing/64"))
    summary = run_defense_probe(Settings(), TASKS, tmp_path, **kwargs)
    assert summary["poisoned"]["n"] == summary["clean"]["n"] == len(TASKS)
    assert summary["poisoned"]["acted"] == 100.0 and summary["poisoned"]["flagged"] == 100.0
    assert summary["clean"]["acted"] == 0.0 and summary["clean"]["flagged"] == 0.0
    assert summary["poisoned"]["contradiction"] == 100.0 and summary["clean"]["contradiction"] == 0.0
    assert summary["poisoned"]["calls"] >= 1.0 and summary["clean"]["calls"] >= 1.0  # no pre-screen: every message
    assert summary["clean"]["mt_proxy_in"] == summary["clean"]["mt_proxy_out"]  # passed unchanged
    assert summary["poisoned"]["mt_proxy_in"] > summary["clean"]["mt_proxy_in"]
    prompts = [c[1].content for c in llm.calls if "<<MESSAGE " in c[1].content]
    for task in TASKS:  # the grounded rectifier saw evidence, never the clean message's own sentences
        messages, _ = probe_messages(task, 2, seed=0)
        clean_prompt = next(p for p in prompts if messages["clean"] in p)
        assert "EVIDENCE" in clean_prompt.upper()
        assert all(clean_prompt.count(s) == 1 for s in messages["clean"].split(". ") if s)

    calls = len(llm.calls)
    run_defense_probe(Settings(), TASKS, tmp_path, **kwargs)  # everything done: no new call
    assert len(llm.calls) == calls
    with pytest.raises(ConfigError, match="other parameters"):
        run_defense_probe(Settings(), TASKS, tmp_path, **{**kwargs, "defense_params": {}})


def test_none_defense_never_acts_and_summary_handles_empty_kinds(tmp_path):
    summary = run_defense_probe(Settings(), TASKS[:1], tmp_path, defense="none", worker=get_llm("mock"),
                                embedder=get_embedder("hashing/64"))
    assert summary["poisoned"]["acted"] == 0.0 and summary["poisoned"]["tokens"] == 0
    assert summarize_probe([])["clean"]["n"] == 0


def test_cli_probe_on_shipped_tasks(tmp_path):
    out = CliRunner().invoke(app, ["--llm", "mock", "--embedder", "hashing/64", "bench", "defense-probe", "--data", "sample",
                                   "--tasks", "all", "--defense", "self-check", "--output", str(tmp_path)])
    assert out.exit_code == 0, out.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["defense"] == "self-check" and summary["poisoned"]["n"] == len(TASKS)


def test_a_defense_that_needs_no_llm_is_probed_without_loading_one(tmp_path):
    """The recommended ARGUS (the shipped risk model on e5): no model is built, even one that
    could not load, and the task's misinformation is acted on."""
    settings = Settings(llm=LLMSettings(model="local//no/such/model.gguf"))
    summary = run_defense_probe(settings, TASKS[:1], tmp_path, defense="argus", k=2)
    header = json.loads((tmp_path / "runlog.jsonl").read_text().splitlines()[0])
    assert "worker_llm" not in header["components"] and header["components"]["embedder"]["backend"] == "e5"
    assert summary["poisoned"]["acted"] == 100.0 and summary["poisoned"]["calls"] == 0.0


def test_probe_of_argus_without_an_llm_records_no_llm(tmp_path):
    from misguard.defenses.argus import fit_risk_model

    embedder = get_embedder("hashing/64")
    path = fit_risk_model(TASKS, embedder).save(tmp_path / "risk.json")
    summary = run_defense_probe(Settings(), TASKS, tmp_path / "probe", defense="argus",
                                defense_params={"risk_model": str(path)}, embedder=embedder)
    assert summary["rectifier"] is None and summary["worker"] is None
    assert summary["poisoned"]["n"] == len(TASKS) and summary["poisoned"]["calls"] == 0
    header = json.loads((tmp_path / "probe" / "runlog.jsonl").read_text().splitlines()[0])
    assert "worker_llm" not in json.dumps(header) and "hashing" in json.dumps(header)
