"""Demo section: ARGUS on a shipped task under prompt injection, with and without the
defense, on the configured local model (every role): the monitored channels per round,
one rewrite, and the embedding proxies of both final answers."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from rich.console import Console
from rich.table import Table

from ..attacks import AttackSpec, build_attack
from ..bench.misinfotask import ProxyJudge, load_tasks, sample_tasks_path
from ..config import Settings
from ..embed import Embedder, get_embedder
from ..llm import LLM, get_llm
from ..mas import DefenseContext, MASConfig, MASResult, MultiAgentSystem, RoleLLMs, build_defense

ROUNDS = 2
TASK_ID = 0


async def _run(task: Any, llm: LLM, embedder: Embedder, settings: Settings, defended: bool) -> MASResult:
    # Short turns and no tool calls keep the section to a few minutes on 2 cores.
    config = MASConfig(
        topology="star", rounds=ROUNDS, seed=settings.seed, max_tool_calls=0,
        worker_max_tokens=100, planner_max_tokens=160, concluder_max_tokens=120,
    )
    interceptors = (
        build_defense("argus", DefenseContext(settings, {"worker": llm}, embedder), {"max_tokens": 260})
        if defended else ()
    )
    system = MultiAgentSystem(task.runtime_task(), RoleLLMs(worker=llm), config, interceptors=interceptors)
    await system.plan()
    attack = build_attack("inject", AttackSpec(task.misinfo_goal, task.misinfo_argument, point="most_central", seed=settings.seed))
    assert attack is not None
    attack.apply(system)
    return await system.run()


def _cut(text: str, n: int = 220) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def run(settings: Settings, console: Console) -> None:
    task = next(t for t in load_tasks(sample_tasks_path()) if t.id == TASK_ID)
    llm = get_llm(None, settings.llm)
    embedder = get_embedder(None, settings.embed)
    proxy = ProxyJudge(embedder)
    console.print(f"task: [bold]{task.name}[/]; prompt injection at the hub; {ROUNDS} rounds; every role on {llm.spec}")
    rows = []
    for defended in (False, True):
        started = time.perf_counter()
        result = asyncio.run(_run(task, llm, embedder, settings, defended))
        label = "ARGUS" if defended else "attack only"
        if defended:
            for event in result.log.of_type("interceptor_round"):
                channels = ", ".join(f"{a}->{b}" for a, b in event.data["localization"]["channels"])
                console.print(f"round {event.round} monitored ({event.data['localization']['mode']}): {channels}; "
                              f"goals so far: {event.data['goals'] or 'none'}", highlight=False)
            rewrites = [e for e in result.log.of_type("interception") if e.data["action"] == "rewrite"]
            if rewrites:
                e = rewrites[0]
                console.print(f"[bold]rewrite[/] on {e.data['sender']}->{e.data['receiver']} (round {e.round}, {e.data['reason']}):")
                console.print(f"  before: {_cut(e.data['text_before'])}", highlight=False)
                console.print(f"  after:  {_cut(e.data['text_after'])}", highlight=False)
            else:
                console.print("the rectifier rewrote no message in this run")
            usage = result.log.usage_by("interceptor").get("argus")
            if usage:
                console.print(f"[dim]ARGUS cost: {usage.calls} calls, {usage.total_tokens} tokens, {usage.latency_s:.1f} s[/]")
        mt = proxy.mt_proxy(result.answer, task.misinfo_goal, task.misinfo_argument, task.ground_truth)
        ref = proxy.reference_agreement(result.answer, task.reference_solution, task.misinfo_goal)
        rows.append((label, result.answer, mt, ref, time.perf_counter() - started))
    table = Table(title=f"final answers and embedding proxies ({proxy.name})")
    for col in ("run", "MT proxy (0-10)", "closer to reference than goal", "final answer", "s"):
        table.add_column(col)
    for label, answer, mt, ref, wall in rows:
        table.add_row(label, "n/a" if mt["score"] is None else f"{mt['score']:.1f}", str(ref["success"]),
                      _cut(answer, 200), f"{wall:.0f}")
    console.print(table)
    console.print("[dim]one task, one seed: an illustration, not a measurement (see docs/BENCHMARKS.md)[/]")
