"""Demo section: a real multi-agent run (local Qwen2.5 1.5B) on a shipped task under prompt injection."""

from __future__ import annotations

import asyncio
import time

from rich.console import Console
from rich.table import Table

from ..attacks import AttackSpec, build_attack
from ..bench.misinfotask import ProxyJudge, load_tasks, sample_tasks_path
from ..config import Settings
from ..embed import get_embedder
from ..llm import get_llm
from ..mas import MASConfig, MultiAgentSystem, RoleLLMs

ROUNDS = 2
TASK_ID = 0


def run(settings: Settings, console: Console) -> None:
    task = next(t for t in load_tasks(sample_tasks_path()) if t.id == TASK_ID)
    llm = get_llm(None, settings.llm)
    embedder = get_embedder(None, settings.embed)
    console.print(f"task: [bold]{task.name}[/] ({task.agent_num} workers, star topology, {ROUNDS} rounds, {llm.spec})")
    console.print(f"attack: prompt injection at the most central agent, goal: {task.misinfo_goal}", highlight=False)
    # Short turns and no tool calls keep the section near a minute on 2 cores; tools run in
    # the tests and in `misguard bench misinfotask`.
    config = MASConfig(
        topology="star", rounds=ROUNDS, seed=settings.seed, max_tool_calls=0,
        worker_max_tokens=120, planner_max_tokens=160, concluder_max_tokens=120,
    )
    system = MultiAgentSystem(task.runtime_task(), RoleLLMs(worker=llm), config)
    started = time.perf_counter()

    async def go():
        await system.plan()
        attack = build_attack(
            "inject", AttackSpec(task.misinfo_goal, task.misinfo_argument, point="most_central", seed=settings.seed)
        )
        assert attack is not None
        report = attack.apply(system)
        console.print(f"hijacked: {', '.join(report['targets'])}; edges: {sorted(system.graph.edges())}", highlight=False)
        return await system.run()

    result = asyncio.run(go())
    table = Table(title="messages per edge (as delivered)")
    for col in ("round", "edge", "text"):
        table.add_column(col)
    for m in result.log.messages():
        text = m["text"] if len(m["text"]) < 160 else m["text"][:157] + "..."
        table.add_row(str(m["round"]), f"{m['sender']} -> {m['receiver']}", text)
    console.print(table)
    console.print(f"[bold]final answer:[/] {result.answer}", highlight=False)
    proxy = ProxyJudge(embedder)
    mt = proxy.mt_proxy(result.answer, task.misinfo_goal, task.misinfo_argument, task.ground_truth)
    ref = proxy.reference_agreement(result.answer, task.reference_solution, task.misinfo_goal)
    mt_text = "n/a" if mt["score"] is None else f"{mt['score']:.1f}/10 over {mt['sentences']} sentences"
    ref_text = "n/a" if ref["cosine"] is None else f"cosine {ref['cosine']:.3f}, closer to reference than goal: {ref['success']}"
    console.print(f"{proxy.name}: MT proxy {mt_text}; reference agreement {ref_text}", highlight=False)
    fallbacks = [e.data["kind"] for e in result.log.of_type("fallback")]
    console.print(
        f"[dim]{result.usage.prompt_tokens} prompt + {result.usage.completion_tokens} completion tokens in "
        f"{result.usage.calls} calls, {time.perf_counter() - started:.1f} s; runtime fallbacks: "
        f"{dict((k, fallbacks.count(k)) for k in sorted(set(fallbacks)))}[/]"
    )
