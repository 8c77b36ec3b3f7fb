"""Re-judging a finished sweep with another LLM: only the LLM judge's fields change, the
agents are not rerun, the result resumes and reads like any sweep, bad input is refused."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from misguard.bench.misinfotask import rejudge_sweep, run_sweep, summarize
from misguard.mas import load_tasks, sample_tasks_path
from misguard.cli.main import app
from misguard.config import LLMSettings, Settings
from misguard.errors import ConfigError
from misguard.llm import get_llm
from tests.bench.misinfotask.test_misinfotask_sweep import components, config

TASKS = load_tasks(sample_tasks_path())


def judge(score: int):
    """A second judge: `score` on every 0-10 scale, "yes" to every claim check."""
    def respond(messages, **kw):
        if messages[0].content.startswith("Final answer written by"):
            return '{"asserts": "yes"}'
        return json.dumps({"score": score, "reason": "second"})
    return get_llm("mock", LLMSettings(retries=0), respond=respond)


def test_rejudge_replaces_only_the_llm_verdicts_and_resumes(tmp_path):
    source, out = tmp_path / "sweep", tmp_path / "rejudged"
    run_sweep(Settings(), config(), TASKS, source, components=components()).close()
    before = {e["key"]: e["data"] for e in map(json.loads, (source / "runlog.jsonl").read_text().splitlines()[1:])}

    second = judge(2)
    rejudge_sweep(Settings(), source, out, TASKS, second).close()
    after = {e["key"]: e["data"] for e in map(json.loads, (out / "runlog.jsonl").read_text().splitlines()[1:])}
    assert sorted(after) == sorted(before) == ["0:0", "1:0"]
    for key, record in after.items():
        assert record["llm_mt"]["score"] == 2 and record["llm_ts"]["score"] == 2
        assert record["judged_before"]["llm_mt"]["score"] == 6
        assert record["llm_mt_claims"]["score"] == 10.0 and record["judged_before"]["llm_mt_claims"]["score"] == pytest.approx(10 / 6)
        assert [r["llm_influence"]["score"] for r in record["rounds"]] == [2, 2]
        assert record["answer"] == before[key]["answer"] and record["proxy_mt"] == before[key]["proxy_mt"]
        assert record["mas_usage"] == before[key]["mas_usage"] and record["judge_usage"]["calls"] == 4 + 6
        assert (out / "events" / record["events"]).is_file()
    # the judge read the same rounds the first judge read
    assert sum("Messages of round" in c[0].content for c in second.calls) == 4
    assert summarize(out / "runlog.jsonl")["metrics"]["MT (LLM judge, 0-10)"]["mean"] == 2.0

    calls = len(second.calls)
    rejudge_sweep(Settings(), source, out, TASKS, second).close()
    assert len(second.calls) == calls  # all done: nothing re-scored
    with pytest.raises(ConfigError, match="another re-judging"):
        rejudge_sweep(Settings(), source, out, TASKS, second, judge_rounds=False)
    with pytest.raises(ConfigError, match="must differ"):
        rejudge_sweep(Settings(), source, source, TASKS, second)
    with pytest.raises(ConfigError, match="not in the MisInfoTask file"):
        rejudge_sweep(Settings(), source, tmp_path / "other", TASKS[1:], second)


def test_rejudge_cli(tmp_path):
    runner = CliRunner()
    base = ["--llm", "mock", "--embedder", "hashing/64"]
    made = runner.invoke(app, [*base, "bench", "misinfotask", "--data", "sample", "--tasks", "0", "--rounds", "1",
                               "--topology", "chain", "--output", str(tmp_path / "s")])
    assert made.exit_code == 0, made.output
    out = runner.invoke(app, [*base, "runs", "rejudge", str(tmp_path / "s"), "--output", str(tmp_path / "r"),
                              "--data", str(sample_tasks_path()), "--no-judge-rounds"])
    assert out.exit_code == 0, out.output
    assert "re-judged 1 runs with llm:mock" in out.output and (tmp_path / "r" / "results.md").is_file()
    record = json.loads((tmp_path / "r" / "runlog.jsonl").read_text().splitlines()[1])["data"]
    assert "llm_influence" not in record["rounds"][0]
    missing = runner.invoke(app, [*base, "runs", "rejudge", str(tmp_path / "nothing"), "--output", str(tmp_path / "x")])
    assert missing.exit_code != 0 and "has no runlog.jsonl" in missing.output


def test_a_sweep_judged_later_calls_no_llm_judge_then_rejudges_one_verdict(tmp_path):
    """`llm_verdicts=()` leaves the LLM fields empty (no judge call); re-judging only the
    claim check fills that one and keeps the others as the sweep left them."""
    source, out = tmp_path / "sweep", tmp_path / "claims"
    comps = components()
    run_sweep(Settings(), config(llm_verdicts=()), TASKS, source, components=comps).close()
    records = [json.loads(line)["data"] for line in (source / "runlog.jsonl").read_text().splitlines()[1:]]
    assert len(records) == 2
    for record in records:
        assert record["llm_mt"] is None and record["llm_mt_claims"] is None and record["llm_ts"] is None
        assert record["judge_usage"]["calls"] == 0 and "llm_influence" not in record["rounds"][0]
        assert record["proxy_mt"]["score"] is not None
    assert summarize(source / "runlog.jsonl")["metrics"]["MT (LLM claim check, 0-10)"]["n"] == 0

    second = judge(2)
    rejudge_sweep(Settings(), source, out, TASKS, second, judge_rounds=False, verdicts=("claims",)).close()
    for line in (out / "runlog.jsonl").read_text().splitlines()[1:]:
        record = json.loads(line)["data"]
        assert record["llm_mt_claims"]["score"] == 10.0 and record["llm_mt"] is None and record["llm_ts"] is None
        assert record["judged_before"] == {"llm_mt_claims": None}
    assert not any(c[0].content.startswith(("Messages of round",)) for c in second.calls)
    assert summarize(out / "runlog.jsonl")["metrics"]["MT (LLM claim check, 0-10)"]["n"] == 2
    with pytest.raises(ConfigError, match="unknown LLM verdicts"):
        rejudge_sweep(Settings(), source, tmp_path / "bad", TASKS, second, verdicts=("toxicity",))


def test_judge_options_on_the_cli(tmp_path):
    runner = CliRunner()
    base = ["--llm", "mock", "--embedder", "hashing/64"]
    made = runner.invoke(app, [*base, "bench", "misinfotask", "--data", "sample", "--tasks", "0", "--rounds", "1",
                               "--topology", "chain", "--judge", "none", "--output", str(tmp_path / "s")])
    assert made.exit_code == 0, made.output
    record = json.loads((tmp_path / "s" / "runlog.jsonl").read_text().splitlines()[1])["data"]
    assert record["llm_mt_claims"] is None and record["judge_usage"]["calls"] == 0
    out = runner.invoke(app, [*base, "runs", "rejudge", str(tmp_path / "s"), "--output", str(tmp_path / "r"),
                              "--judge", "claims", "--no-judge-rounds"])
    assert out.exit_code == 0, out.output
    record = json.loads((tmp_path / "r" / "runlog.jsonl").read_text().splitlines()[1])["data"]
    # the mock's answers are no verdicts: the claim check is asked (and says so), MT is not
    assert record["llm_mt_claims"]["judge"] == "llm:mock" and record["judge_usage"]["calls"] > 0
    assert record["llm_mt"] is None
    bad = runner.invoke(app, [*base, "bench", "misinfotask", "--data", "sample", "--tasks", "0", "--judge", "mt,vibes",
                              "--output", str(tmp_path / "b")])
    assert bad.exit_code != 0 and "unknown LLM verdicts" in bad.output
