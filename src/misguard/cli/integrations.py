"""`misguard bench integration-overhead`: the framework adapters' own cost per message."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import console, friendly_errors, settings_from
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
