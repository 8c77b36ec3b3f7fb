"""`misguard bench crash`: kill -9 at random points of real commands, then check the stores."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import console, friendly_errors, settings_from
from .bench import bench_app


def register(app: typer.Typer) -> None:
    """The command lives on `bench_app`; importing this module is what registers it."""


@bench_app.command("crash")
@friendly_errors
def crash(
    ctx: typer.Context,
    target: Annotated[Optional[list[str]], typer.Option("--target", help="What to kill (repeatable; default every registered target): claims-add, memory-repair, bench-memory, serve-ingest.")] = None,
    trials: Annotated[int, typer.Option(min=1, help="Kills per target.")] = 50,
    seed: Annotated[int, typer.Option(help="Seed of the kill times and the fixtures.")] = 0,
    output: Annotated[Path, typer.Option(help="Directory for the run log, summary and the targets' stores.")] = Path("runs/bench-crash"),
) -> None:
    """Kill each target with SIGKILL at uniform random moments; after each kill the store
    must open, pass verify, hold the old or the new state and every acknowledged write."""
    from ..bench.crash import CRASH_TARGETS, run_crash_bench
    from ..bench.crash._run import render

    names = target or CRASH_TARGETS.names()
    summary = run_crash_bench(settings_from(ctx), names, trials, output, seed=seed,
                              log=lambda msg: console.print(f"[dim]{msg}[/]", highlight=False))
    console.print(render(summary))
    bad = sum(t["corrupted"] + t["mixed"] + t["trials_losing_acknowledged_writes"] for t in summary["targets"].values())
    console.print(f"summary: {output / 'summary.json'}" + (f"; [bold red]{bad} bad trial outcome(s)[/]" if bad else ""))
    if bad:
        raise typer.Exit(1)
