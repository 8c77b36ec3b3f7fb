"""The framework adapters' own cost per screened message (`misguard bench
integration-overhead`).

For each framework, a small real app (LangGraph: a chain of plain-function nodes;
Agents SDK: a chain of agents handing off, the SDK's `ScriptedModel`; AutoGen: a round-robin
team on AutoGen's `ReplayChatCompletionClient`) runs unprotected and protected with a no-op
interceptor, interleaved run by run so both arms see the same machine load. The adapter's
cost per message is (protected wall - unprotected wall - the interceptor's own logged time)
/ messages screened: the translation, the graph, the round bookkeeping, the event log and
the hop to the protection's loop, and nothing of a defense's work. Medians over the pairs.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ..config import Settings
from ..mas import Interception
from ..runlog import RunHeader, RunLog, public_settings

FRAMEWORKS = ("langgraph", "openai-agents", "autogen")


class NoOp:
    """Passes every message at once (the cheapest possible defense)."""

    name = "noop"

    async def start_round(self, view: Any) -> None:
        return None

    async def intercept(self, message: Any, view: Any) -> Interception:
        return Interception.passed()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


Run = Callable[[bool], tuple[float, Any]]
"""(protected?) -> (wall seconds of one run of the app, the protection or None). An async
app runs under its own `asyncio.run`, as a script or a request handler would run it."""


def _langgraph(agents: int, mode: str) -> Run:
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    from ..integrations.langgraph import protect

    def app() -> Any:
        builder = StateGraph(MessagesState)
        names = [f"agent_{i}" for i in range(agents)]
        for name in names:
            builder.add_node(name, lambda state, name=name: {"messages": [AIMessage(f"{name} reports its findings.")]})
        builder.add_edge(START, names[0])
        for a, b in zip(names, names[1:]):
            builder.add_edge(a, b)
        builder.add_edge(names[-1], END)
        return builder.compile()

    def run(protected: bool) -> tuple[float, Any]:
        graph = app()
        guard = protect(graph, interceptors=[NoOp()]) if protected else None
        started = time.perf_counter()
        if mode == "invoke":
            graph.invoke({"messages": [HumanMessage("go")]})
        else:
            asyncio.run(graph.ainvoke({"messages": [HumanMessage("go")]}))
        return time.perf_counter() - started, guard

    return run


def _openai_agents(agents: int) -> Run:
    from agents import Agent, Runner, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    from ..integrations.openai_agents import protect

    set_tracing_disabled(True)

    def app() -> Any:
        nxt = None
        for i in reversed(range(agents)):
            name = f"agent_{i}"
            steps = [assistant_message(f"{name} reports its findings.", item_id=f"m{i}")]
            if nxt is not None:
                steps.append(function_call(f"transfer_to_{nxt.name}", {}, call_id=f"c{i}"))
            nxt = Agent(name=name, model=ScriptedModel([steps]), handoffs=[nxt] if nxt is not None else [])
        return nxt

    def run(protected: bool) -> tuple[float, Any]:
        first = app()
        guard = protect(first, interceptors=[NoOp()]) if protected else None
        started = time.perf_counter()
        asyncio.run(Runner.run(first, "go", max_turns=agents + 2))
        return time.perf_counter() - started, guard

    return run


def _autogen(agents: int) -> Run:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_ext.models.replay import ReplayChatCompletionClient

    from ..integrations.autogen import protect

    def app() -> Any:
        members = [AssistantAgent(f"agent_{i}", model_client=ReplayChatCompletionClient([f"agent_{i} reports."]))
                   for i in range(agents)]
        return RoundRobinGroupChat(members, termination_condition=MaxMessageTermination(agents + 1))

    def run(protected: bool) -> tuple[float, Any]:
        team = app()
        guard = protect(team, interceptors=[NoOp()]) if protected else None
        started = time.perf_counter()
        asyncio.run(team.run(task="go"))
        return time.perf_counter() - started, guard

    return run


#: Each framework's app, by the name the bench reports (LangGraph: sync and async runs).
BUILDERS: dict[str, tuple[str, Callable[[int], Run]]] = {
    "langgraph invoke": ("langgraph", lambda n: _langgraph(n, "invoke")),
    "langgraph ainvoke": ("langgraph", lambda n: _langgraph(n, "ainvoke")),
    "openai-agents": ("openai-agents", _openai_agents),
    "autogen": ("autogen", _autogen),
}


def _pairs(run: Run, repeats: int, loops: int) -> list[dict[str, Any]]:
    run(False)  # warm-up: imports, caches
    run(True)[1].finish()
    out = []
    for i in range(repeats):
        # interleaved, alternating which arm goes first; each arm runs the app `loops` times
        order = (False, True) if i % 2 == 0 else (True, False)
        walls = {False: 0.0, True: 0.0}
        screened, defense_s = 0, 0.0
        for protected in order:
            for _ in range(loops):
                wall, guard = run(protected)
                walls[protected] += wall
                if guard is not None:
                    log = guard.finish()
                    screened += len(log.messages(delivered_only=False))
                    defense_s += sum(u.latency_s for u in log.usage_by("interceptor").values())
        out.append({"plain_s": walls[False] / loops, "protected_s": walls[True] / loops, "defense_s": defense_s / loops,
                    "messages": screened // loops,
                    "adapter_ms_per_message": 1000 * (walls[True] - walls[False] - defense_s) / max(screened, 1)})
    return out


def run_integration_overhead_bench(
    settings: Settings, output: Path, *, frameworks: list[str], agents: int, repeats: int, loops: int,
    console: Console,
) -> list[dict[str, Any]]:
    unknown = sorted(set(frameworks) - set(FRAMEWORKS))
    if unknown:
        from ..errors import ConfigError

        raise ConfigError(f"unknown framework(s) {unknown}; choose from {', '.join(FRAMEWORKS)}")
    from importlib import metadata

    versions = {}
    for fw, dist in (("langgraph", "langgraph"), ("openai-agents", "openai-agents"), ("autogen", "autogen-core")):
        if fw in frameworks:
            versions[fw] = metadata.version(dist)
    header = RunHeader(kind="bench.integration_overhead", settings=public_settings(settings),
                       components={"frameworks": versions, "interceptor": NoOp().describe()}, seeds={},
                       params={"frameworks": frameworks, "agents": agents, "repeats": repeats, "loops": loops,
                               "note": "paired, interleaved runs; no-op interceptor; its logged time subtracted"})
    output.mkdir(parents=True, exist_ok=True)
    log = RunLog.open(output / "runlog.jsonl", header, resume=False)
    rows = []
    for name, (fw, builder) in BUILDERS.items():
        if fw not in frameworks:
            continue
        pairs = _pairs(builder(agents), repeats, loops)
        for i, pair in enumerate(pairs):
            log.write("pair", key=f"{name}:{i}", framework=fw, app=name, **pair)
        row = {"framework": fw, "app": name, "version": versions[fw], "agents": agents, "messages": pairs[0]["messages"],
               "pairs": len(pairs)}
        for key in ("plain_s", "protected_s", "defense_s", "adapter_ms_per_message"):
            row[key] = statistics.median(p[key] for p in pairs)
        row["adapter_ms_p90"] = sorted(p["adapter_ms_per_message"] for p in pairs)[int(0.9 * (len(pairs) - 1))]
        log.write("summary", key=name, **row)
        rows.append(row)
    log.close()
    (output / "summary.json").write_text(json.dumps(rows, indent=2))
    table = Table(title=f"adapter overhead per screened message ({agents} agents, median of {repeats} interleaved "
                        f"pairs of {loops} runs each)")
    for col in ("app", "version", "messages / run", "plain run ms", "protected run ms", "adapter ms / message", "p90"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(r["app"], r["version"], str(r["messages"]), f"{1000 * r['plain_s']:.2f}",
                      f"{1000 * r['protected_s']:.2f}", f"{r['adapter_ms_per_message']:.3f}", f"{r['adapter_ms_p90']:.3f}")
    console.print(table)
    return rows


def run_integration_parity(
    settings: Settings, tasks: list[Any], output: Path, *, defense: str = "argus", rounds: int = 2,
    topology: str = "chain", attack: str = "inject", console: Console | None = None,
) -> list[dict[str, Any]]:
    """Decision parity with the native runtime: each task runs natively under `defense` with
    the `--llm` model as every agent, then every message its agents wrote is replayed through
    the integrations' `Protection` with a fresh defense built the same way; the decisions
    (actions, delivered texts, interceptions, monitored channels, goals) must be identical.
    For repeatable answers, set `llm.parallel = 1` and `llm.prompt_cache = false`."""
    from ..attacks import AttackSpec, build_attack
    from ..embed import get_embedder
    from ..integrations import Protection, compare_decisions, replay
    from ..llm import get_llm
    from ..mas import DefenseContext, MASConfig, MultiAgentSystem, RoleLLMs, build_defense

    console = console or Console()
    llm = get_llm(None, settings.llm)
    embedder = get_embedder(None, settings.embed)
    output.mkdir(parents=True, exist_ok=True)
    rows = []
    for task in tasks:
        context = DefenseContext(settings, {"worker": llm, "rectifier": llm}, embedder)
        system = MultiAgentSystem(task.runtime_task(), RoleLLMs(worker=llm),
                                  MASConfig(topology=topology, rounds=rounds, seed=settings.seed),
                                  interceptors=build_defense(defense, context))

        async def native_run() -> Any:
            await system.plan()
            built = build_attack(attack, AttackSpec(goal=task.misinfo_goal, arguments=task.misinfo_argument,
                                                    point="most_central", embedder=embedder, seed=settings.seed))
            if built is not None:
                built.apply(system)
            return await system.run()

        started = time.perf_counter()
        native = asyncio.run(native_run()).log
        native_s = time.perf_counter() - started
        native.dump(output / f"native-{task.id}.jsonl")
        started = time.perf_counter()
        replayed = replay(native, Protection(build_defense(defense, context), framework="replay",
                                             log_path=output / f"replayed-{task.id}.jsonl"))
        report = compare_decisions(native, replayed)
        row = {"task": task.id, "messages": report.messages, "interceptions": report.interceptions,
               "rounds": report.rounds, "same": report.same, "differences": report.differences[:20],
               "rewrites": sum(m["action"] == "rewrite" for m in native.messages(delivered_only=False)),
               "native_s": round(native_s, 1), "replay_s": round(time.perf_counter() - started, 1)}
        console.print(f"task {task.id}: {row['messages']} messages, {row['interceptions']} interceptions, "
                      f"{row['rewrites']} rewritten; decisions {'identical' if row['same'] else 'DIFFER'}", highlight=False)
        rows.append(row)
    (output / "parity.json").write_text(json.dumps({"defense": defense, "llm": llm.describe(), "rounds": rounds,
                                                    "topology": topology, "attack": attack, "results": rows}, indent=2))
    return rows
