"""`misguard defenses ...`: the registered defenses, their parameters, and fitting the
models they use (ARGUS's risk model and thresholds, G-Safeguard's network)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from ..errors import ConfigError
from ..mas import DEFENSES
from ._common import MULTI_AGENT, console, friendly_errors, select_tasks, settings_from, task_file
from ._reference import markdown_table, parameters

defenses_app = typer.Typer(
    help="Defenses of multi-agent systems: list them, show their parameters, fit their models.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(defenses_app, name="defenses", rich_help_panel=MULTI_AGENT)


@defenses_app.command("list")
def list_defenses() -> None:
    """Every registered defense (plug-ins included) and what it needs."""
    table = Table("defense", "needs an LLM", "extra", "what it does")
    for entry in DEFENSES:
        meta = entry.metadata
        needs = {True: "yes", False: "no"}.get(meta.get("needs_llm"), "?")
        table.add_row(entry.name, needs, meta.get("extra") or "", meta.get("description", ""))
    console.print(table)


def settings_model(name: str) -> tuple[type, dict]:
    """The settings model of defense `name` and its preset (ConfigError if it has none)."""
    from ..config import DefenseSettings

    meta = DEFENSES.get(name).metadata
    key = meta.get("settings_key")
    if key is None:
        raise ConfigError(f"defense {name!r} has no parameters")
    return DefenseSettings.model_fields[key].annotation, dict(meta.get("preset") or {})  # type: ignore[return-value]


@defenses_app.command("show")
@friendly_errors
def show(
    name: Annotated[str, typer.Argument(help="A defense name (see `misguard defenses list`).")],
    markdown: Annotated[bool, typer.Option("--markdown", help="Print a Markdown table (as in docs/).")] = False,
) -> None:
    """Every parameter of a defense: type, default, what it does. Set them in
    `[defense.<section>]` of misguard.toml or per run with `--defense-param KEY=VALUE`."""
    model, preset = settings_model(name)
    params = parameters(model, preset)
    if markdown:
        console.print(markdown_table(params), markup=False, highlight=False, end="", soft_wrap=True)
        return
    key = DEFENSES.get(name).metadata["settings_key"]
    console.print(f"[bold]{name}[/]: {DEFENSES.get(name).metadata.get('description', '')}")
    console.print(f"settings section [defense.{key}] of misguard.toml; per run: --defense-param KEY=VALUE"
                  + (f"\npreset over the section's defaults: {preset}" if preset else ""), highlight=False, markup=False)
    table = Table("parameter", "type", "default", "what it does", show_lines=False)
    for p in params:
        table.add_row(p.name, p.type, p.default, p.description)
    console.print(table)


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@defenses_app.command("fit-risk")
@friendly_errors
def fit_risk(
    ctx: typer.Context,
    data: Annotated[str, typer.Option("--data", help="Task file to fit on (MisInfoTask format), or `sample`.")],
    output: Annotated[Path, typer.Option(help="Where the model goes (JSON); its evaluation goes beside it.")],
    tasks: Annotated[Optional[str], typer.Option(help="Task ids to fit on, e.g. 0-29 (default: all).")] = None,
    eval_data: Annotated[Optional[str], typer.Option(help="Task file to evaluate on (default: --data).")] = None,
    eval_tasks: Annotated[Optional[str], typer.Option(help="Task ids of the evaluation file to evaluate on (never fitted on).")] = None,
    act_fpr: Annotated[float, typer.Option(
        min=0.0, max=1.0,
        help="Share of the fitting tasks' true sentences allowed at or above the act threshold "
             "(out of fold): higher acts on more misinformation and more truth.")] = 0.05,
    cues: Annotated[bool, typer.Option(
        "--cues/--no-cues",
        help="Also read each sentence's topic-free rhetorical cues (sources, absolutes, hedges); "
             "they carry over to tasks written by another hand better than the embedding alone.")] = True,
) -> None:
    """Fit ARGUS's message risk model (misinformation vs truth, per sentence, no LLM) for
    the configured embedder; use it with `--defense-param risk_model=PATH`."""
    from ..defenses.argus import evaluate_risk_model, fit_risk_model
    from ..embed import get_embedder

    settings = settings_from(ctx)
    path, records = task_file(settings, data)
    train = select_tasks(records, tasks)
    embedder = get_embedder(None, settings.embed)
    model = fit_risk_model(train, embedder, act_fpr=act_fpr, cues=cues)
    model.report["data"] = {"file": path.name, "sha256": _file_digest(path)}
    model.save(output)
    console.print(f"fitted on {len(train)} tasks of {path.name} ({' + '.join(model.features)}): C={model.report['C']}, out-of-fold AUC "
                  f"{model.report['oof_auc']:.3f}; act threshold {model.act_threshold:.3f}, "
                  f"screen threshold {model.screen_threshold:.3f}", highlight=False)
    if eval_data is not None or eval_tasks is not None:
        eval_path, eval_records = task_file(settings, eval_data or data)
        held_out = select_tasks(eval_records, eval_tasks)
        if eval_path.resolve() == path.resolve():
            shared = sorted({t.id for t in train} & {t.id for t in held_out})
            if shared:
                raise ConfigError(f"--tasks and --eval-tasks share tasks {shared[:10]}; keep them apart")
        ev = evaluate_risk_model(model, held_out, embedder)
        ev["data"] = {"file": eval_path.name, "sha256": _file_digest(eval_path)}
        report = output.with_name(output.stem + ".evaluation.json")
        report.write_text(json.dumps(ev, indent=2))
        console.print(f"evaluated on {len(held_out)} tasks of {eval_path.name}: AUC {ev['auc']:.3f}; vs ground "
                      f"truths {ev['auc_vs']['ground_truth']:.3f}, reference {ev['auc_vs']['reference']:.3f}, "
                      f"task text {ev['auc_vs']['task']:.3f}", highlight=False)
        console.print("at the act threshold: " + ", ".join(f"{k} {v:.0%}" for k, v in ev["at_act"].items()),
                      highlight=False)
        console.print(f"written: {report}")
    console.print(f"written: {output}  (use: --defense-param risk_model={output})")


@defenses_app.command("calibrate")
@friendly_errors
def calibrate(
    ctx: typer.Context,
    data: Annotated[str, typer.Option("--data", help="Task file to calibrate on, or `sample`.")],
    tasks: Annotated[Optional[str], typer.Option(help="Task ids to calibrate on: keep them apart from evaluated tasks.")] = None,
    output: Annotated[Path, typer.Option(help="Where calibration.json goes.")] = Path("calibration.json"),
) -> None:
    """Calibrate ARGUS's relevance, goal de-duplication and pre-screen thresholds for the
    configured embedder (the defaults are e5's)."""
    from ..defenses.argus import calibrate_thresholds
    from ..embed import get_embedder

    settings = settings_from(ctx)
    path, records = task_file(settings, data)
    result = calibrate_thresholds(select_tasks(records, tasks), get_embedder(None, settings.embed))
    result["data"] = {"file": path.name, "sha256": _file_digest(path)}
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2))
    console.print("[defense.argus]", highlight=False, markup=False)
    for key in ("relevance_threshold", "goal_dedup_threshold", "prescreen_threshold"):
        console.print(f"{key} = {result[key]['threshold']:.4f}", highlight=False)
    console.print(f"written: {output}")


@defenses_app.command("fit-gsafeguard")
@friendly_errors
def fit_gsafeguard(
    ctx: typer.Context,
    events: Annotated[list[Path], typer.Argument(help="Event logs (or directories of them) of runs under attack.")],
    output: Annotated[Path, typer.Option(help="Where the weights go.")] = Path("gsafeguard.pt"),
    epochs: Annotated[int, typer.Option(min=1)] = 200,
) -> None:
    """Train G-Safeguard's graph attention network on event logs the runtime wrote under
    attack; use it with `--defense g-safeguard --defense-param model_path=PATH`."""
    from ..defenses import train_gsafeguard
    from ..embed import get_embedder

    settings = settings_from(ctx)
    files = sorted(p for e in events for p in ([e] if e.is_file() else e.glob("*.jsonl")))
    if not files:
        raise ConfigError("no event logs found; pass files or directories such as runs/misinfotask/events")
    report = train_gsafeguard(files, get_embedder(None, settings.embed), output, epochs=epochs, seed=settings.seed)
    console.print({k: v for k, v in report.items() if k != "logs"})
    console.print(f"weights: {output}; use --defense g-safeguard --defense-param model_path={output}")
