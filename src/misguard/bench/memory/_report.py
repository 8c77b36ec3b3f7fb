"""Table 1 (methods) and Table 2 (poisoning ratios) in the paper's layouts, from summaries."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from ...memory import DETECTORS


def label_of(method: str) -> str:
    return str(DETECTORS.get(method).metadata.get("label", method)) if method in DETECTORS else method


def _ci(pair: list[float], scale: float = 1.0, fmt: str = ".3f") -> str:
    return f"[{scale * pair[0]:{fmt}}, {scale * pair[1]:{fmt}}]"


def method_rows(s: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(method, block) with the baselines first and this method last."""
    return [*s["baselines"].items(), ("proposed", s)]


def render_tables(summaries: dict[float, dict[str, Any]]) -> list[Table]:
    """Table 1 for each ratio's summary, and Table 2 across ratios."""
    tables = []
    for ratio, s in summaries.items():
        p = s["params"]
        held = " (trained on the other types: held-out attack)" if p.get("holdout") else ""
        t1 = Table(title=f"Table 1: detection, repair and propagation ({ratio:.1%} poisoning, type {p['kind']}{held}); "
                         f"before repair: misbehavior {s['misbehavior_before']:.1%}, {s['hops_before']:.2f} hops "
                         f"(max {s['before']['hops_max']})")
        for col in ("Method", "Sup.", "AUC [95% CI]", "FPR %", "Recall %", "Misbehavior after %", "Hops after",
                    "Coverage %", "Collateral %", "Acc. fluctuation"):
            t1.add_column(col)
        for m, b in method_rows(s):
            d = b["details"]
            t1.add_row(label_of(m), "yes" if d["supervised"] else "no", f"{b['auc']:.3f} {_ci(d['auc_ci95'])}",
                       f"{100 * b['fpr']:.1f}", f"{100 * d['recall']:.1f}", f"{100 * b['misbehavior_after']:.1f}",
                       f"{b['hops_after']:.2f}", f"{100 * d['repair_coverage']:.1f}", f"{100 * d['collateral']:.1f}",
                       f"±{100 * d['accuracy_fluctuation']:.1f}%")
        tables.append(t1)
    t2 = Table(title="Table 2: this method under different poisoning ratios (mean ± std over seeds; 95% bootstrap CI)")
    for col in ("Poison Ratio", "Type", "Detection AUC", "FPR %", "Misbehavior (Before → After)", "Avg Propagation Hops (Before → After)"):
        t2.add_column(col)
    for ratio, s in sorted(summaries.items()):
        d = s["details"]
        t2.add_row(f"{ratio:.1%}", s["params"]["kind"], f"{s['auc']:.3f} ± {d['auc_std']:.3f} {_ci(d['auc_ci95'])}", f"{100 * s['fpr']:.1f}",
                   f"{100 * s['misbehavior_before']:.1f}% → {100 * s['misbehavior_after']:.1f}%",
                   f"{s['hops_before']:.2f} → {s['hops_after']:.2f}")
    tables.append(t2)
    return tables
