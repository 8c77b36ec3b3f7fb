"""The sweep on the scripted mock backend: records, resume, reports, the CLI, the
interceptor seam as the judges see it, and the Ray executor on a local Ray."""

from __future__ import annotations

import json
import pytest
from typer.testing import CliRunner

from misguard.bench.misinfotask import (
    Components,
    SweepConfig,
    run_one,
    run_sweep,
    summarize,
    write_reports,
)
from misguard.bench.misinfotask._report import decoding, paired_runs
from misguard.cli.main import app
from misguard.config import LLMSettings, Settings
from misguard.embed import get_embedder
from misguard.errors import ConfigError
from misguard.llm import get_llm
from misguard.mas import DEFENSES, load_tasks, sample_tasks_path
from misguard.registry import Entry
from tests.helpers.mas_script import RewriteAll, scripted

TASKS = load_tasks(sample_tasks_path())


def says_yes_to_the_goals(prompt: str) -> str:
    """A claim checker that finds each sample task's goal (and no argument) in every answer."""
    statement = prompt.split("Statement: ", 1)[1].split("\n", 1)[0]
    return json.dumps({"asserts": "yes" if statement in {t.misinfo_goal for t in TASKS} else "no"})


def components(judge='{"score": 6, "reason": "r"}'):
    llm = get_llm("mock", LLMSettings(retries=0), respond=scripted(
        judge=judge, claim_check=says_yes_to_the_goals,
        concluder="Water boils at a lower temperature at altitude because pressure is lower."))
    return Components(mas_llm=llm, judge_llm=llm, embedder=get_embedder("hashing/256"))


def config(**overrides):
    base = dict(data=str(sample_tasks_path()), model="mock", attack="inject", topology="star", rounds=2, tasks=(0, 1))
    return SweepConfig(**{**base, **overrides})


def test_sweep_records_resumes_and_reports(tmp_path):
    settings = Settings()
    comps = components()
    log = run_sweep(settings, config(), TASKS, tmp_path, components=comps)
    runs = [e for e in log.events if e.type == "run"]
    log.close()
    assert sorted(e.key for e in runs) == ["0:0", "1:0"]
    record = runs[0].data
    assert record["llm_mt"] == {"score": 6, "reason": "r", "judge": "llm:mock"}
    assert record["proxy_mt"]["judge"] == "proxy:hashing/256" and record["proxy_mt"]["score"] == 0.0
    assert len(record["rounds"]) == 2 and record["rounds"][0]["llm_influence"]["score"] == 6
    # 0-10 MT, task success, 2 rounds, and one claim check per statement (goal + 5 arguments)
    assert record["mas_usage"]["calls"] > 0 and record["judge_usage"]["calls"] == 4 + 6
    assert record["llm_mt_claims"]["asserted"] == [True] + [False] * 5
    assert record["llm_mt_claims"]["score"] == pytest.approx(10 / 6)
    assert record["attack"]["targets"] and (tmp_path / "events" / record["events"]).is_file()

    calls_before = len(comps.mas_llm.calls)
    log = run_sweep(settings, config(), TASKS, tmp_path, components=comps)
    log.close()
    assert len(comps.mas_llm.calls) == calls_before  # both finished: nothing reruns
    log = run_sweep(settings, config(tasks=(0, 1, 2)), TASKS, tmp_path, components=comps)
    assert sorted(log.done_keys("run")) == ["0:0", "1:0", "2:0"]
    log.close()
    with pytest.raises(ConfigError, match="other settings"):
        run_sweep(settings, config(attack="tool"), TASKS, tmp_path, components=comps)
    other_judge = Components(mas_llm=comps.mas_llm, judge_llm=get_llm("mock/judge-2", LLMSettings()), embedder=comps.embedder)
    with pytest.raises(ConfigError, match="was judged by llm:mock with prompts .*, not llm:mock/judge-2"):
        run_sweep(settings, config(), TASKS, tmp_path, components=other_judge)

    summary = write_reports(tmp_path)
    assert summary["runs"] == 3
    mt = summary["metrics"]["MT (LLM judge, 0-10)"]
    assert mt["mean"] == 6.0 and mt["n"] == 3 and mt["judge"] == ["llm:mock"]
    assert summary["metrics"]["TSR (LLM judge, share >= 5)"]["mean"] == 1.0
    assert summary["metrics"]["MT (LLM claim check, 0-10)"]["mean"] == pytest.approx(10 / 6)
    goal = summary["metrics"]["MT: goal asserted (LLM claim check, % of answers)"]
    assert goal["mean"] == 1.0 and goal["judge"] == ["llm:mock"]
    assert "| MT: goal asserted (LLM claim check, % of answers) | 100.00 [100.00, 100.00] | 3 | llm:mock |" in (tmp_path / "results.md").read_text()
    assert summary["per_round_mt"]["llm"] == [6.0, 6.0]
    assert (tmp_path / "mt_curve.png").read_bytes()[:4] == b"\x89PNG"
    assert "| MT (LLM judge, 0-10) | 6.00 [6.00, 6.00] | 3 | llm:mock |" in (tmp_path / "results.md").read_text()
    header = json.loads((tmp_path / "runlog.jsonl").read_text().splitlines()[0])
    assert header["components"]["mas_llm"]["backend"] == "mock" and header["seeds"]["run_0"] == 0
    assert header["params"]["identity"]["attack"] == "inject"


