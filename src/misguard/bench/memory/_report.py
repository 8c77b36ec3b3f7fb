"""Table 1 (methods) and Table 2 (poisoning ratios) in the paper's layouts, from summaries."""

from __future__ import annotations

from typing import Any

from rich.table import Table

LABELS = {
    "residual": "Statistical Residual Detection",
    "isolation_forest": "Isolation Forest (embedding anomaly)",
    "ocsvm": "One-Class SVM (RBF, embedding anomaly)",
    "proposed": "This Method (Contrastive Learning + Repair)",
}


def render_tables(summaries: dict[float, dict[str, Any]]) -> list[Table]:
    """Table 1 for each ratio's summary, and Table 2 across ratios."""
    tables = []
    for ratio, s in summaries.items():
        t1 = Table(title=f"Table 1: detection, propagation and accuracy fluctuation ({ratio:.1%} poisoning, type {s['params']['kind']})")
        for col in ("Method", "AUC [95% CI]", "FPR (%)", "Misbehavior after (%)", "Propagation (hops)", "Multi-task accuracy fluctuation"):
            t1.add_column(col)
        rows = [(m, s["baselines"][m]) for m in ("residual", "isolation_forest", "ocsvm")] + [("proposed", s)]
        for m, b in rows:
            d = b["details"]
            t1.add_row(LABELS[m], f"{b['auc']:.3f} [{d['auc_ci95'][0]:.3f}, {d['auc_ci95'][1]:.3f}]", f"{100 * b['fpr']:.1f}",
                       f"{100 * b['misbehavior_after']:.1f}", f"{b['hops_after']:.2f}", f"±{100 * d['accuracy_fluctuation']:.1f}%")
        tables.append(t1)
    t2 = Table(title="Table 2: performance under different poisoning ratios (mean ± std over seeds; 95% bootstrap CI)")
    for col in ("Poison Ratio", "Detection AUC", "Misbehavior (Before → After)", "Avg Propagation Hops (Before → After)"):
        t2.add_column(col)
    for ratio, s in sorted(summaries.items()):
        d = s["details"]
        t2.add_row(f"{ratio:.1%}", f"{s['auc']:.3f} ± {d['auc_std']:.3f} [{d['auc_ci95'][0]:.3f}, {d['auc_ci95'][1]:.3f}]",
                   f"{100 * s['misbehavior_before']:.1f}% → {100 * s['misbehavior_after']:.1f}%",
                   f"{s['hops_before']:.2f} → {s['hops_after']:.2f}")
    tables.append(t2)
    return tables
