"""`misguard bench misinfotask`: the ARGUS setting on MisInfoTask."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError

from ..errors import ConfigError
from ._common import console, friendly_errors, settings_from
from .bench import bench_app


class AttackName(str, Enum):
    none = "none"
    inject = "inject"
    tool = "tool"
    rag = "rag"


class TopologyName(str, Enum):
    self = "self"
    chain = "chain"
    full = "full"
    circle = "circle"
    star = "star"
    random = "random"


class Executor(str, Enum):
    asyncio = "asyncio"
    ray = "ray"


def register(app: typer.Typer) -> None:
    """The command is added to `bench_app` at import time (see below)."""


@bench_app.command("misinfotask")
@friendly_errors
def misinfotask(
    ctx: typer.Context,
    data: Annotated[Optional[str], typer.Option(help="MisinfoTask.json path, or `sample` for the shipped tasks (default <data_dir>/misinfotask/MisinfoTask.json, else ../shared/data/...).")] = None,
    model: Annotated[Optional[str], typer.Option(help="LLM spec of the agents (default: --llm); the LLM judge uses --llm.")] = None,
    attack: Annotated[AttackName, typer.Option(help="Misinformation attack.")] = AttackName.inject,
    defense: Annotated[str, typer.Option(help="Defense by registry name (`none`, or one a defense package registers).")] = "none",
    topology: Annotated[TopologyName, typer.Option(help="Communication graph (`self`: the planner decides).")] = TopologyName.self,
    rounds: Annotated[int, typer.Option(min=1, help="Rounds of collaboration (paper: 5).")] = 5,
    tasks: Annotated[Optional[str], typer.Option(help="Task ids, e.g. 0-9,12 (default: all).")] = None,
    seeds: Annotated[str, typer.Option(help="Seeds, e.g. 0 or 0,1,2 or 0-4; each task runs once per seed.")] = "0",
    concurrency: Annotated[int, typer.Option(min=1, help="Runs in flight at once (Ray: CPUs for a local cluster).")] = 1,
    output: Annotated[Path, typer.Option(help="Directory for the run log, event logs and reports; rerun to resume.")] = Path("runs/misinfotask"),
    executor: Annotated[Executor, typer.Option(help="asyncio (in-process) or ray (local cluster, or RAY_ADDRESS).")] = Executor.asyncio,
) -> None:
    """Run the multi-agent system on MisInfoTask under an attack, judge it, report MT and TSR."""
    from ..bench.misinfotask import (
        SweepConfig,
        default_dataset_path,
        load_tasks,
        parse_seeds,
        parse_task_selection,
        results_table,
        run_sweep,
        sample_tasks_path,
        write_reports,
    )

    settings = settings_from(ctx)
    path = sample_tasks_path() if data == "sample" else Path(data) if data else default_dataset_path(settings.data_dir)
    records = load_tasks(path)
    try:
        config = SweepConfig(
            data=str(path), model=model or settings.llm.model, attack=attack.value, defense=defense,
            topology=topology.value, rounds=rounds,
            tasks=tuple(parse_task_selection(tasks, [t.id for t in records])),
            seeds=tuple(parse_seeds(seeds)), concurrency=concurrency, executor=executor.value,
        )
    except ValidationError as exc:
        raise ConfigError(f"invalid options: {exc.errors()[0]['msg']}") from None
    log = run_sweep(settings, config, records, output, console=console)
    log.close()
    summary = write_reports(output, seed=settings.seed)
    console.print(results_table(summary))
    console.print(
        f"MAS tokens/run {summary['mas_tokens_per_run']}, judge tokens/run {summary['judge_tokens_per_run']}, "
        f"wall s/run {summary['wall_s_per_run']}; reports in {output}/ (summary.json, results.md, mt_curve.png)",
        highlight=False,
    )


@bench_app.command("mas-overhead")
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
