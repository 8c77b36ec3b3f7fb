"""Demo section: ARGUS, the recommended configuration, on a task that ships with misguard.

Three agents on the configured local model work on the task while the most central one is
hijacked by prompt injection; the same run is made again with `--defense argus` (the
default: the shipped risk model on every channel, quarantine, no LLM of its own). The
section shows what the hijacked agent sent, what ARGUS removed and blocked, and the two
final answers with their embedding proxies.

The two runs share a response cache: at temperature 0 with one seed, every request of the
defended run identical to one of the first run (the plan, round 1's messages) is answered
from it, so only what the defense changed is generated again."""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ..attacks import AttackSpec, build_attack
from ..bench.misinfotask import ProxyJudge
from ..config import Settings
from ..embed import Embedder, get_embedder
from ..llm import LLM, get_llm
from ..mas import DefenseContext, MASConfig, MASResult, MultiAgentSystem, RoleLLMs, build_defense, load_tasks, sample_tasks_path
from ._show import cut as _cut
from ._show import show_defense

ROUNDS = 2
TASK_ID = 0


async def _run(task: Any, llm: LLM, embedder: Embedder, settings: Settings, defended: bool) -> tuple[MASResult, list[str]]:
    # Short turns and no tool calls keep the section to a few minutes on 2 cores.
    config = MASConfig(
        topology="star", rounds=ROUNDS, seed=settings.seed, max_tool_calls=0,
        worker_max_tokens=120, planner_max_tokens=160, concluder_max_tokens=120,
    )
    interceptors = build_defense("argus", DefenseContext(settings, {"worker": llm}, embedder)) if defended else ()
    system = MultiAgentSystem(task.runtime_task(), RoleLLMs(worker=llm), config, interceptors=interceptors)
    await system.plan()
    attack = build_attack("inject", AttackSpec(task.misinfo_goal, task.misinfo_argument, point="most_central", seed=settings.seed))
    assert attack is not None
    report = attack.apply(system)
    return await system.run(), list(report["targets"])


def run(settings: Settings, console: Console) -> None:
    task = next(t for t in load_tasks(sample_tasks_path()) if t.id == TASK_ID)
    with tempfile.TemporaryDirectory(prefix="misguard-demo-llm-cache-") as cache:
        update = {"cache_dir": Path(cache), "temperature": 0.0, "timeout_s": max(settings.llm.timeout_s, 900.0)}
        llm = get_llm(None, settings.llm.model_copy(update=update))
        _compare(task, llm, settings, console)


def _compare(task: Any, llm: LLM, settings: Settings, console: Console) -> None:
    embedder = get_embedder(None, settings.embed)
    proxy = ProxyJudge(embedder)
    console.print(f"task: [bold]{task.name}[/] ({task.agent_num} agents, star, {ROUNDS} rounds, agents on {llm.spec})")
    console.print(f"attack: prompt injection into the most central agent; its goal: {task.misinfo_goal}", highlight=False)
    rows = []
    for defended in (False, True):
        started = time.perf_counter()
        result, hijacked = asyncio.run(_run(task, llm, embedder, settings, defended))
        if not defended:
            _show_hijacked(result, hijacked, console)
        else:
            console.print("[bold]with ARGUS[/] (recommended configuration: no LLM of its own)")
            show_defense(result, hijacked, console)
        mt = proxy.mt_proxy(result.answer, task.misinfo_goal, task.misinfo_argument, task.ground_truth)
        rows.append(("ARGUS" if defended else "attack only", result.answer, mt, time.perf_counter() - started))
    table = Table(title=f"final answers (MT proxy: how much of the misinformation they carry, 0-10, {proxy.name})")
    for col in ("run", "MT proxy", "final answer", "s"):
        table.add_column(col)
    for label, answer, mt, wall in rows:
        table.add_row(label, "n/a" if mt["score"] is None else f"{mt['score']:.1f}", _cut(answer, 240), f"{wall:.0f}")
    console.print(table)
    console.print("[dim]one task, one seed: an illustration, not a measurement (docs/BENCHMARKS.md has those)[/]")


def _show_hijacked(result: MASResult, hijacked: list[str], console: Console) -> None:
    console.print(f"[bold]attack only[/]: what the hijacked agent ({', '.join(hijacked)}) sent")
    for m in result.log.messages():
        if m["sender"] in hijacked:
            console.print(f"  round {m['round']} to {m['receiver']}: {_cut(m['text'])}", highlight=False)
