"""The runtime's own overhead, without any model: a zero-latency scripted mock answers
every call, so the wall time is what planning, scheduling, interception, memory, the
event log and accounting cost. It measures the runtime, not a model."""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ...config import Settings
from ...llm import get_llm
from ...mas import MASConfig, MultiAgentSystem, RoleLLMs, Task
from ...runlog import RunHeader, RunLog, public_settings
from ...types import ChatMessage

_TARGETS = re.compile(r"You may send messages to: ([^.\n]*)\.")


def _respond(messages: list[ChatMessage]) -> str:
    """Instant answers in each role's format (valid JSON for planner and workers)."""
    first = messages[0].content
    if first.startswith("You are the planner"):
        n = int(re.search(r"team of (\d+) agents", first).group(1))  # type: ignore[union-attr]
        return json.dumps({"subtasks": [f"part {i}" for i in range(n)]})
    match = _TARGETS.search(first)
    if match:
        target = match.group(1).split(", ", 1)[0]
        return json.dumps({"type": "send_message", "reply_prompt": "a short finding", "sending_target": target})
    return "final answer"


async def _one(n_agents: int, topology: str, rounds: int, seed: int) -> dict[str, Any]:
    model_time = [0.0]

    def timed(messages: list[ChatMessage]) -> str:
        started = time.perf_counter()
        try:
            return _respond(messages)
        finally:
            model_time[0] += time.perf_counter() - started

    llm = get_llm("mock", respond=timed)
    task = Task(id=f"overhead-{n_agents}", user_input="Measure the runtime.", agent_num=n_agents)
    system = MultiAgentSystem(task, RoleLLMs(worker=llm), MASConfig(topology=topology, rounds=rounds, seed=seed))
    started = time.perf_counter()
    result = await system.run()
    wall = time.perf_counter() - started
    # Only the scripted answers' own time is "model" time; the summed call latencies
    # overlap (calls run concurrently) and would over-subtract.
    llm_time = model_time[0]
    turns = n_agents * rounds
    return {
        "agents": n_agents, "topology": topology, "rounds": rounds, "edges": result.graph.number_of_edges(),
        "calls": llm.usage.calls, "events": len(result.log.events), "wall_s": wall,
        "llm_s": llm_time, "overhead_s": wall - llm_time, "overhead_ms_per_turn": 1000 * (wall - llm_time) / turns,
    }


def run_overhead_bench(
    settings: Settings, output: Path, *, sizes: list[int], topologies: list[str], rounds: int, repeats: int,
    console: Console,
) -> list[dict[str, Any]]:
    header = RunHeader(
        kind="bench.mas_overhead", settings=public_settings(settings),
        components={"llm": get_llm("mock").describe()}, seeds={"mas": settings.seed},
        params={"sizes": sizes, "topologies": topologies, "rounds": rounds, "repeats": repeats,
                "note": "zero-latency scripted mock backend: measures the runtime, not a model"},
    )
    output.mkdir(parents=True, exist_ok=True)
    log = RunLog.open(output / "runlog.jsonl", header, resume=False)
    rows = []
    for topology in topologies:
        for n in sizes:
            samples = [asyncio.run(_one(n, topology, rounds, settings.seed)) for _ in range(repeats)]
            row = dict(samples[0])
            for key in ("wall_s", "llm_s", "overhead_s", "overhead_ms_per_turn"):
                row[key] = statistics.median(s[key] for s in samples)
            log.write("overhead", key=f"{topology}:{n}", **row)
            rows.append(row)
    log.close()
    (output / "summary.json").write_text(json.dumps(rows, indent=2))
    table = Table(title=f"runtime overhead, mock backend with zero latency ({rounds} rounds, median of {repeats})")
    for col in ("topology", "agents", "edges", "LLM calls", "events", "overhead s", "ms / agent-turn"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(r["topology"], str(r["agents"]), str(r["edges"]), str(r["calls"]), str(r["events"]),
                      f"{r['overhead_s']:.3f}", f"{r['overhead_ms_per_turn']:.3f}")
    console.print(table)
    return rows
