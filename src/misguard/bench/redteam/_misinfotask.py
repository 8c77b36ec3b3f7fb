"""MisInfoTask messages against a defense, disguised: the `defense-probe` machinery
(`run_defense_probe`, one poisoned and one clean message per task through a fresh
defense built by registry name) run once undisguised and once per transformation. A
defense "flags" a message when it acts on it (rewrite or block): detection is the share
of poisoned messages acted on, false flags the share of clean ones.

For ARGUS's no-LLM path (`rectifier_llm=false` with a risk model) every step is an
embedding and a logistic model: nothing in the message is read as an instruction, so a
note addressed to the monitor can only act through the words it adds."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from ...attacks.transforms import compose
from ...config import Settings
from ...runlog import RunHeader, RunLog, public_settings, read_runlog
from ._report import render_report

BASELINE = "none"


def _slug(spec: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", spec.lower()).strip("-")


def run_misinfotask_redteam(
    settings: Settings,
    output: Path,
    *,
    transforms: Sequence[str],
    tasks: str,
    data: str | None,
    defense: str,
    defense_params: Mapping[str, Any],
    k: int = 2,
    console: Console | None = None,
) -> dict[str, Any]:
    """Probe `defense` on the tasks' messages, undisguised and under each transformation;
    each probe keeps its own resumable log under OUTPUT/probes/, and OUTPUT/runlog.jsonl
    gathers their decisions in the red-team report's rows."""
    from ..misinfotask import (
        default_dataset_path,
        load_tasks,
        parse_task_selection,
        sample_tasks_path,
    )
    from ..misinfotask._probe import run_defense_probe

    console = console or Console()
    path = sample_tasks_path() if data == "sample" else Path(data) if data else default_dataset_path(settings.data_dir)
    records = load_tasks(path)
    chosen = set(parse_task_selection(tasks, [t.id for t in records]))
    selected = [t for t in records if t.id in chosen]
    pipelines = {spec: compose(spec) for spec in transforms}
    arm = defense + "".join(f" {k}={v}" for k, v in sorted(defense_params.items()) if k != "risk_model_path")
    header = RunHeader(
        kind="bench.redteam.misinfotask", settings=public_settings(settings), seeds={"seed": settings.seed},
        params={"target": "misinfotask", "data": str(path), "tasks": sorted(chosen), "defense": defense,
                "defense_params": dict(defense_params), "k": k,
                "transforms": {s: p.describe() for s, p in pipelines.items()}},
    )
    output.mkdir(parents=True, exist_ok=True)
    log = RunLog.open(output / "runlog.jsonl", header, resume=True)
    done = log.done_keys("check")
    try:
        for spec in [BASELINE, *pipelines]:
            pipeline = pipelines.get(spec)
            console.print(f"[bold]{spec}[/]")
            run_defense_probe(settings, selected, output / "probes" / _slug(spec), defense=defense,
                              defense_params=dict(defense_params), k=k, console=console, transform=pipeline)

            _, events = read_runlog(output / "probes" / _slug(spec) / "runlog.jsonl")
            for e in events:
                if e.type != "probe" or f"{spec}:{e.key}" in done:
                    continue
                row = e.data
                log.write("check", key=f"{spec}:{e.key}", arm=arm, spec=spec,
                          family="none" if pipeline is None else pipeline.family, qid=e.key, group=str(row["task"]),
                          label="false" if row["kind"] == "poisoned" else "true", lang="en", flagged=bool(row["acted"]),
                          deliberate=bool(row["flagged_deliberate"]), calls=row.get("calls", 0), text=row["input"][:3000])
    finally:
        log.close()
    return render_report(output / "runlog.jsonl", output, console)
