"""`misguard bench misinfotask` (the ARGUS setting on MisInfoTask), its comparison report,
the ARGUS localization speed bench, and the per-message defense probe.

Attack, defense and topology choices come from their registries, so a newly registered
plug-in appears here without editing this file.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from pydantic import ValidationError

from ..attacks import ATTACKS
from ..errors import ConfigError
from ..mas import DEFENSES, TOPOLOGIES
from ._common import MULTI_AGENT, console, friendly_errors, select_tasks, settings_from, task_file
from .bench import bench_app


def registry_choice(name: str, names: list[str]) -> type[Enum]:
    """A str Enum of a registry's current names (typer shows and checks them)."""
    return Enum(name, {n: n for n in names}, type=str)  # type: ignore[return-value]


AttackName = registry_choice("AttackName", ["none", *ATTACKS.names()])
TopologyName = registry_choice("TopologyName", TOPOLOGIES.names())
DefenseName = registry_choice("DefenseName", DEFENSES.names())


class Executor(str, Enum):
    asyncio = "asyncio"
    ray = "ray"


#: Options shared by the sweep commands.
DataOption = Annotated[Optional[str], typer.Option("--data", help="Task file (MisInfoTask format), a dataset name (`misguard data list`), or `sample` for the tasks that ship with misguard (default: <data_dir>/misinfotask/MisinfoTask.json).")]
ModelOption = Annotated[Optional[str], typer.Option("--model", help="LLM spec of the agents (default: --llm); the LLM judge uses --llm.")]
RectifierOption = Annotated[Optional[str], typer.Option("--rectifier-model", help="LLM spec of the ARGUS rectifier (default: defense.rectifier_model, else the agents' model).")]
RoundsOption = Annotated[int, typer.Option("--rounds", min=1, help="Rounds of collaboration (paper: 5).")]
MasParamOption = Annotated[Optional[list[str]], typer.Option("--mas-param", help="KEY=VALUE overriding the multi-agent system's configuration, repeatable (e.g. worker_max_tokens=120, max_tool_calls=0).")]
TasksOption = Annotated[Optional[str], typer.Option("--tasks", help="Task ids, e.g. 0-9,12 (default: all).")]
JudgeOption = Annotated[str, typer.Option("--judge", help="The LLM judge's verdicts scored as each run finishes: mt,claims,ts, a subset, or none (the proxy only; judge later with a stronger model: `misguard runs rejudge --judge ...`).")]
SeedsOption = Annotated[str, typer.Option("--seeds", help="Seeds, e.g. 0 or 0,1,2 or 0-4; each task runs once per seed.")]
ConcurrencyOption = Annotated[int, typer.Option("--concurrency", min=1, help="Runs in flight at once (Ray: CPUs for a local cluster).")]
ExecutorOption = Annotated[Executor, typer.Option("--executor", help="asyncio (in-process) or ray (local cluster, or RAY_ADDRESS).")]


def register(app: typer.Typer) -> None:
    """`misguard run`; the bench commands are added to `bench_app` at import time (below)."""
    app.command("run", rich_help_panel=MULTI_AGENT)(run)


