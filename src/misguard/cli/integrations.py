"""`misguard bench integration-overhead`, `integration-parity` and `integration-e2e`: the framework
adapters' cost per message, decision parity and MisInfoTask end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import ConfigError
from ._common import console, friendly_errors, select_tasks, settings_from, task_file
from .bench import bench_app
from .mas import MasParamOption


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


@bench_app.command("integration-e2e")
@friendly_errors
def integration_e2e(
    ctx: typer.Context,
    data: Annotated[str, typer.Option("--data", help="Task file, dataset name, or `sample`.")] = "sample",
    tasks: Annotated[str, typer.Option(help="Task ids, e.g. 0-7 (run task by task: interrupt and rerun to resume).")] = "0",
    model: Annotated[Optional[str], typer.Option(help="The agents' (and the judge's) model, a local model to serve (default: llm.model).")] = None,
    runtime: Annotated[Optional[list[str]], typer.Option(help="native, langgraph or openai-agents (repeatable; default: all).")] = None,
    defense: Annotated[Optional[list[str]], typer.Option(help="Arms: registered defenses, none = attack only (repeatable; default: none and argus).")] = None,
    rounds: Annotated[int, typer.Option(min=1)] = 2,
    seed: Annotated[int, typer.Option()] = 0,
    injection_point: Annotated[str, typer.Option(help="Which agent the injection hijacks (as in `misguard sweep`).")] = "random",
    base_url: Annotated[Optional[str], typer.Option(help="An OpenAI-compatible endpoint serving --model for the framework apps (default: `misguard models serve` in-process on loopback).")] = None,
    mas_param: MasParamOption = None,
    output: Annotated[Path, typer.Option(help="Directory: one run log per runtime x arm, summary.json.")] = Path("runs/integration-e2e"),
    report_only: Annotated[bool, typer.Option("--report-only", help="Only summarize the runs already in --output (e.g. of an interrupted run).")] = False,
) -> None:
    """MisInfoTask tasks as LangGraph and Agents SDK apps protected through the adapters, next
    to the native runtime (same tasks, model, seeds): MT change and localization by round.
    Tools are off in every runtime (the apps have none)."""
    from ..bench.integrations_e2e import ARMS, RUNTIMES, e2e_markdown, e2e_table, run_integration_e2e, summarize_e2e
    from .mas import parse_params

    if report_only:
        if not output.is_dir():
            raise ConfigError(f"{output} holds no runs: run the bench first (without --report-only)")
        summary = summarize_e2e(output, runtime or list(RUNTIMES), defense or list(ARMS))
        (output / "summary.json").write_text(json.dumps(summary, indent=2))
        (output / "summary.md").write_text(e2e_markdown(summary))
        console.print(e2e_table(summary))
        return
    settings = settings_from(ctx)
    _, records = task_file(settings, data)
    chosen = select_tasks(records, tasks)
    summary = run_integration_e2e(settings, records, output, model=model or settings.llm.model,
                                  task_ids=[t.id for t in chosen], runtimes=runtime or list(RUNTIMES),
                                  arms=defense or list(ARMS), rounds=rounds, seed=seed, base_url=base_url,
                                  injection_point=injection_point, data=data,
                                  mas_params=parse_params(mas_param or [], "--mas-param"), console=console)
    (output / "summary.md").write_text(e2e_markdown(summary))
    console.print(f"{output}/summary.json, {output}/summary.md; per runtime x arm: misguard runs report {output}/<runtime>/<arm>")
