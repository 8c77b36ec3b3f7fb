"""Red-team report, rendered from the run log: per arm and transformation, the share of
false texts flagged (detection) and of near-miss true texts flagged (false flags), on the
undisguised texts and on the disguised ones, with bootstrap intervals over groups and the
paired change. Every target (claims, MisInfoTask messages) logs `check` rows of one shape:
arm, spec, family, qid, group, label ("false" or "true"), flagged."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ...runlog import read_runlog
from ._stats import grouped_rate

BASELINES = {"text": "none", "html": "markup-plain"}


def _pct(rate: dict[str, Any]) -> str:
    if rate.get("mean") is None:
        return "n/a"
    return f"{100 * rate['mean']:.1f} [{100 * rate['lo']:.1f}, {100 * rate['hi']:.1f}]"


def summarize(rows: list[dict[str, Any]], *, seed: int = 0) -> dict[str, Any]:
    """{arm: {spec: {"family", "n", "false": {...}, "true": {...}}}} where each label holds the
    rate before (baseline on the same texts), after, and the paired change."""
    by: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in rows:
        by[(r["arm"], r["spec"])][r["qid"]] = r
    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for (arm, spec), mine in sorted(by.items()):
        family = next(iter(mine.values()))["family"]
        base_spec = BASELINES["html"] if family == "markup" and spec != BASELINES["html"] else BASELINES["text"]
        base = by.get((arm, base_spec), {})
        entry: dict[str, Any] = {"family": family, "baseline": base_spec, "n": len(mine)}
        for label in ("false", "true"):
            qids = sorted(q for q, r in mine.items() if r["label"] == label and (spec == base_spec or q in base))
            groups = [mine[q]["group"] for q in qids]
            after = [float(mine[q]["flagged"]) for q in qids]
            before = [float(base[q]["flagged"]) for q in qids] if spec != base_spec else after
            entry[label] = {
                "before": grouped_rate(before, groups, seed=seed),
                "after": grouped_rate(after, groups, seed=seed),
                "change": grouped_rate([a - b for a, b in zip(after, before)], groups, seed=seed),
            }
        out[arm][spec] = entry
    return dict(out)


def render_report(runlog: Path, output: Path, console: Console | None = None) -> dict[str, Any]:
    """Summary of a red-team run log (claims or MisInfoTask target): `summary.json`,
    `report.md` and a table on the console."""
    console = console or Console()
    header, events = read_runlog(runlog)
    rows = [e.data for e in events if e.type == "check"]
    summary = {"kind": header.kind, "params": header.params, "arms": summarize(rows, seed=header.seeds.get("seed", 0))}
    (output / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    target = header.params.get("target", "")
    false_name, true_name = ("poisoned acted on", "clean acted on") if target == "misinfotask" else ("false flagged", "true flagged")
    lines = [f"# Red team: {target} ({header.kind}, run {header.run_id}, {header.created})", ""]
    for arm, specs in summary["arms"].items():
        table = Table(title=f"{target}, arm {arm}: % of texts ({false_name} / {true_name}), 95% CI over groups")
        cols = ("transform", "family", "n", f"{false_name} before", "after", "change", f"{true_name} before", "after", "change")
        for col in cols:
            table.add_column(col, justify="left" if col in ("transform", "family") else "right")
        lines += [f"## arm {arm}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for spec, e in specs.items():
            cells = [spec, e["family"], str(e["n"])]
            for label in ("false", "true"):
                ch = e[label]["change"]
                change = "n/a" if ch["mean"] is None else f"{100 * ch['mean']:+.1f} [{100 * ch['lo']:+.1f}, {100 * ch['hi']:+.1f}]"
                cells += [_pct(e[label]["before"]), _pct(e[label]["after"]), change]
            table.add_row(*cells)
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        console.print(table)
    (output / "report.md").write_text("\n".join(lines), encoding="utf-8")
    console.print(f"written: {output}/runlog.jsonl, summary.json, report.md")
    return summary
