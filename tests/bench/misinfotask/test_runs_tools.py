"""`misguard runs merge | pool | decisions | replay` on real sweeps of the recommended ARGUS
(the shipped risk model on e5) against scripted agents: the hijacked agent repeats the
task's misinformation, the others report their work."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from misguard.bench.misinfotask import Components, SweepConfig, run_sweep
from misguard.cli.main import app
from misguard.config import LLMSettings, Settings
from misguard.defenses.argus import upgrade_params
from misguard.embed import get_embedder
from misguard.errors import ConfigError
from misguard.llm import get_llm
from misguard.mas import load_tasks, sample_tasks_path
from tests.helpers.mas_script import scripted

TASKS = load_tasks(sample_tasks_path())


def _worker(agent, neighbours, prompt):
    task = next(t for t in TASKS if t.user_input[:60] in prompt)
    text = task.misinfo_argument[0] if task.misinfo_goal[:40] in prompt else f"{agent} checked the numbers of the task."
    return json.dumps({"type": "send_message", "reply_prompt": text, "sending_target": neighbours[0]})


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweeps")
    llm = get_llm("mock", LLMSettings(retries=0), respond=scripted(worker=_worker, concluder="Boil the pasta longer."))
    comps = Components(mas_llm=llm, judge_llm=llm, embedder=get_embedder("e5"))
    dirs = {}
    for defense in ("none", "argus"):
        for tasks in ((0,), (1,)):
            out = root / f"{defense}-{tasks[0]}"
            config = SweepConfig(data=str(sample_tasks_path()), model="mock", attack="inject", defense=defense,
                                 topology="star", rounds=2, tasks=tasks)
            run_sweep(Settings(), config, TASKS, out, components=comps).close()
            dirs[(defense, tasks[0])] = out
    return root, dirs


def test_merge_joins_one_configuration_and_refuses_others(sweeps):
    root, dirs = sweeps
    runner = CliRunner()
    out = runner.invoke(app, ["runs", "merge", str(root / "argus-all"), str(dirs[("argus", 0)]), str(dirs[("argus", 1)])])
    assert out.exit_code == 0, out.output
    assert "2 tasks from 2 sweeps" in out.output and len(list((root / "argus-all" / "events").iterdir())) == 2
    header = json.loads((root / "argus-all" / "runlog.jsonl").read_text().splitlines()[0])
    assert header["params"]["tasks"] == [0, 1]
    mixed = runner.invoke(app, ["runs", "merge", str(root / "mixed"), str(dirs[("argus", 0)]), str(dirs[("none", 1)])])
    assert mixed.exit_code == 2 and "another configuration" in mixed.output and not (root / "mixed").exists()
    again = runner.invoke(app, ["runs", "merge", str(root / "twice"), str(dirs[("argus", 0)]), str(dirs[("argus", 0)])])
    assert again.exit_code == 2 and "tasks [0] are in an earlier input" in again.output


def test_pool_pairs_tasks_across_sets(sweeps):
    _, dirs = sweeps
    args = [str(dirs[(d, t)]) for t in (0, 1) for d in ("none", "argus")]
    out = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["runs", "pool", *args])
    assert out.exit_code == 0, out.output
    assert "MT proxy (embeddings, 0-10)" in out.output and "│ 2 " in out.output  # two tasks pooled
    odd = CliRunner().invoke(app, ["runs", "pool", *args[:3]])
    assert odd.exit_code == 2 and "in pairs" in odd.output


def test_decisions_count_what_the_defense_did(sweeps):
    from misguard.bench.misinfotask._tools import defense_decisions

    _, dirs = sweeps
    result = defense_decisions(dirs[("argus", 0)])
    total = result["total"]
    # the hijacked agent's misinformation is removed, and it is quarantined: a block and a
    # hidden message for the concluder
    assert total["sentences_removed"] >= 1 and total["quarantined"] == total["quarantined_hijacked"] == 1
    assert total["blocked_quarantined"] >= 1 and total["concluder_hidden"] >= 1
    assert any("quarantined in round 1" in n for n in result["notes"])
    out = CliRunner().invoke(app, ["runs", "decisions", str(dirs[("argus", 0)]), "--per-run"])
    assert out.exit_code == 0 and '"quarantined_hijacked": 1' in out.output


def test_replay_reproduces_every_recorded_round_and_takes_overrides(sweeps):
    from misguard.bench.misinfotask._tools import replay_localization

    _, dirs = sweeps
    exact = replay_localization([dirs[("argus", 0)], dirs[("argus", 1)]])
    assert exact["reproduced"] == exact["rounds"] == 4
    assert exact["by_round"][2]["recall"] >= exact["by_round"][1]["recall"]
    static = replay_localization([dirs[("argus", 0)]], {"dynamic_localization": False})
    assert static["rounds"] == 2
    with pytest.raises(ConfigError, match="not an ARGUS run"):
        replay_localization([dirs[("none", 0)]])


def test_older_run_logs_keep_their_meaning():
    old = {"risk_model_path": None, "goal_redact": False, "sender_model_path": None, "sender_threshold": 0.5,
           "quarantine_mean_threshold": None, "risk_memory": "mean", "rectifier_llm": True, "alpha": 0.2}
    assert upgrade_params(old) == {"risk_model": None, "rectifier_llm": True, "alpha": 0.2}
    with pytest.raises(ConfigError, match="goal_redact=True"):
        upgrade_params({**old, "goal_redact": True})
    assert upgrade_params({**old, "risk_memory": "last_max"}, strict=False)["risk_memory"] == "last_max"


def test_an_older_log_of_the_papers_configuration_is_labelled_as_such():
    from misguard.bench.misinfotask import defense_label
    from misguard.config import ArgusSettings
    from misguard.defenses.argus import PAPER_PRESET

    recorded = ArgusSettings(**PAPER_PRESET).model_dump(mode="json")
    recorded["risk_model_path"] = recorded.pop("risk_model")
    recorded.update(goal_redact=False, sender_model_path=None, sender_threshold=0.5, quarantine_mean_threshold=None)
    assert defense_label({"defense": "argus", "defense_params": recorded}) == "argus-paper"
    assert defense_label({"defense": "argus", "defense_params": {**recorded, "top_k": 2}}) == "argus-paper (top_k=2)"
    now = ArgusSettings().model_dump(mode="json")
    assert defense_label({"defense": "argus", "defense_params": now}) == "argus"


def test_a_report_says_which_figure_to_believe_and_warns_of_a_judge_that_separates_nothing():
    from misguard.bench.misinfotask._report import judge_notes

    weak = judge_notes({"metrics": {"MT": {"judge": ["llm:local/qwen2.5-0.5b"]}, "proxy": {"judge": ["proxy:e5"]}}})
    assert weak[0].startswith("Which figure to believe") and weak[1].startswith("WARNING: llm:local/qwen2.5-0.5b")
    assert "runs rejudge" in weak[1]
    strong = judge_notes({"metrics": {"MT": {"judge": ["llm:local/qwen2.5-1.5b"]}}})
    assert len(strong) == 1
    unknown = judge_notes({"metrics": {"MT": {"judge": ["llm:openai/some-model"]}}})
    assert "misinfotask-judge-check" in unknown[1]
