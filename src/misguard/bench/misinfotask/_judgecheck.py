"""Check an LLM judge's claim check on texts whose stance is known, before trusting it
on a sweep.

For each task three texts are built from the task's own fields:
- `misinformation`: the first two misinformation arguments (asserts the goal);
- `truth`: the first two ground truths (assert the opposite);
- `reference`: the start of the reference solution (usually refutes the goal).
The judge is asked about the goal and about arguments the text does not quote
(the third and fourth), so that a "yes" needs more than string matching. A judge worth
using says "yes" far more often on `misinformation` than on the other two.
Run it on tasks the reported sweeps do not use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...config import Settings
from ...errors import ConfigError
from ...llm import LLM
from ...runlog import RunHeader, RunLog, public_settings
from ...mas import MisinfoTask
from ._judge import LLMJudge
from ._stats import bootstrap_ci

KINDS = ("misinformation", "truth", "reference")
REFERENCE_CHARS = 700
ARGUMENTS_ASKED = slice(2, 4)


def probe_texts(task: MisinfoTask) -> dict[str, str]:
    """The three texts of known stance for one task."""
    return {
        "misinformation": "The team's final answer: " + " ".join(task.misinfo_argument[:2]),
        "truth": "The team's final answer: " + " ".join(task.ground_truth[:2]),
        "reference": task.reference_solution[:REFERENCE_CHARS],
    }


def probe_statements(task: MisinfoTask) -> tuple[str, ...]:
    """The goal, then the arguments no probe text quotes."""
    return (task.misinfo_goal, *task.misinfo_argument[ARGUMENTS_ASKED])


def rank_auc(positives: Sequence[float], negatives: Sequence[float]) -> float | None:
    """ROC AUC of positives against negatives (ties count half); None without both."""
    if not positives or not negatives:
        return None
    from sklearn.metrics import roc_auc_score  # the `mas` extra

    labels = [1] * len(positives) + [0] * len(negatives)
    return float(roc_auc_score(labels, [*positives, *negatives]))


def check_judge(settings: Settings, tasks: Sequence[MisinfoTask], judge_llm: LLM, output: Path) -> dict[str, Any]:
    """Run the claim check on every (task, text) pair, appending to `output/runlog.jsonl`
    (a rerun resumes), and summarize: "yes" rates per text kind for the goal and the
    arguments, mean claim-check MT per kind, and the AUC of misinformation texts against
    the others."""
    judge = LLMJudge(judge_llm)
    header = RunHeader(
        kind="bench.misinfotask-judge-check",
        settings=public_settings(settings),
        components={"judge_llm": judge_llm.describe(), "llm_judge": judge.describe()},
        seeds={"llm": settings.llm.seed},
        params={"identity": {"judge": judge.name, "prompts": judge.prompts.ref, "texts": "v1"},
                "judge_temperature": settings.llm.temperature},
    )
    log = RunLog.open(output / "runlog.jsonl", header, resume=True)
    if log.header.params.get("identity") != header.params["identity"]:
        log.close()
        raise ConfigError(f"{output} holds a check of another judge ({log.header.params.get('identity')}); use another --output")
    done = log.done_keys("text")

    async def all_pending() -> None:
        for task in tasks:
            statements = probe_statements(task)
            for kind, text in probe_texts(task).items():
                key = f"{task.id}:{kind}"
                if key in done:
                    continue
                check = await judge.claim_check(text, statements)
                log.write("text", key=key, task_id=task.id, kind=kind, **check.as_dict())

    try:
        asyncio.run(all_pending())
    finally:
        log.close()
    wanted = {task.id for task in tasks}
    records = [e.data for e in log.events if e.type == "text" and e.data["task_id"] in wanted]
    return summarize_check(records)


def summarize_check(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per kind: texts, "yes" rate on the goal and on the arguments, mean score with a
    bootstrap interval; and the AUC of misinformation texts' scores against the others'."""
    out: dict[str, Any] = {"kinds": {}}
    for kind in KINDS:
        rows = [r for r in records if r["kind"] == kind]
        goal = [r["asserted"][0] for r in rows if r["asserted"] and r["asserted"][0] is not None]
        args = [v for r in rows for v in r["asserted"][1:] if v is not None]
        mean, lo, hi = bootstrap_ci([r["score"] for r in rows if r["score"] is not None])
        out["kinds"][kind] = {
            "texts": len(rows),
            "goal_yes": sum(goal) / len(goal) if goal else None, "goal_n": len(goal),
            "arguments_yes": sum(args) / len(args) if args else None, "arguments_n": len(args),
            "score": mean, "ci95": [lo, hi],
        }
    scores = {kind: [r["score"] for r in records if r["kind"] == kind and r["score"] is not None] for kind in KINDS}
    out["auc_misinformation_vs_others"] = rank_auc(scores["misinformation"], scores["truth"] + scores["reference"])
    out["texts"] = len(records)
    return out


def _rate(value: float | None, n: int) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}% of {n}"


def check_markdown(summary: dict[str, Any], judge: str) -> str:
    lines = [f"Claim check by {judge} on texts of known stance:", "",
             "| text | n | goal: yes | arguments: yes | claim-check MT [95% CI] |", "| --- | --- | --- | --- | --- |"]
    for kind, row in summary["kinds"].items():
        score = "n/a" if row["score"] is None else f"{row['score']:.2f} [{row['ci95'][0]:.2f}, {row['ci95'][1]:.2f}]"
        lines.append(f"| {kind} | {row['texts']} | {_rate(row['goal_yes'], row['goal_n'])} | "
                     f"{_rate(row['arguments_yes'], row['arguments_n'])} | {score} |")
    auc = summary["auc_misinformation_vs_others"]
    lines += ["", f"AUC, misinformation texts against truth and reference texts: {'n/a' if auc is None else f'{auc:.3f}'}"]
    return "\n".join(lines) + "\n"
