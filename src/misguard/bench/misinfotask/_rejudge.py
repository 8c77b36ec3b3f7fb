"""Judge a finished sweep again with another LLM, without rerunning the agents.

The agents' answers and messages stay as they were; only the LLM judge's fields of each
run record (MT, task success, per-round influence, judge usage) are replaced. This is how a
sweep run on a small local model gets a stronger judge later (a larger local pack or any
OpenAI-compatible URL). The result is a sweep directory of its own: `misguard runs report`
reads it like any other, and a rerun resumes.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...config import Settings
from ...errors import ConfigError
from ...llm import LLM
from ...llm import MeteredLLM
from ...mas import read_events
from ...runlog import RunHeader, RunLog, public_settings, read_runlog
from ...mas import MisinfoTask
from ._judge import LLMJudge
from ._sweep import LLM_VERDICTS, check_verdicts, llm_verdicts


def rejudge_sweep(
    settings: Settings,
    source: Path,
    output: Path,
    tasks: Sequence[MisinfoTask],
    judge_llm: LLM,
    *,
    judge_rounds: bool = True,
    verdicts: Sequence[str] = LLM_VERDICTS,
) -> RunLog:
    """Re-score every run of the sweep in `source` with `judge_llm`, appending to
    `output/runlog.jsonl` (finished runs are skipped on a rerun). Only the LLM `verdicts`
    asked for are re-scored; the others keep the sweep's values."""
    verdicts = check_verdicts(verdicts)
    if source.resolve() == output.resolve():
        raise ConfigError("--output must differ from the sweep being re-judged (its log is kept as it is)")
    header, events = read_runlog(source / "runlog.jsonl")
    if header.kind != "bench.misinfotask":
        raise ConfigError(f"{source} holds a {header.kind} log; pass a directory written by `bench misinfotask`")
    by_id = {t.id: t for t in tasks}
    runs = [e for e in events if e.type == "run"]
    missing = sorted({e.data["task_id"] for e in runs} - set(by_id))
    if missing:
        raise ConfigError(f"tasks {missing} of {source} are not in the MisInfoTask file given; pass the sweep's --data")
    judge = LLMJudge(judge_llm)
    identity = {
        **header.params.get("identity", {}),
        "rejudged": {"source_run_id": header.run_id, "judge": judge.name, "prompts": judge.prompts.ref,
                     "judge_rounds": judge_rounds,
                     # named only when not all, so earlier re-judgings still resume
                     **({"verdicts": list(verdicts)} if verdicts != LLM_VERDICTS else {})},
    }
    new_header = RunHeader(
        kind="bench.misinfotask",
        settings=public_settings(settings),
        components={**header.components, "judge_llm": judge_llm.describe(), "llm_judge": judge.describe()},
        seeds=header.seeds,
        params={**header.params, "identity": identity, "rejudged_from": str(source),
                "judge_temperature": settings.llm.temperature},
    )
    log = RunLog.open(output / "runlog.jsonl", new_header, resume=True)
    if log.header.params.get("identity") != identity:
        log.close()
        raise ConfigError(f"{output} holds another re-judging ({log.header.params.get('identity', {}).get('rejudged')}); use another --output")
    (output / "events").mkdir(exist_ok=True)
    done = log.done_keys("run")
    rounds = int(identity.get("rounds", 0))

    async def one(run: Any) -> None:
        record = run.data
        events_file = source / "events" / record["events"]
        event_log = read_events(events_file)
        metered = MeteredLLM(judge_llm)
        scored = await llm_verdicts(
            LLMJudge(metered), by_id[record["task_id"]], record["answer"], event_log, rounds, judge_rounds, verdicts
        )
        rescored = {k: v for k, v in scored.items() if k != "llm_influence"}
        per_round = []
        for entry in record["rounds"]:
            entry = {k: v for k, v in entry.items() if k != "llm_influence"}
            if entry["round"] in scored["llm_influence"]:
                entry["llm_influence"] = scored["llm_influence"][entry["round"]]
            per_round.append(entry)
        shutil.copy2(events_file, output / "events" / record["events"])
        log.write(
            "run", key=run.key,
            **{**record, **rescored,
               "rounds": per_round, "judge_usage": metered.usage.model_dump(),
               "judged_before": {k: record[k] for k in rescored if k in record}},
        )

    async def all_pending() -> None:
        for run in runs:
            if run.key not in done:
                await one(run)

    asyncio.run(all_pending())
    return log