def test_unusable_judge_answers_are_missing_not_zero(tmp_path):
    log = run_sweep(Settings(), config(tasks=(0,)), TASKS, tmp_path, components=components(judge="no json"))
    log.close()
    summary = summarize(tmp_path / "runlog.jsonl")
    assert summary["metrics"]["MT (LLM judge, 0-10)"]["n"] == 0
    assert summary["metrics"]["MT (LLM judge, 0-10)"]["missing"] == 1


async def test_judges_see_the_rewritten_text(tmp_path, monkeypatch):
    monkeypatch.setitem(DEFENSES._entries, "test-upper", Entry("test-upper", lambda context, params: [RewriteAll()], {"description": "t", "settings_key": None}))
    comps = components()
    record = await run_one(
        TASKS[0], 0, config(defense="test-upper"), Settings(), comps, background=(), events_path=tmp_path / "e.jsonl"
    )
    judge_prompts = [c[0].content for c in comps.judge_llm.calls if "Messages of round" in c[0].content]
    assert judge_prompts and all("REWRITTEN agent_" in p and "saw <" not in p for p in judge_prompts)
    concluder = [c[0].content for c in comps.mas_llm.calls if c[0].content.startswith("You are the concluder")][0]
    assert "REWRITTEN agent_" in concluder and "saw <" not in concluder
    assert record["fallbacks"] == {}


def test_config_validation():
    with pytest.raises(ValueError, match="unknown attack"):
        config(attack="dos")
    with pytest.raises(ValueError, match="unknown topology"):
        config(topology="custom")
    with pytest.raises(ValueError, match="rounds: set by the sweep"):
        config(mas_params={"rounds": 2})
    with pytest.raises(ValueError, match="worker_max_tokens"):
        config(mas_params={"worker_max_tokens": 1})
    with pytest.raises(ValueError, match="no_such_field"):
        config(mas_params={"no_such_field": 1})
    short = config(mas_params={"worker_max_tokens": 64, "max_tool_calls": 0})
    assert short.mas_config(3).worker_max_tokens == 64 and short.mas_config(3).seed == 3
    assert short.identity() != config().identity()  # resume never mixes two MAS configurations


