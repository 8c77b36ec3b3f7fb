"""Demo section: ARGUS on a shipped task under prompt injection, with and without the
defense, on the configured local model (every role): the monitored channels, one rewrite,
and the embedding proxies of both final answers.

The two runs share a response cache: at temperature 0 with one seed, every request of the
defended run that is identical to one of the first run (the plan, the round's messages
before the rectifier sees them) is answered from it, so only what the defense changes is
generated again. That, one round, one monitored channel and short turns shorten the section (376 s on 2 idle
cores with the 1.5B pack, still above the demo's five-minute budget); the benchmark
(`misguard bench misinfotask`) runs without a cache."""

from __future__ import annotations

import asyncio
import difflib
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.rule import Rule
from rich.table import Table

from ..attacks import AttackSpec, build_attack
from ..bench.misinfotask import ProxyJudge, load_tasks, sample_tasks_path
from ..config import Settings
from ..defenses import split_sentences
from ..embed import Embedder, get_embedder
from ..llm import LLM, get_llm
from ..mas import DefenseContext, MASConfig, MASResult, MultiAgentSystem, RoleLLMs, build_defense
from .demo_mas import show_messages

ROUNDS = 1
TASK_ID = 0


async def _run(task: Any, llm: LLM, embedder: Embedder, settings: Settings, defended: bool) -> MASResult:
    # Short turns and no tool calls keep the section to a few minutes on 2 cores.
    config = MASConfig(
        topology="star", rounds=ROUNDS, seed=settings.seed, max_tool_calls=0,
        worker_max_tokens=120, planner_max_tokens=160, concluder_max_tokens=120,
    )
    # Grounded rectification: the task's ground truths are the rectifier's evidence (the
    # paper's "w/ Ground Truth" setting); a 1.5B model without evidence rarely objects.
    context = DefenseContext(settings, {"worker": llm}, embedder, ground_truths=tuple(task.ground_truth))
    # One channel, the injected hub's best outgoing edge (round 1 ranks each source's best
    # edge first), instead of the paper's N + 1: on 2 cores the 1.5B model reads about 23
    # prompt tokens/s, so each rectification costs about 45 s here.
    interceptors = build_defense("argus", context, {"ground_truth": True, "top_k": 1}) if defended else ()
    system = MultiAgentSystem(task.runtime_task(), RoleLLMs(worker=llm), config, interceptors=interceptors)
    await system.plan()
    attack = build_attack("inject", AttackSpec(task.misinfo_goal, task.misinfo_argument, point="most_central", seed=settings.seed))
    assert attack is not None
    attack.apply(system)
    return await system.run()


def _changed_sentences(before: str, after: str, limit: int = 2) -> list[tuple[str, str]]:
    """The first `limit` sentence-level differences of a rewrite (a rewrite usually keeps
    the opening and corrects a sentence further on)."""
    old, new = split_sentences(before), split_sentences(after)
    changes = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag != "equal":
            changes.append((" ".join(old[i1:i2]), " ".join(new[j1:j2])))
    return changes[:limit]


def _cut(text: str, n: int = 220) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def run(settings: Settings, console: Console) -> None:
    task = next(t for t in load_tasks(sample_tasks_path()) if t.id == TASK_ID)
    with tempfile.TemporaryDirectory(prefix="misguard-demo-llm-cache-") as cache:
        # The rectifier's three calls share the model's slots: on 2 cores one answer can take
        # minutes, far above the 120 s default meant for interactive use.
        update = {"cache_dir": Path(cache), "temperature": 0.0, "timeout_s": max(settings.llm.timeout_s, 900.0)}
        llm = get_llm(None, settings.llm.model_copy(update=update))
        _compare(task, llm, settings, console)


def _compare(task: Any, llm: LLM, settings: Settings, console: Console) -> None:
    embedder = get_embedder(None, settings.embed)
    proxy = ProxyJudge(embedder)
    console.print(f"task: [bold]{task.name}[/]; prompt injection at the hub; {ROUNDS} round; every role on {llm.spec}; "
                  "the rectifier sees the task's ground truths")
    rows = []
    for defended in (False, True):
        started = time.perf_counter()
        cached_before = llm.usage.cached_calls
        result = asyncio.run(_run(task, llm, embedder, settings, defended))
        label = "ARGUS" if defended else "attack only"
        console.print(Rule(f"{label}: {ROUNDS} round{'s' if ROUNDS > 1 else ''}", style="dim"))
        if not defended:
            show_messages(result, console)
        if defended:
            for event in result.log.of_type("interceptor_round"):
                channels = ", ".join(f"{a}->{b}" for a, b in event.data["localization"]["channels"])
                console.print(f"round {event.round} monitored ({event.data['localization']['mode']}): {channels}; "
                              f"goals so far: {event.data['goals'] or 'none'}", highlight=False)
            rewrites = [e for e in result.log.of_type("interception") if e.data["action"] == "rewrite"]
            if rewrites:
                e = rewrites[0]
                console.print(f"[bold]rewrite[/] on {e.data['sender']}->{e.data['receiver']} (round {e.round}, {e.data['reason']}):")
                for before, after in _changed_sentences(e.data["text_before"], e.data["text_after"]):
                    if before:
                        console.print(f"  {'before' if after else 'removed'}: {_cut(before)}", highlight=False)
                    if after:
                        console.print(f"  {'after ' if before else 'added'}: {_cut(after)}", highlight=False)
            else:
                console.print("the rectifier rewrote no message in this run")
            usage = result.log.usage_by("interceptor").get("argus")
            if usage:
                console.print(f"[dim]ARGUS cost: {usage.calls} calls, {usage.total_tokens} tokens, {usage.latency_s:.1f} s; "
                              f"{llm.usage.cached_calls - cached_before} requests identical to the first run's were "
                              "answered from the cache[/]")
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