def parse_params(pairs: list[str], option: str = "--defense-param") -> dict[str, Any]:
    """`key=value` pairs; values are read as JSON when they parse (numbers, booleans,
    null), else kept as strings. The model they configure validates them."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"bad {option} {pair!r}; use KEY=VALUE, e.g. alpha=0.3")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


@friendly_errors
def run(
    ctx: typer.Context,
    data: Annotated[str, typer.Option("--data", help="Task file (MisInfoTask format: docs/argus.md), or `sample`.")],
    task: Annotated[int, typer.Option("--task", help="The task's id in the file.")],
    defense: Annotated[DefenseName, typer.Option(help="Defense by registry name (`misguard defenses list`).")] = DefenseName("argus"),  # type: ignore[valid-type]
    defense_param: Annotated[Optional[list[str]], typer.Option(help="KEY=VALUE overriding the defense's settings (`misguard defenses show NAME`), repeatable.")] = None,
    attack: Annotated[AttackName, typer.Option(help="An attack to run against the system (uses the task's misinformation), or none.")] = AttackName("none"),  # type: ignore[valid-type]
    point: Annotated[str, typer.Option(help="Where the attack lands: random, most_central, all, or an agent id.")] = "most_central",
    topology: Annotated[TopologyName, typer.Option(help="Communication graph (`self`: the planner decides).")] = TopologyName("star"),  # type: ignore[valid-type]
    rounds: RoundsOption = 3,
    mas_param: MasParamOption = None,
    events: Annotated[Optional[Path], typer.Option(help="Write the run's event log (JSONL) here.")] = None,
) -> None:
    """Run a multi-agent system on one task under a defense (and, to see it work, an attack):
    the agents' model is `--llm`; prints what the defense did and the final answer."""
    import asyncio

    from ..attacks import AttackSpec, build_attack
    from ..embed import get_embedder
    from ..llm import get_llm
    from ..mas import DefenseContext, MASConfig, MultiAgentSystem, RoleLLMs, build_defense
    from ._show import show_defense

    settings = settings_from(ctx)
    _, records = task_file(settings, data)
    (chosen,) = select_tasks(records, str(task))
    llm = get_llm(None, settings.llm)
    rectifier = get_llm(settings.defense.rectifier_model, settings.llm) if settings.defense.rectifier_model else llm
    context = DefenseContext(settings, {"worker": llm, "rectifier": rectifier}, get_embedder(None, settings.embed))
    interceptors = build_defense(_value(defense), context, parse_params(defense_param or []))
    try:
        config = MASConfig(topology=_value(topology), rounds=rounds, seed=settings.seed,
                           **parse_params(mas_param or [], "--mas-param"))
    except ValidationError as exc:
        raise ConfigError(f"bad --mas-param: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}") from None
    system = MultiAgentSystem(chosen.runtime_task(), RoleLLMs(worker=llm), config, interceptors=interceptors)

    async def go() -> tuple[Any, list[str]]:
        await system.plan()
        hijacked: list[str] = []
        if _value(attack) != "none":
            spec = AttackSpec(chosen.misinfo_goal, chosen.misinfo_argument, point=point, seed=settings.seed,
                              embedder=context.embedder)
            built = build_attack(_value(attack), spec)
            hijacked = list(built.apply(system)["targets"]) if built is not None else []
        return await system.run(), hijacked

    console.print(f"task {chosen.id}: {chosen.name} ({chosen.agent_num} agents, {_value(topology)}, {rounds} rounds, "
                  f"agents on {llm.spec}); defense {_value(defense)}; attack {_value(attack)}", highlight=False)
    result, hijacked = asyncio.run(go())
    if hijacked:
        console.print(f"hijacked by the attack: {', '.join(hijacked)}", highlight=False)
    console.print(f"[bold]what {_value(defense)} did[/]")
    show_defense(result, hijacked, console)
    console.print(f"[bold]final answer[/]: {result.answer}", highlight=False)
    if events is not None:
        result.log.dump(events)
        console.print(f"event log: {events}")


@bench_app.command("misinfotask")
@friendly_errors
def misinfotask(
    ctx: typer.Context,
    data: DataOption = None,
    model: ModelOption = None,
    attack: Annotated[AttackName, typer.Option(help="Misinformation attack.")] = AttackName("inject"),  # type: ignore[valid-type]
    defense: Annotated[DefenseName, typer.Option(help="Defense by registry name.")] = DefenseName("none"),  # type: ignore[valid-type]
    defense_param: Annotated[Optional[list[str]], typer.Option(help="KEY=VALUE overriding the defense's settings section, repeatable (e.g. dynamic_localization=false, alpha=0.3).")] = None,
    rectifier_model: RectifierOption = None,
    claims_db: Annotated[Optional[str], typer.Option(help="Claim store to ground the defense in: a directory, or qdrant:DIR / qdrant+http://HOST:6333/COLLECTION.")] = None,
    topology: Annotated[TopologyName, typer.Option(help="Communication graph (`self`: the planner decides).")] = TopologyName("self"),  # type: ignore[valid-type]
    rounds: RoundsOption = 5,
    mas_param: MasParamOption = None,
    tasks: TasksOption = None,
    seeds: SeedsOption = "0",
    concurrency: ConcurrencyOption = 1,
    output: Annotated[Path, typer.Option(help="Directory for the run log, event logs and reports; rerun to resume.")] = Path("runs/misinfotask"),
    executor: ExecutorOption = Executor.asyncio,
    judge: JudgeOption = "mt,claims,ts",
) -> None:
    """Run the multi-agent system on MisInfoTask under an attack and a defense, judge it, report MT and TSR."""
    from ..bench.misinfotask import parse_verdicts, results_table, run_sweep, write_reports
    from ..bench.misinfotask._report import judge_notes

    settings = settings_from(ctx)
    path, records = task_file(settings, data)
    config = _sweep_config(
        path, records, tasks, seeds, model=model or settings.llm.model, attack=_value(attack), defense=_value(defense),
        defense_params=parse_params(defense_param or []), rectifier_model=rectifier_model, claims_db=claims_db,
        topology=_value(topology), rounds=rounds, mas_params=parse_params(mas_param or [], "--mas-param"),
        concurrency=concurrency, executor=executor.value, llm_verdicts=parse_verdicts(judge),
    )
    log = run_sweep(settings, config, records, output, console=console)
    log.close()
    summary = write_reports(output, seed=settings.seed)
    console.print(results_table(summary))
    for note in judge_notes(summary):
        console.print(note, style="bold red" if note.startswith("WARNING") else None, highlight=False)
    console.print(
        f"MAS tokens/run {summary['mas_tokens_per_run']}, judge tokens/run {summary['judge_tokens_per_run']}, "
        f"wall s/run {summary['wall_s_per_run']}; defense cost/round {summary['defense_cost']}; "
        f"reports in {output}/ (summary.json, results.md, mt_curve.png)",
        highlight=False,
    )


