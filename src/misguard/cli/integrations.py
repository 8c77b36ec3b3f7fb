"""`misguard bench integration-overhead`: the framework adapters' own cost per message."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import console, friendly_errors, select_tasks, settings_from, task_file
from .bench import bench_app


def register(app: typer.Typer) -> None:
    """The command is added to `misguard bench` when this module is imported."""


@bench_app.command("integration-overhead")
@friendly_errors
def integration_overhead(
    ctx: typer.Context,
    output: Annotated[Path, typer.Option(help="Directory for the run log and summary.")] = Path("runs/bench-integration-overhead"),
    framework: Annotated[Optional[list[str]], typer.Option(help="langgraph, openai-agents or autogen (repeatable; default: all).")] = None,
    agents: Annotated[int, typer.Option(help="Agents in each app.", min=2)] = 8,
    repeats: Annotated[int, typer.Option(help="Interleaved pairs; medians are reported.", min=1)] = 15,
    loops: Annotated[int, typer.Option(help="Runs of the app per arm in each pair (averages out timer noise).", min=1)] = 10,
) -> None:
    """The adapters' cost per screened message, without any defense's work (no-op interceptor)."""
    from ..bench.integrations import FRAMEWORKS, run_integration_overhead_bench

    run_integration_overhead_bench(settings_from(ctx), output, frameworks=framework or list(FRAMEWORKS),
                                   agents=agents, repeats=repeats, loops=loops, console=console)


@bench_app.command("integration-parity")
@friendly_errors
def integration_parity(
    ctx: typer.Context,
    data: Annotated[str, typer.Option("--data", help="Task file, dataset name, or `sample`.")] = "sample",
    tasks: Annotated[str, typer.Option(help="Task ids, e.g. 0-2.")] = "0",
    defense: Annotated[str, typer.Option(help="A registered defense.")] = "argus",
    rounds: Annotated[int, typer.Option(min=1)] = 2,
    topology: Annotated[str, typer.Option()] = "chain",
    attack: Annotated[str, typer.Option(help="An attack, or none.")] = "inject",
    output: Annotated[Path, typer.Option(help="Directory for parity.json and both event logs.")] = Path("runs/integration-parity"),
) -> None:
    """Run tasks natively under a defense with the `--llm` model, replay every message through
    the framework adapters' layer, and check that the defense decides the same."""
    from ..bench.integrations import run_integration_parity

    settings = settings_from(ctx)
    _, records = task_file(settings, data)
    rows = run_integration_parity(settings, select_tasks(records, tasks), output, defense=defense, rounds=rounds,
                                  topology=topology, attack=attack, console=console)
    console.print(f"identical decisions in {sum(r['same'] for r in rows)} of {len(rows)} tasks; {output}/parity.json")
