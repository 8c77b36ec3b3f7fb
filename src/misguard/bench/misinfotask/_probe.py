"""Probe a defense's per-message decisions on MisInfoTask text, without running the agents.

A full MisInfoTask run costs tens of minutes on a CPU and mixes the defense's decisions with
the agents' and the judge's noise. This probe asks the one question that decides whether a
defense can lower MT at all: does it act on a message that carries the task's misinformation,
and leave a true one alone? Per task, two messages on one monitored channel:

    poisoned  `k` of the task's misinformation arguments, as a hijacked agent writes them;
    clean     `k` of the task's ground truths.

Each message goes through a fresh defense (built by registry name with `build_defense`, so a
plug-in is probed the same way), so no inferred goal carries over from one message to the
next. Acting = rewrite or block. With ARGUS's `ground_truth=true`, the defense is given the
task's OTHER ground truths only (never the sentences of the clean message it is judging).
Acting is necessary, not sufficient: the embedding MT proxy of the text before and after
(`with_mt_proxy`) says whether the misinformation left it. The run log is resumable: rerun
the same command to continue.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import networkx as nx
from rich.console import Console
from rich.table import Table

from ...config import Settings
from ...errors import ConfigError
from ...embed import Embedder, get_embedder
from ...llm import LLM, get_llm
from ...mas import DefenseContext, EventLog, EventLogView, InterceptorAction, SystemView, build_defense
from ...runlog import RunHeader, RunLog, public_settings
from ...types import EdgeMessage
from ...mas import MisinfoTask
from ._judge import ProxyJudge
from ._stats import bootstrap_ci

SENDER, RECEIVER = "agent_1", "agent_2"


def _needs_llm(defense: str, settings: Settings, params: Mapping[str, Any]) -> bool:
    """Whether `defense` with `params` calls an LLM (no model is loaded for one that does not)."""
    from ...mas import DEFENSES, defense_params

    typed = defense_params(defense, settings, params)
    return bool(DEFENSES.get(defense).metadata.get("needs_llm", True) or getattr(typed, "rectifier_llm", False))


def probe_messages(task: MisinfoTask, k: int, seed: int) -> tuple[dict[str, str], tuple[str, ...]]:
    """The task's poisoned and clean messages, and the ground truths the defense may see
    (those not in the clean message)."""
    rng = random.Random(f"{seed}:{task.id}")
    arguments = rng.sample(list(task.misinfo_argument), min(k, len(task.misinfo_argument)))
    truths = rng.sample(list(task.ground_truth), min(k, len(task.ground_truth)))
    evidence = tuple(t for t in task.ground_truth if t not in truths)
    return {"poisoned": " ".join(arguments), "clean": " ".join(truths)}, evidence


async def _decide(interceptors: Sequence[Any], text: str) -> dict[str, Any]:
    graph = nx.DiGraph([(SENDER, RECEIVER)])
    view = SystemView(graph, 1, EventLogView(EventLog()), (SENDER, RECEIVER))
    message = EdgeMessage(sender=SENDER, receiver=RECEIVER, round=1, text=text)
    actions, reasons, details, tokens, calls, latency, unusable, flagged = [], [], [], 0, 0, 0.0, False, False
    for interceptor in interceptors:
        await interceptor.start_round(view)
        decision = await interceptor.intercept(message, view)
        actions.append(decision.action.value)
        reasons.append(decision.reason)
        details.append(decision.details)
        tokens += decision.usage.prompt_tokens + decision.usage.completion_tokens
        calls += decision.usage.calls
        latency += decision.usage.latency_s
        unusable |= any(key.endswith("_unusable") for key in decision.details)
        # Deliberate by the rectifier's own judgment, or by the risk model (ARGUS without an LLM).
        flagged |= bool(decision.details.get("need_review") or decision.details.get("deliberate_by_risk"))
        if decision.action is InterceptorAction.BLOCK:
            break
        if decision.action is InterceptorAction.REWRITE and decision.text:
            message = message.model_copy(update={"text": decision.text})
    acted = any(a != InterceptorAction.PASS.value for a in actions)
    return {"acted": acted, "flagged_deliberate": flagged, "unusable": unusable, "actions": actions,
            "reasons": reasons, "details": details, "tokens": tokens, "calls": calls, "latency_s": latency,
            "output": message.text[:2000]}


def run_defense_probe(
    settings: Settings,
    tasks: Sequence[MisinfoTask],
    output: Path,
    *,
    defense: str,
    defense_params: Mapping[str, Any] | None = None,
    rectifier_model: str | None = None,
    k: int = 2,
    worker: LLM | None = None,
    rectifier: LLM | None = None,
    embedder: Embedder | None = None,
    console: Console | None = None,
) -> dict[str, Any]:
    """Probe `defense` on each task's poisoned and clean message; returns the summary
    (acting rate per kind with bootstrap intervals over messages, tokens per message).
    Components not given are built from `settings` (`rectifier_model` names the rectifier)."""
    console = console or Console()
    params = dict(defense_params or {})
    llms: dict[str, LLM] = {}
    if _needs_llm(defense, settings, params) or worker is not None:
        worker = worker or get_llm(None, settings.llm)
        if rectifier is None:
            rectifier_spec = rectifier_model or settings.defense.rectifier_model
            rectifier = get_llm(rectifier_spec, settings.llm) if rectifier_spec and rectifier_spec != worker.spec else worker
        llms = {"worker": worker, "rectifier": rectifier}
    embedder = embedder or get_embedder(None, settings.embed)
    header = RunHeader(
        kind="bench.defense-probe", settings=public_settings(settings),
        # a defense without an LLM (the default ARGUS) records only its embedder
        components={**({"worker_llm": llms["worker"].describe(), "rectifier_llm": llms["rectifier"].describe()} if llms else {}),
                    "embedder": embedder.describe()},
        seeds={"messages": settings.seed, "llm": settings.llm.seed},
        params={"defense": defense, "defense_params": params, "k": k, "tasks": [t.id for t in tasks]},
    )
    output.mkdir(parents=True, exist_ok=True)
    runlog = RunLog.open(output / "runlog.jsonl", header, resume=True)
    if runlog.header.params != header.params or runlog.header.components != header.components:
        runlog.close()
        raise ConfigError(f"{output}/runlog.jsonl was made with other parameters or models; use another --output")
    done = runlog.done_keys("probe")
    try:
        for task in tasks:
            messages, evidence = probe_messages(task, k, settings.seed)
            for kind, text in messages.items():
                key = f"{task.id}:{kind}"
                if key in done:
                    continue
                context = DefenseContext(settings=settings, llms=llms,
                                         embedder=embedder, ground_truths=evidence, seed=settings.seed)
                interceptors = build_defense(defense, context, params)
                row = asyncio.run(_decide(interceptors, text))
                runlog.write("probe", key=key, task=task.id, kind=kind, input=text, **row)
                console.print(f"task {task.id} {kind}: {'acted' if row['acted'] else 'passed'} "
                              f"({'; '.join(r for r in row['reasons'] if r)})", highlight=False)
        rows = [e.data for e in runlog.of_type("probe")]
    finally:
        runlog.close()
    rows = with_mt_proxy(rows, {t.id: t for t in tasks}, ProxyJudge(embedder))
    summary = summarize_probe(rows, seed=settings.seed)
    summary.update(defense=defense, defense_params=params, rectifier=rectifier.spec if rectifier is not None else None,
                   worker=worker.spec if worker is not None else None, k=k)
    (output / "summary.json").write_text(json.dumps(summary, indent=2))
    table = Table(title=f"{defense} {params or ''} (rectifier {summary['rectifier'] or 'none'}): acts on a message when")
    for col in ("message", "n", "acted % [95% CI]", "contradiction found %", "flagged deliberate %", "unusable answers %",
                "MT proxy in -> out", "LLM calls / message", "tokens / message"):
        table.add_column(col, justify="right")
    for kind in ("poisoned", "clean"):
        s = summary[kind]
        if s["n"]:
            table.add_row(kind, str(s["n"]), f"{s['acted']:.0f} [{s['acted_lo']:.0f}, {s['acted_hi']:.0f}]", _fmt(s["contradiction"], 0),
                          f"{s['flagged']:.0f}", f"{s['unusable']:.0f}", f"{_fmt(s['mt_proxy_in'])} -> {_fmt(s['mt_proxy_out'])}",
                          f"{s['calls']:.2f}", f"{s['tokens']:.0f}")
    console.print(table)
    console.print(f"written: {output}/runlog.jsonl, summary.json")
    return summary


def with_mt_proxy(rows: Sequence[Mapping[str, Any]], tasks: Mapping[int, MisinfoTask], judge: ProxyJudge) -> list[dict[str, Any]]:
    """Rows with the embedding MT proxy (0-10) of the message before and after the defense:
    the share of sentences nearer the task's misinformation than its ground truths. Acting is
    not enough; this says whether the misinformation left the text. Computed from the log,
    so it needs no LLM and works on logs of earlier runs."""
    out = []
    for row in rows:
        task = tasks[row["task"]]
        score = lambda text: judge.mt_proxy(text, task.misinfo_goal, task.misinfo_argument, task.ground_truth)["score"]  # noqa: E731
        blocked = InterceptorAction.BLOCK.value in row["actions"]  # nothing reached the receiver
        out.append({**row, "mt_proxy_in": score(row["input"]), "mt_proxy_out": 0.0 if blocked else score(row["output"])})
    return out


def summarize_probe(rows: Sequence[Mapping[str, Any]], *, seed: int = 0) -> dict[str, Any]:
    """Acting rate (percent, bootstrap over messages) per kind, with flag/unusable rates
    and mean tokens per message."""
    out: dict[str, Any] = {}
    for kind in ("poisoned", "clean"):
        mine = [r for r in rows if r["kind"] == kind]
        acted, lo, hi = bootstrap_ci([100.0 * r["acted"] for r in mine], seed=seed)
        n = len(mine)
        out[kind] = {
            "n": n, "acted": acted, "acted_lo": lo, "acted_hi": hi,
            "flagged": 100.0 * sum(r["flagged_deliberate"] for r in mine) / n if n else None,
            "unusable": 100.0 * sum(r["unusable"] for r in mine) / n if n else None,
            "tokens": sum(r["tokens"] for r in mine) / n if n else None,
            "calls": sum(r.get("calls", 0) for r in mine) / n if n else None,  # a pre-screen lowers it
            "contradiction": _mean([_contradiction(r) for r in mine]),
            "mt_proxy_in": _mean([r.get("mt_proxy_in") for r in mine]),
            "mt_proxy_out": _mean([r.get("mt_proxy_out") for r in mine]),
        }
    return out


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _fmt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _contradiction(row: Mapping[str, Any]) -> float | None:
    """100 if any sentence check (ARGUS's chain of thought) says "contradiction", 0 if none
    does, None when there are no checks: a decision signal apart from the rewrite,
    which a small model changes even when it finds nothing wrong."""
    if not any("checks" in d for d in row.get("details", [])):
        return None  # logged without details, or a defense that does not check sentences
    checks = [c for d in row["details"] for c in d.get("checks", [])]
    return 100.0 if any(c.get("verdict") == "contradiction" for c in checks) else 0.0