def _sweep_config(path: Path, records: list[Any], tasks: str | None, seeds: str, **fields: Any) -> Any:
    """A validated SweepConfig (bad options become one ConfigError line)."""
    from ..bench.misinfotask import SweepConfig
    from ..mas import parse_seeds, parse_task_selection

    try:
        return SweepConfig(
            data=str(path), tasks=tuple(parse_task_selection(tasks, [t.id for t in records])),
            seeds=tuple(parse_seeds(seeds)), **fields,
        )
    except ValidationError as exc:
        raise ConfigError(f"invalid options: {exc.errors()[0]['msg']}") from None


def _value(choice: Any) -> str:
    return choice.value if isinstance(choice, Enum) else str(choice)


@bench_app.command("misinfotask-grid")
@friendly_errors
def misinfotask_grid(
    ctx: typer.Context,
    data: DataOption = None,
    model: ModelOption = None,
    attacks: Annotated[str, typer.Option(help="Attacks, comma-separated.")] = "inject,tool,rag",
    defenses: Annotated[str, typer.Option(help="Defenses, comma-separated.")] = "none,argus",
    topologies: Annotated[str, typer.Option(help="Topologies, comma-separated.")] = "self,chain,full,circle,star",
    rectifier_model: RectifierOption = None,
    rounds: RoundsOption = 5,
    mas_param: MasParamOption = None,
    tasks: TasksOption = None,
    seeds: SeedsOption = "0",
    concurrency: ConcurrencyOption = 1,
    output: Annotated[Path, typer.Option(help="One sub-directory per attack-defense-topology, plus report/.")] = Path("runs/misinfotask-grid"),
    executor: ExecutorOption = Executor.asyncio,
) -> None:
    """Every attack x defense x topology (the paper's full sweep), each resumable, then the comparison report."""
    from ..bench.misinfotask import Components, run_sweep, write_comparison, write_reports

    settings = settings_from(ctx)
    path, records = task_file(settings, data)
    split = lambda text: [x.strip() for x in text.split(",") if x.strip()]  # noqa: E731
    configs = [
        _sweep_config(
            path, records, tasks, seeds, model=model or settings.llm.model, attack=attack, defense=defense,
            rectifier_model=rectifier_model, topology=topology, rounds=rounds,
            mas_params=parse_params(mas_param or [], "--mas-param"), concurrency=concurrency, executor=executor.value,
        )
        for attack in split(attacks) for defense in split(defenses) for topology in split(topologies)
    ]
    components = Components.build(settings, configs[0]) if executor is Executor.asyncio else None
    dirs = []
    for config in configs:
        out = output / f"{config.attack}-{config.defense}-{config.topology}"
        console.print(f"[bold]{out.name}[/]")
        run_sweep(settings, config, records, out, console=console, components=components).close()
        write_reports(out, seed=settings.seed)
        dirs.append(out)
    write_comparison(dirs, output / "report", seed=settings.seed)
    console.print((output / "report" / "table1.md").read_text(), highlight=False, markup=False)