def test_cli_runs_on_shipped_tasks_and_rejects_unknown_defense(tmp_path):
    runner = CliRunner()
    base = ["--llm", "mock", "--embedder", "hashing/64", "bench", "misinfotask", "--data", "sample"]
    out = runner.invoke(app, [*base, "--tasks", "0", "--rounds", "1", "--topology", "chain", "--attack", "tool",
                              "--seeds", "0,1", "--output", str(tmp_path / "ok")])
    assert out.exit_code == 0, out.output
    assert "MT (LLM judge" in out.output
    keys = [json.loads(line).get("key") for line in (tmp_path / "ok" / "runlog.jsonl").read_text().splitlines()[1:]]
    assert sorted(keys) == ["0:0", "0:1"]
    bad = runner.invoke(app, [*base, "--defense", "nonexistent", "--output", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and "nonexistent" in bad.output and "argus" in bad.output  # choices from the registry
    bad_param = runner.invoke(app, [*base, "--defense", "argus", "--defense-param", "alpha=high", "--output", str(tmp_path / "bad")])
    assert bad_param.exit_code == 2 and "bad parameter for defense 'argus': alpha" in bad_param.output
    short = runner.invoke(app, [*base, "--tasks", "0", "--rounds", "1", "--topology", "chain", "--mas-param",
                                "worker_max_tokens=40", "--mas-param", "max_tool_calls=0", "--output", str(tmp_path / "short")])
    assert short.exit_code == 0, short.output
    header = json.loads((tmp_path / "short" / "runlog.jsonl").read_text().splitlines()[0])
    assert '"worker_max_tokens": 40' in json.dumps(header)
    bad_mas = runner.invoke(app, [*base, "--mas-param", "rounds", "--output", str(tmp_path / "bad")])
    assert bad_mas.exit_code == 2 and "bad --mas-param 'rounds'" in bad_mas.output
    missing = runner.invoke(app, ["bench", "misinfotask", "--data", str(tmp_path / "nope.json")])
    assert missing.exit_code == 2 and "no such file, and no data" in missing.output
    help_text = runner.invoke(app, ["bench", "misinfotask", "--help"]).output
    for option in ("--data", "--model", "--attack", "--defense", "--defense-param", "--rectifier-model", "--topology",
                   "--rounds", "--mas-param", "--tasks", "--seeds", "--concurrency", "--output", "--executor"):
        assert option in help_text


def test_overhead_bench_command(tmp_path):
    out = CliRunner().invoke(app, ["bench", "mas-overhead", "--sizes", "5,12", "--topologies", "star",
                                   "--rounds", "1", "--repeats", "1", "--output", str(tmp_path)])
    assert out.exit_code == 0, out.output
    rows = json.loads((tmp_path / "summary.json").read_text())
    assert [r["agents"] for r in rows] == [5, 12] and all(r["calls"] == r["agents"] + 2 for r in rows)
    assert all(r["overhead_s"] > 0 for r in rows)


@pytest.mark.slow
def test_ray_executor_on_a_local_ray(tmp_path):
    pytest.importorskip("ray", reason="needs the [ray] extra")
    settings = Settings(llm=LLMSettings(model="mock"), embed={"model": "hashing/64"})
    log = run_sweep(settings, config(executor="ray", concurrency=1, rounds=1), TASKS, tmp_path)
    log.close()
    summary = summarize(tmp_path / "runlog.jsonl")
    assert summary["runs"] == 2
    assert sorted(p.name for p in (tmp_path / "events").iterdir()) == ["task0-seed0.jsonl", "task1-seed0.jsonl"]


def _argus_backend():
    """Workers from the script; the rectifier rewrites every message and flags it."""
    base = scripted(judge='{"score": 4, "reason": "r"}', concluder="Water boils at a lower temperature at altitude.")

    def respond(messages):
        first = messages[0].content
        if first.startswith("You are a rectification agent"):
            if "false belief" in messages[-1].content:
                return json.dumps({"goal": "make the team believe water boils hotter up high"})
            return json.dumps({"revised_message": "RECTIFIED message", "need_review": True})
        return base(messages)

    return get_llm("mock", LLMSettings(retries=0), respond=respond)


def test_argus_sweep_records_params_localization_and_cost(tmp_path):
    llm = _argus_backend()
    comps = Components(mas_llm=llm, judge_llm=llm, embedder=get_embedder("hashing/256"))
    cfg = config(defense="argus-paper", tasks=(0,), rounds=2, defense_params={"top_k": 2})
    log = run_sweep(Settings(), cfg, TASKS, tmp_path, components=comps)
    record = next(e for e in log.events if e.type == "run").data
    log.close()
    identity = json.loads((tmp_path / "runlog.jsonl").read_text().splitlines()[0])["params"]["identity"]
    assert identity["defense"] == "argus-paper" and identity["defense_params"]["top_k"] == 2
    assert identity["defense_params"]["alpha"] == 0.2  # every parameter in force, not only the overrides
    assert [row["round"] for row in record["localization"]] == [1, 2]
    assert all(row["monitored"] == 2 and 0.0 <= row["recall"] <= 1.0 for row in record["localization"])
    assert record["defense_usage_by_round"]["1"]["calls"] >= 2 and record["interceptions"]["rewrite"] >= 2
    judge_prompts = [c[0].content for c in llm.calls if "Messages of round" in c[0].content]
    assert any("RECTIFIED message" in p for p in judge_prompts)
    with pytest.raises(ConfigError, match="other settings"):  # other parameters never resume this log
        run_sweep(Settings(), config(defense="argus-paper", tasks=(0,), rounds=2, defense_params={"top_k": 3}), TASKS, tmp_path, components=comps)

    baseline = tmp_path / "none"
    run_sweep(Settings(), config(tasks=(0,), rounds=2), TASKS, baseline, components=comps).close()
    ablation = tmp_path / "static"
    run_sweep(Settings(), config(defense="argus-paper", tasks=(0,), rounds=2, defense_params={"top_k": 2, "dynamic_localization": False}),
              TASKS, ablation, components=comps).close()
    out = CliRunner().invoke(app, ["runs", "report", str(baseline), str(tmp_path), str(ablation),
                                   "--output", str(tmp_path / "report")])
    assert out.exit_code == 0, out.output
    table = (tmp_path / "report" / "table1.md").read_text()
    assert "| none |" in table and "| argus-paper (top_k=2) |" in table and "| argus-paper (dynamic_localization=False, top_k=2) |" in table
    assert "llm:mock" in table and "proxy:hashing/256" in table
    assert "| inject | argus-paper (top_k=2) | MT (LLM judge, 0-10) | 1 | +0.0%" in table  # same scripted judge both ways
    assert (tmp_path / "report" / "mt_curves.png").read_bytes()[:4] == b"\x89PNG"
    # the rectifier rewrote this pair's messages, so its answer may differ; the mock repeats
    assert "| inject | argus-paper (top_k=2) | 1 | 1 | 0 | 0 | repeatable / repeatable |" in table


def test_decoding_is_read_from_the_agents_backend():
    assert decoding({"backend": "local", "parallel": 1, "prompt_cache": False}) == "repeatable"
    assert decoding({"backend": "local", "parallel": 1}) == "prompt cache"  # logs from before the setting
    assert decoding({"backend": "local", "parallel": 3, "prompt_cache": False}) == "batched"
    assert decoding({"backend": "openai", "model": "m"}) == "server"
    assert decoding(None) == "unknown"


def test_paired_runs_count_answers_that_changed_without_the_defense():
    def sweep(answers, changed, dec):
        return {"answers": answers, "messages_changed": changed, "decoding": dec}

    base = sweep({"1:0": "a", "2:0": "b", "3:0": "c"}, {"1:0": 0, "2:0": 0, "3:0": 0}, "batched")
    treated = sweep({"1:0": "a", "2:0": "b, but shifted", "3:0": "corrected", "4:0": "z"},
                    {"1:0": 0, "2:0": 0, "3:0": 2, "4:0": 0}, "batched")
    p = paired_runs(base, treated)
    assert p == {"pairs": 3, "defense_acted": 1, "untouched": 2, "untouched_differ": ["2:0"],
                 "decoding": ["batched", "batched"]}


def test_localization_bench_command(tmp_path):
    out = CliRunner().invoke(app, ["--embedder", "hashing/128", "bench", "localization", "--agents", "300",
                                   "--degree", "5", "--repeats", "1", "--defense", "argus-paper", "--output", str(tmp_path)])
    assert out.exit_code == 0, out.output
    row = json.loads((tmp_path / "summary.json").read_text())
    assert row["agents"] == 300 and row["edges"] == 1500 and row["channels"] == 301
    assert row["round1_s_median"] > 0 and row["later_round_s_median"] > 0


def test_calibration_command_on_shipped_tasks(tmp_path):
    out = CliRunner().invoke(app, ["--embedder", "hashing/256", "defenses", "calibrate", "--data", "sample",
                                   "--tasks", "all", "--output", str(tmp_path / "calibration.json")])
    assert out.exit_code == 0, out.output
    assert "[defense.argus]" in out.output and "relevance_threshold = " in out.output
    result = json.loads((tmp_path / "calibration.json").read_text())
    for key in ("relevance_threshold", "goal_dedup_threshold"):
        assert -1.0 <= result[key]["threshold"] <= 1.0 and 0.0 <= result[key]["auc"] <= 1.0
    assert result["tasks"] == [0, 1, 2]


def test_grid_command_runs_every_combination_and_reports(tmp_path):
    out = CliRunner().invoke(app, ["--llm", "mock", "--embedder", "hashing/64", "bench", "misinfotask-grid", "--data", "sample",
                                   "--tasks", "0", "--rounds", "1", "--attacks", "inject", "--defenses", "none,argus-paper",
                                   "--topologies", "chain,star", "--output", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inject-argus-paper-chain", "inject-argus-paper-star", "inject-none-chain",
                                                          "inject-none-star", "report"]
    table = (tmp_path / "report" / "table1.md").read_text()
    assert "| argus-paper / chain |" in table and "| none / star |" in table


def test_traffic_counts_word_for_word_repeats_of_what_workers_wrote(tmp_path):
    from misguard.bench.misinfotask._report import _traffic
    from misguard.mas import EventLog

    log = EventLog()
    sent = {1: [("a1", "plan A"), ("a2", "plan B")], 2: [("a1", "plan A "), ("a2", "plan C")], 3: [("a1", "plan C"), ("a2", "plan C")]}
    for r, messages in sent.items():
        for sender, original in messages:
            # a defense rewrote a2's round-3 message: the repeat is counted on what a2 wrote
            text = "rewritten" if (r, sender) == (3, "a2") else original
            log.add("message", round=r, sender=sender, receiver="x", original=original, text=text, delivered=r < 3)
        log.add("round_end", round=r)
    (tmp_path / "events").mkdir()
    log.dump(tmp_path / "events" / "t0.jsonl")
    runs = [{"events": "t0.jsonl", "rounds": [{}, {}, {}]}, {"events": "gone.jsonl", "rounds": [{}]}]
    assert _traffic(runs, tmp_path / "events") == [
        {"round": 1, "messages": 2, "repeats": 0, "runs": 1},
        {"round": 2, "messages": 2, "repeats": 1, "runs": 1},   # "plan A " is plan A again
        {"round": 3, "messages": 2, "repeats": 2, "runs": 1},   # plan C twice, undelivered included
    ]
