"""`misguard runs ...`: work with finished MisInfoTask run directories (what `misguard bench
misinfotask` writes): the comparison report, judging again, merging, pooling, what the
defense did, and replaying ARGUS's localization."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from ..errors import ConfigError
from ._common import MEASURE, console, friendly_errors, settings_from
from .mas import parse_params

runs_app = typer.Typer(
    help="Finished MisInfoTask runs: report, re-judge, merge, pool, inspect the defense, replay localization.",
    no_args_is_help=True,
)
RunsArgument = Annotated[list[Path], typer.Argument(help="Run directories of `misguard bench misinfotask`.")]


def register(app: typer.Typer) -> None:
    app.add_typer(runs_app, name="runs", rich_help_panel=MEASURE)


@runs_app.command("report")
@friendly_errors
def report(
    ctx: typer.Context,
    runs: RunsArgument,
    output: Annotated[Path, typer.Option(help="Where table1.md, comparison.json and mt_curves.png go.")] = Path("runs/misinfotask-report"),
) -> None:
    """The paper's Table 1 layout, the ablation rows and MT change with paired bootstrap
    intervals, localization precision/recall, cost per defense, and one MT-per-round plot."""
    from ..bench.misinfotask import write_comparison

    for run in runs:
        if not (run / "runlog.jsonl").is_file():
            raise ConfigError(f"{run} has no runlog.jsonl; pass directories written by `misguard bench misinfotask`")
    settings = settings_from(ctx)
    write_comparison(runs, output, seed=settings.seed)
    console.print((output / "table1.md").read_text(), highlight=False, markup=False)
    console.print(f"written: {output}/table1.md, comparison.json, mt_curves.png")


@runs_app.command("rejudge")
@friendly_errors
def rejudge(
    ctx: typer.Context,
    run: Annotated[Path, typer.Argument(help="Run directory of a `misguard bench misinfotask` sweep.")],
    output: Annotated[Path, typer.Option(help="New sweep directory for the re-judged runs (rerun to resume).")],
    data: Annotated[Optional[str], typer.Option(help="Task file or dataset name (default: the sweep's own --data).")] = None,
    judge_rounds: Annotated[bool, typer.Option(help="Also re-score each round's messages (one call per round).")] = True,
    judge: Annotated[str, typer.Option("--judge", help="The LLM verdicts to re-score: mt,claims,ts or a subset (e.g. claims: the claim check alone); the others keep the sweep's values.")] = "mt,claims,ts",
) -> None:
    """Judge a finished sweep again with the `--llm` model (a larger pack or an
    OpenAI-compatible URL) without rerunning the agents; `runs report` reads the result."""
    from ..bench.misinfotask import parse_verdicts, rejudge_sweep, write_reports
    from ..data import resolve
    from ..llm import get_llm
    from ..mas import load_tasks
    from ..runlog import read_runlog

    if not (run / "runlog.jsonl").is_file():
        raise ConfigError(f"{run} has no runlog.jsonl; pass a directory written by `misguard bench misinfotask`")
    settings = settings_from(ctx)
    header, _ = read_runlog(run / "runlog.jsonl")
    path = resolve(data, settings) if data else Path(header.params.get("identity", {}).get("data", ""))
    if not path.is_file():
        raise ConfigError(f"task file {path} not found; pass --data PATH")
    log = rejudge_sweep(settings, run, output, load_tasks(path), get_llm(None, settings.llm), judge_rounds=judge_rounds,
                        verdicts=parse_verdicts(judge))
    log.close()
    summary = write_reports(output, seed=settings.seed)
    console.print(f"re-judged {summary['runs']} runs with llm:{settings.llm.model}: {output}/results.md")


@runs_app.command("merge")
@friendly_errors
def merge(
    output: Annotated[Path, typer.Argument(help="New run directory.")],
    runs: RunsArgument,
) -> None:
    """Join sweeps of one configuration that ran on disjoint task sets into one run directory."""
    from ..bench.misinfotask._tools import merge_sweeps

    done = merge_sweeps(output, runs)
    console.print(f"{output}: {done['tasks']} tasks from {done['sweeps']} sweeps, {done['records']} records")


@runs_app.command("pool")
@friendly_errors
def pool(
    ctx: typer.Context,
    runs: Annotated[list[Path], typer.Argument(help="Attack-only and defense run directories, alternating: NONE_A DEFENSE_A [NONE_B DEFENSE_B ...], one pair per task set.")],
) -> None:
    """The defense's MT change against attack-only, paired by task, pooled over several task sets."""
    from ..bench.misinfotask._tools import pooled_change

    if not runs or len(runs) % 2:
        raise ConfigError("give attack-only and defense run directories in pairs: NONE_A DEFENSE_A [NONE_B DEFENSE_B ...]")
    rows = pooled_change(list(zip(runs[::2], runs[1::2])), seed=settings_from(ctx).seed)
    table = Table("metric", "tasks", "attack only", "defense", "change [95% CI]", "difference [95% CI]")
    for r in rows:
        change = "n/a" if r["change"] is None else f"{100 * r['change']:+.1f}% [{100 * r['lo']:+.1f}, {100 * r['hi']:+.1f}]"
        table.add_row(r["metric"], str(r["n"]), f"{r['attack_only']:.3f}", f"{r['defense']:.3f}", change,
                      f"{r['diff']:+.3f} [{r['diff_lo']:+.3f}, {r['diff_hi']:+.3f}]")
    console.print(table)


@runs_app.command("decisions")
@friendly_errors
def decisions(
    runs: RunsArgument,
    per_run: Annotated[bool, typer.Option("--per-run", help="Also one line per run, and who was quarantined.")] = False,
) -> None:
    """What the defense did: messages checked, rewritten and blocked, sentences removed, senders
    quarantined (hijacked or not), messages kept from the concluder."""
    from ..bench.misinfotask._tools import defense_decisions

    for run in runs:
        result = defense_decisions(run)
        if per_run:
            for name, counts in result["runs"].items():
                console.print(f"{name}: {counts}", highlight=False)
            for note in result["notes"]:
                console.print(f"  {note}", highlight=False)
        console.print(f"[bold]{run}[/]: {json.dumps(result['total'])}", highlight=False)


@runs_app.command("replay")
@friendly_errors
def replay(
    runs: RunsArgument,
    defense_param: Annotated[Optional[list[str]], typer.Option(help="KEY=VALUE overriding the recorded ARGUS parameters, repeatable.")] = None,
) -> None:
    """Replay ARGUS's localization on recorded runs and score it against the hijacked agents'
    edges; exact (every round reproduces) when the monitored channels changed no message."""
    from ..bench.misinfotask._tools import replay_localization

    result = replay_localization(runs, parse_params(defense_param or []))
    for r, row in result["by_round"].items():
        console.print(f"round {r}: tasks {row['tasks']}  recall {row['recall']:.3f}  precision {row['precision']:.3f}")
    console.print(f"rounds reproducing the recorded channels: {result['reproduced']} of {result['rounds']}")