@bench_app.command("misinfotask-judge-check")
@friendly_errors
def misinfotask_judge_check(
    ctx: typer.Context,
    data: DataOption = None,
    tasks: Annotated[str, typer.Option(help="Task ids to check on: keep them apart from the reported sweeps' tasks.")] = "10-29",
    output: Annotated[Path, typer.Option(help="Directory for the run log and check.md (rerun to resume).")] = Path("runs/judge-check"),
) -> None:
    """Check the `--llm` judge's claim check on texts of known stance built from each task
    (misinformation arguments, ground truths, reference solution) before trusting its MT."""
    from ..bench.misinfotask._judgecheck import check_judge, check_markdown
    from ..llm import get_llm

    settings = settings_from(ctx)
    _, records = task_file(settings, data)
    summary = check_judge(settings, select_tasks(records, tasks), get_llm(None, settings.llm), output)
    text = check_markdown(summary, f"llm:{settings.llm.model}")
    (output / "check.json").write_text(json.dumps(summary, indent=2))
    (output / "check.md").write_text(text)
    console.print(text, highlight=False, markup=False)
    console.print(f"written: {output}/check.md, check.json")


@bench_app.command("localization", hidden=True)
@friendly_errors
def localization(
    ctx: typer.Context,
    agents: Annotated[int, typer.Option(min=3, help="Agents in the random graph.")] = 2000,
    degree: Annotated[int, typer.Option(min=1, help="Out-neighbours per agent.")] = 10,
    repeats: Annotated[int, typer.Option(min=1, help="Repetitions; medians are reported.")] = 3,
    defense: Annotated[str, typer.Option(help="An ARGUS preset: argus or argus-paper.")] = "argus",
    output: Annotated[Path, typer.Option(help="Directory for the run log and summary.")] = Path("runs/bench-localization"),
) -> None:
    """Seconds per round of ARGUS's channel localization: round 1 and a later round with goals and traffic."""
    from ..bench.misinfotask._localization import run_localization_bench

    run_localization_bench(settings_from(ctx), output, agents=agents, degree=degree, repeats=repeats, console=console,
                           defense_name=defense)


@bench_app.command("defense-probe")
@friendly_errors
def defense_probe(
    ctx: typer.Context,
    data: DataOption = None,
    defense: Annotated[DefenseName, typer.Option(help="Defense by registry name.")] = DefenseName("argus"),  # type: ignore[valid-type]
    defense_param: Annotated[Optional[list[str]], typer.Option(help="KEY=VALUE overriding the defense's settings section, repeatable (e.g. ground_truth=true).")] = None,
    rectifier_model: RectifierOption = None,
    tasks: Annotated[str, typer.Option(help="Task ids to probe; keep them apart from tasks anything was tuned on.")] = "60-79",
    k: Annotated[int, typer.Option("--k", min=1, help="Sentences per message (misinformation arguments or ground truths).")] = 2,
    output: Annotated[Path, typer.Option(help="Directory for the run log and summary.json; rerun to resume.")] = Path("runs/defense-probe"),
) -> None:
    """Does a defense act on a message carrying a task's misinformation, and leave a true one alone? (no agents run)"""
    from ..bench.misinfotask._probe import run_defense_probe

    settings = settings_from(ctx)
    _, records = task_file(settings, data)
    run_defense_probe(settings, select_tasks(records, tasks), output, defense=_value(defense),
                      defense_params=parse_params(defense_param or []), rectifier_model=rectifier_model, k=k, console=console)


@bench_app.command("mas-overhead", hidden=True)
@friendly_errors
def mas_overhead(
    ctx: typer.Context,
    sizes: Annotated[str, typer.Option(help="Agent counts, comma-separated.")] = "5,50,200,500",
    topologies: Annotated[str, typer.Option(help="Topologies, comma-separated.")] = "chain,star,full,random",
    rounds: Annotated[int, typer.Option(min=1, help="Rounds per run.")] = 3,
    repeats: Annotated[int, typer.Option(min=1, help="Repetitions; medians are reported.")] = 3,
    output: Annotated[Path, typer.Option(help="Directory for the run log and summary.")] = Path("runs/bench-mas-overhead"),
) -> None:
    """The multi-agent runtime's own overhead (no model: a zero-latency mock answers)."""
    from ..bench.misinfotask._overhead import run_overhead_bench

    try:
        size_list = [int(s) for s in sizes.split(",") if s.strip()]
    except ValueError:
        raise ConfigError(f"bad --sizes {sizes!r}; use e.g. 5,50,500") from None
    run_overhead_bench(
        settings_from(ctx), output, sizes=size_list, topologies=[t.strip() for t in topologies.split(",") if t.strip()],
        rounds=rounds, repeats=repeats, console=console,
    )
