"""`misguard bench misinfotask` (the ARGUS setting on MisInfoTask), its comparison report,
the ARGUS localization speed bench, threshold calibration, the risk model and G-Safeguard training.

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
from ._common import console, friendly_errors, settings_from
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
DataOption = Annotated[Optional[str], typer.Option("--data", help="MisinfoTask.json path, a dataset name (misinfotask, misinfotask-new: `misguard data list`), or `sample` for the shipped tasks (default <data_dir>/misinfotask/MisinfoTask.json, else ../shared/data/...).")]
ModelOption = Annotated[Optional[str], typer.Option("--model", help="LLM spec of the agents (default: --llm); the LLM judge uses --llm.")]
RectifierOption = Annotated[Optional[str], typer.Option("--rectifier-model", help="LLM spec of the ARGUS rectifier (default: defense.rectifier_model, else the agents' model).")]
RoundsOption = Annotated[int, typer.Option("--rounds", min=1, help="Rounds of collaboration (paper: 5).")]
MasParamOption = Annotated[Optional[list[str]], typer.Option("--mas-param", help="KEY=VALUE overriding the multi-agent system's configuration, repeatable (e.g. worker_max_tokens=120, max_tool_calls=0).")]
TasksOption = Annotated[Optional[str], typer.Option("--tasks", help="Task ids, e.g. 0-9,12 (default: all).")]
SeedsOption = Annotated[str, typer.Option("--seeds", help="Seeds, e.g. 0 or 0,1,2 or 0-4; each task runs once per seed.")]
ConcurrencyOption = Annotated[int, typer.Option("--concurrency", min=1, help="Runs in flight at once (Ray: CPUs for a local cluster).")]
ExecutorOption = Annotated[Executor, typer.Option("--executor", help="asyncio (in-process) or ray (local cluster, or RAY_ADDRESS).")]


def register(app: typer.Typer) -> None:
    """The commands are added to `bench_app` at import time (see below)."""


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
    claims_db: Annotated[Optional[str], typer.Option(help="Claim store directory to ground the defense in.")] = None,
    topology: Annotated[TopologyName, typer.Option(help="Communication graph (`self`: the planner decides).")] = TopologyName("self"),  # type: ignore[valid-type]
    rounds: RoundsOption = 5,
    mas_param: MasParamOption = None,
    tasks: TasksOption = None,
    seeds: SeedsOption = "0",
    concurrency: ConcurrencyOption = 1,
    output: Annotated[Path, typer.Option(help="Directory for the run log, event logs and reports; rerun to resume.")] = Path("runs/misinfotask"),
    executor: ExecutorOption = Executor.asyncio,
) -> None:
    """Run the multi-agent system on MisInfoTask under an attack and a defense, judge it, report MT and TSR."""
    from ..bench.misinfotask import results_table, run_sweep, write_reports

    settings = settings_from(ctx)
    path, records = _records(settings, data)
    config = _sweep_config(
        path, records, tasks, seeds, model=model or settings.llm.model, attack=_value(attack), defense=_value(defense),
        defense_params=parse_params(defense_param or []), rectifier_model=rectifier_model, claims_db=claims_db,
        topology=_value(topology), rounds=rounds, mas_params=parse_params(mas_param or [], "--mas-param"),
        concurrency=concurrency, executor=executor.value,
    )
    log = run_sweep(settings, config, records, output, console=console)
    log.close()
    summary = write_reports(output, seed=settings.seed)
    console.print(results_table(summary))
    console.print(
        f"MAS tokens/run {summary['mas_tokens_per_run']}, judge tokens/run {summary['judge_tokens_per_run']}, "
        f"wall s/run {summary['wall_s_per_run']}; defense cost/round {summary['defense_cost']}; "
        f"reports in {output}/ (summary.json, results.md, mt_curve.png)",
        highlight=False,
    )


def _records(settings: Any, data: str | None) -> tuple[Path, list[Any]]:
    """The MisInfoTask file `--data` names (or the default path) and its tasks."""
    from ..bench.misinfotask import default_dataset_path, load_tasks, sample_tasks_path
    from ..data import resolve

    path = sample_tasks_path() if data == "sample" else resolve(data, settings) if data else default_dataset_path(settings.data_dir)
    return path, load_tasks(path)


def _select(records: list[Any], tasks: str) -> list[Any]:
    """The tasks a `--tasks`-style selection ("0-29", "1,2,5") names, in file order."""
    from ..bench.misinfotask import parse_task_selection

    chosen = set(parse_task_selection(tasks, [t.id for t in records]))
    return [t for t in records if t.id in chosen]


def _sweep_config(path: Path, records: list[Any], tasks: str | None, seeds: str, **fields: Any) -> Any:
    """A validated SweepConfig (bad options become one ConfigError line)."""
    from ..bench.misinfotask import SweepConfig, parse_seeds, parse_task_selection

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
    path, records = _records(settings, data)
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


@bench_app.command("misinfotask-report")
@friendly_errors
def misinfotask_report(
    ctx: typer.Context,
    runs: Annotated[list[Path], typer.Argument(help="Output directories of `bench misinfotask` sweeps (one per attack x defense).")],
    output: Annotated[Path, typer.Option(help="Where table1.md, comparison.json and mt_curves.png go.")] = Path("runs/misinfotask-report"),
) -> None:
    """The paper's Table 1 layout, the ablation rows and MT change with paired bootstrap
    intervals, localization precision/recall, cost per defense, and one MT-per-round plot."""
    from ..bench.misinfotask import write_comparison

    for run in runs:
        if not (run / "runlog.jsonl").is_file():
            raise ConfigError(f"{run} has no runlog.jsonl; pass directories written by `bench misinfotask`")
    settings = settings_from(ctx)
    write_comparison(runs, output, seed=settings.seed)
    console.print((output / "table1.md").read_text(), highlight=False, markup=False)
    console.print(f"written: {output}/table1.md, comparison.json, mt_curves.png")


@bench_app.command("misinfotask-rejudge")
@friendly_errors
def misinfotask_rejudge(
    ctx: typer.Context,
    run: Annotated[Path, typer.Argument(help="Output directory of a `bench misinfotask` sweep.")],
    output: Annotated[Path, typer.Option(help="New sweep directory for the re-judged runs (rerun to resume).")],
    data: Annotated[Optional[str], typer.Option(help="MisinfoTask.json path or dataset name (default: the sweep's own --data).")] = None,
    judge_rounds: Annotated[bool, typer.Option(help="Also re-score each round's messages (one call per round).")] = True,
) -> None:
    """Judge a finished sweep again with the `--llm` model (e.g. a larger pack or an
    OpenAI-compatible URL) without rerunning the agents; `misinfotask-report` reads the result."""
    from ..bench.misinfotask import load_tasks, rejudge_sweep, write_reports
    from ..data import resolve
    from ..llm import get_llm
    from ..runlog import read_runlog

    if not (run / "runlog.jsonl").is_file():
        raise ConfigError(f"{run} has no runlog.jsonl; pass a directory written by `bench misinfotask`")
    settings = settings_from(ctx)
    header, _ = read_runlog(run / "runlog.jsonl")
    path = resolve(data, settings) if data else Path(header.params.get("identity", {}).get("data", ""))
    if not path.is_file():
        raise ConfigError(f"MisInfoTask file {path} not found; pass --data PATH")
    log = rejudge_sweep(settings, run, output, load_tasks(path), get_llm(None, settings.llm), judge_rounds=judge_rounds)
    log.close()
    summary = write_reports(output, seed=settings.seed)
    console.print(f"re-judged {summary['runs']} runs with llm:{settings.llm.model}: {output}/results.md")


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
    _, records = _records(settings, data)
    summary = check_judge(settings, _select(records, tasks), get_llm(None, settings.llm), output)
    text = check_markdown(summary, f"llm:{settings.llm.model}")
    (output / "check.json").write_text(json.dumps(summary, indent=2))
    (output / "check.md").write_text(text)
    console.print(text, highlight=False, markup=False)
    console.print(f"written: {output}/check.md, check.json")


@bench_app.command("localization")
@friendly_errors
def localization(
    ctx: typer.Context,
    agents: Annotated[int, typer.Option(min=3, help="Agents in the random graph.")] = 2000,
    degree: Annotated[int, typer.Option(min=1, help="Out-neighbours per agent.")] = 10,
    repeats: Annotated[int, typer.Option(min=1, help="Repetitions; medians are reported.")] = 3,
    output: Annotated[Path, typer.Option(help="Directory for the run log and summary.")] = Path("runs/bench-localization"),
) -> None:
    """Seconds per round of ARGUS's channel localization: round 1 and a later round with goals and traffic."""
    from ..bench.misinfotask._localization import run_localization_bench

    run_localization_bench(settings_from(ctx), output, agents=agents, degree=degree, repeats=repeats, console=console)


