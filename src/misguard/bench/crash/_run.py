"""`misguard bench crash`: trials of each target, a run log, and the summary table.

The run log holds one event per trial (keyed by target, attempt and trial) and one per
finished target; a rerun skips the targets already finished and redoes an interrupted one
from its start (its store carries the state of its earlier trials).
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...config import Settings
from ...runlog import RunHeader, RunLog, public_settings
from ._targets import CRASH_TARGETS

Log = Callable[[str], None]


def run_crash_bench(settings: Settings, targets: Sequence[str], trials: int, output: Path, *, seed: int = 0,
                    log: Log = lambda _: None) -> dict[str, Any]:
    """Run `trials` kill -9 trials of each target; returns (and writes) the summary."""
    for name in targets:
        CRASH_TARGETS.get(name)  # unknown names fail before any work
    output.mkdir(parents=True, exist_ok=True)
    header = RunHeader(kind="bench.crash", settings=public_settings(settings), seeds={"seed": seed},
                       params={"targets": list(targets), "trials": trials},
                       components={name: dict(CRASH_TARGETS.get(name).metadata) for name in targets})
    with RunLog.open(output / "runlog.jsonl", header, resume=True) as runlog:
        done = {e.data["target"]: e.data for e in runlog.of_type("target")
                if e.data.get("trials") == trials and e.data.get("seed") == seed}
        for index, name in enumerate(targets):
            if name in done:
                log(f"{name}: done in an earlier run, skipped")
                continue
            attempt = uuid.uuid4().hex[:8]
            target = CRASH_TARGETS.build(name, output / name, settings, seed)
            info = target.prepare(log)
            rng = np.random.default_rng([seed, index])
            started = time.perf_counter()
            for i in range(trials):
                result = target.trial(i, rng)
                runlog.write("trial", key=f"{name}:{attempt}:{i}", target=name, attempt=attempt, trial=i, **result)
                if not (result["opened"] and result["verified"]) or result["mixed"] or result["lost"]:
                    log(f"{name} trial {i}: PROBLEM {json.dumps(result, default=str)[:600]}")
                elif (i + 1) % 10 == 0 or i + 1 == trials:
                    log(f"{name}: {i + 1}/{trials} trials ({time.perf_counter() - started:.0f} s)")
            runlog.write("target", key=name, target=name, attempt=attempt, trials=trials, seed=seed, prepare=info,
                         seconds=time.perf_counter() - started)
        summary = summarise(runlog, targets)
    (output / "summary.json").write_text(json.dumps(summary, indent=2, default=float), encoding="utf-8")
    return summary


def summarise(runlog: RunLog, targets: Sequence[str]) -> dict[str, Any]:
    """Per target, from the trials of its finished attempt."""
    finished = {e.data["target"]: e.data for e in runlog.of_type("target")}
    out: dict[str, Any] = {"run_log": str(runlog.path), "targets": {}}
    for name in targets:
        if name not in finished:
            continue
        attempt = finished[name]["attempt"]
        trials = [e.data for e in runlog.of_type("trial") if e.data["target"] == name and e.data["attempt"] == attempt]
        out["targets"][name] = {
            "trials": len(trials),
            "killed": sum(t["killed"] for t in trials),
            "finished_first": sum(not t["killed"] for t in trials),
            "outcomes": dict(Counter(t["outcome"] for t in trials)),
            "corrupted": sum(not (t["opened"] and t["verified"]) for t in trials),
            "mixed": sum(bool(t["mixed"]) for t in trials),
            "acknowledged_writes": sum(t["acknowledged"] for t in trials),
            "trials_losing_acknowledged_writes": sum(t["lost"] > 0 for t in trials),
            "rebuilt_on_open": sum(bool(t.get("rebuilt_on_open")) for t in trials),
            "trials_with_leftover_files": sum(t.get("leftovers", 0) > 0 for t in trials),
            "prepare": finished[name]["prepare"],
            "seconds": finished[name]["seconds"],
        }
    return out


def render(summary: dict[str, Any]) -> Any:
    """The summary as a rich table (the outcomes of each target below it)."""
    from rich.console import Group
    from rich.table import Table

    table = Table(title="kill -9 trials")
    for column in ("target", "trials", "killed", "corrupt", "mixed", "acked", "lost", "rebuilt"):
        table.add_column(column, justify="left" if column == "target" else "right")
    lines = []
    for name, t in summary["targets"].items():
        table.add_row(name, str(t["trials"]), str(t["killed"]), str(t["corrupted"]), str(t["mixed"]),
                      str(t["acknowledged_writes"]), str(t["trials_losing_acknowledged_writes"]), str(t["rebuilt_on_open"]))
        lines.append(f"{name}: " + "; ".join(f"{k}: {v}" for k, v in sorted(t["outcomes"].items())))
    return Group(table, *lines)