@bench_app.command("argus-calibrate")
@friendly_errors
def argus_calibrate(
    ctx: typer.Context,
    data: DataOption = None,
    tasks: Annotated[str, typer.Option(help="Task ids to calibrate on: keep them apart from the evaluated tasks.")] = "60-107",
    output: Annotated[Path, typer.Option(help="Where calibration.json goes.")] = Path("runs/argus-calibration"),
) -> None:
    """Calibrate ARGUS's relevance, goal de-duplication and pre-screen thresholds for the configured embedder."""
    from ..bench.misinfotask._calibrate import calibrate_thresholds
    from ..embed import get_embedder

    settings = settings_from(ctx)
    path, records = _records(settings, data)
    result = calibrate_thresholds(_select(records, tasks), get_embedder(None, settings.embed))
    result["data"] = str(path)
    output.mkdir(parents=True, exist_ok=True)
    (output / "calibration.json").write_text(json.dumps(result, indent=2))
    for key in ("relevance_threshold", "goal_dedup_threshold", "prescreen_threshold"):
        console.print(f"{key}: {json.dumps(result[key])}", highlight=False)
    console.print(f"written: {output}/calibration.json")


@bench_app.command("argus-risk")
@friendly_errors
def argus_risk(
    ctx: typer.Context,
    data: DataOption = None,
    tasks: Annotated[str, typer.Option(help="Task ids to train on: keep them apart from the evaluated tasks.")] = "30-107",
    eval_tasks: Annotated[str, typer.Option(help="Task ids to evaluate on (never trained on).")] = "0-29",
    output: Annotated[Path, typer.Option(help="Where model.json and report.json go.")] = Path("runs/argus-risk"),
    act_fpr: Annotated[float, typer.Option(
        min=0.0, max=1.0,
        help="Share of the training tasks' true sentences allowed at or above the act threshold "
             "(out of fold): higher acts on more misinformation and more truth.")] = 0.05,
) -> None:
    """Train ARGUS's message risk model (misinformation vs truth, per sentence, no LLM) and evaluate it on other tasks."""
    from ..bench.misinfotask._risk import evaluate_message_risk, train_message_risk
    from ..embed import get_embedder

    settings = settings_from(ctx)
    path, records = _records(settings, data)
    train, held_out = _select(records, tasks), _select(records, eval_tasks)
    shared = sorted({t.id for t in train} & {t.id for t in held_out})
    if shared:
        raise ConfigError(f"--tasks and --eval-tasks share tasks {shared[:10]}; keep them apart")
    embedder = get_embedder(None, settings.embed)
    model = train_message_risk(train, embedder, act_fpr=act_fpr)
    model.report["data"] = str(path)
    model.save(output / "model.json")
    report = {"training": model.report, "evaluation": evaluate_message_risk(model, held_out, embedder),
              "model": model.describe()}
    (output / "report.json").write_text(json.dumps(report, indent=2))
    ev = report["evaluation"]
    console.print(f"trained on {len(train)} tasks: C={model.report['C']}, out-of-fold AUC {model.report['oof_auc']:.3f}; "
                  f"act threshold {model.act_threshold:.3f}, screen threshold {model.screen_threshold:.3f}", highlight=False)
    console.print(f"held-out tasks ({len(held_out)}): AUC {ev['auc']:.3f}; vs ground truths {ev['auc_vs']['ground_truth']:.3f}, "
                  f"reference {ev['auc_vs']['reference']:.3f}, task text {ev['auc_vs']['task']:.3f}", highlight=False)
    console.print("at the act threshold: " + ", ".join(f"{k} {v:.0%}" for k, v in ev["at_act"].items()), highlight=False)
    console.print(f"written: {output}/model.json, {output}/report.json  (use: --defense-param risk_model_path={output}/model.json)")


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
    from ..bench.misinfotask import parse_task_selection
    from ..bench.misinfotask._probe import run_defense_probe

    settings = settings_from(ctx)
    _, records = _records(settings, data)
    chosen = set(parse_task_selection(tasks, [t.id for t in records]))
    run_defense_probe(settings, [t for t in records if t.id in chosen], output, defense=_value(defense),
                      defense_params=parse_params(defense_param or []), rectifier_model=rectifier_model, k=k, console=console)


@bench_app.command("gsafeguard-train")
@friendly_errors
def gsafeguard_train(
    ctx: typer.Context,
    events: Annotated[list[Path], typer.Argument(help="Event logs (or directories of them) of runs under attack.")],
    output: Annotated[Path, typer.Option(help="Where the weights go.")] = Path("runs/gsafeguard.pt"),
    epochs: Annotated[int, typer.Option(min=1)] = 200,
) -> None:
    """Train G-Safeguard's graph attention network on event logs the runtime wrote under attack."""
    from ..defenses import train_gsafeguard
    from ..embed import get_embedder

    settings = settings_from(ctx)
    files = sorted(p for e in events for p in ([e] if e.is_file() else e.glob("*.jsonl")))
    if not files:
        raise ConfigError("no event logs found; pass files or directories such as runs/misinfotask/events")
    report = train_gsafeguard(files, get_embedder(None, settings.embed), output, epochs=epochs, seed=settings.seed)
    console.print({k: v for k, v in report.items() if k != "logs"})
    console.print(f"weights: {output}; use --defense g-safeguard --defense-param model_path={output}")


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
