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
        if "online" in s:
            tables.append(online_table(s))
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


ONLINE_ROWS = (
    ("greedy decisions wrong during the build %", lambda b: f"{100 * b['build_misbehavior']:.1f} {_ci(b['build_misbehavior_ci95'], 100, '.1f')}"),
    ("propagation as written: mean hops [CI] (max)", lambda b: f"{b['hops_written']:.2f} {_ci(b['hops_written_ci95'], 1, '.2f')} ({b['hops_written_max']})"),
    ("derived records written / scenario", lambda b: f"{b['derived_per_scenario']:.1f}"),
    ("still affected at the end of the build / scenario", lambda b: f"{b['affected_end_of_build_per_scenario']:.1f}"),
    ("evaluation episodes: misbehavior %", lambda b: f"{100 * b['eval']['misbehavior']:.1f} {_ci(b['eval']['misbehavior_ci95'], 100, '.1f')}"),
    ("after the episodes: hops of the affected (affected / scenario)",
     lambda b: f"{b['eval']['hops']:.2f} ({b['eval']['affected_per_scenario']:.1f})"),
)


def online_table(s: dict[str, Any]) -> Table:
    """Online containment: the same test scenarios and attacks built without and with the guard."""
    o = s["online"]
    t = Table(title=f"Online containment (guard every {s['params'].get('online_window')} cycles while agents act); "
                    f"collateral {100 * o['online']['collateral']:.1f}%, coverage {100 * o['online']['repair_coverage']:.1f}%")
    for col in ("Measure", "Without defense", "Online defense"):
        t.add_column(col)
    for name, fmt in ONLINE_ROWS:
        t.add_row(name, fmt(o["before"]), fmt(o["online"]))
    return t


def markdown_online(s: dict[str, Any]) -> str:
    """The online containment table as Markdown."""
    o = s["online"]
    lines = ["| measure | without defense | online defense |", "| --- | --- | --- |"]
    lines += [f"| {name} | {fmt(o['before'])} | {fmt(o['online'])} |" for name, fmt in ONLINE_ROWS]
    lines += ["", f"Online repair: {o['online']['repaired_per_scenario']:.1f} records repaired per scenario, "
                  f"collateral {100 * o['online']['collateral']:.1f}% {_ci(o['online']['collateral_ci95'], 100, '.1f')}, "
                  f"coverage {100 * o['online']['repair_coverage']:.1f}% of injected + derived records."]
    return "\n".join(lines)


def markdown_table1(s: dict[str, Any]) -> str:
    """Table 1 as Markdown (docs/BENCHMARKS.md is rendered from summary.json with this)."""
    b0 = s["before"]
    lines = [
        f"Before repair: misbehavior {100 * s['misbehavior_before']:.1f}% {_ci(s['misbehavior_before_ci95'], 100, '.1f')}, "
        f"propagation {s['hops_before']:.2f} hops {_ci(s['hops_before_ci95'], 1, '.2f')} (max {b0['hops_max']}), "
        f"{b0['affected_per_scenario']:.1f} affected records per test scenario.",
        "",
        "| method | supervised | AUC [95% CI] | FPR % | recall % | misbehavior after % [CI] | hops after [CI] (affected / scenario) | repair coverage % | collateral % | accuracy fluctuation |",
        "| --- | --- | --- | ---: | ---: | --- | --- | ---: | ---: | ---: |",
    ]
    for m, b in method_rows(s):
        d = b["details"]
        lines.append(
            f"| {label_of(m)} | {'yes' if d['supervised'] else 'no'} | {b['auc']:.3f} {_ci(d['auc_ci95'])} | {100 * b['fpr']:.1f} | "
            f"{100 * d['recall']:.1f} | {100 * b['misbehavior_after']:.1f} {_ci(d['misbehavior_after_ci95'], 100, '.1f')} | "
            f"{b['hops_after']:.2f} {_ci(d['hops_after_ci95'], 1, '.2f')} ({d['affected_after_per_scenario']:.1f}) | {100 * d['repair_coverage']:.1f} | {100 * d['collateral']:.1f} | ±{100 * d['accuracy_fluctuation']:.1f}% |")
    sep = s.get("field_separability_max", {})
    if sep:
        lines += ["", "Largest single-field AUC (folded, any seed): " + ", ".join(f"{k} {v:.3f}" for k, v in sorted(sep.items())) + "."]
    t = s["timings"]
    cpu = f", {t['total_cpu_s']:.0f} s CPU" if "total_cpu_s" in t else ""
    lines += ["", f"Per seed (mean): {t['total_s']:.0f} s wall{cpu} ({t['simulate_s']:.0f} s MPE simulation through SharedMemory, "
                  f"{t['credibility_s']:.2f} s credibility, {t['encode_s']:.2f} s encoder scoring, {t['fit_s']:.0f} s fitting all detectors, "
                  f"{t['repair_eval_s']:.0f} s repair + episodes); scoring {t['score_records_per_s']:,.0f} records/s"
                  + (f" ({t['score_records_per_cpu_s']:,.0f} per CPU-second)" if "score_records_per_cpu_s" in t else "") + "; "
                  f"records per seed {', '.join(str(n) for n in s['records_per_seed'])}."]
    return "\n".join(lines)


def markdown_table2(summaries: dict[str, dict[str, Any]]) -> str:
    """Table 2 (ratios x types) as Markdown, from {label: summary}."""
    lines = ["| type | ratio | AUC mean ± std [95% CI] | FPR % | misbehavior % before [CI] → after [CI] | "
             "hops before [CI] → after [CI] (max before) | affected / scenario before → after |",
             "| --- | --- | --- | ---: | --- | --- | --- |"]
    for _, s in summaries.items():
        d = s["details"]
        lines.append(f"| {s['params']['kind']} | {s['params']['ratio']:.1%} | {s['auc']:.3f} ± {d['auc_std']:.3f} {_ci(d['auc_ci95'])} | "
                     f"{100 * s['fpr']:.1f} | {100 * s['misbehavior_before']:.1f} {_ci(s['misbehavior_before_ci95'], 100, '.1f')} → "
                     f"{100 * s['misbehavior_after']:.1f} {_ci(d['misbehavior_after_ci95'], 100, '.1f')} | "
                     f"{s['hops_before']:.2f} {_ci(s['hops_before_ci95'], 1, '.2f')} → {s['hops_after']:.2f} {_ci(d['hops_after_ci95'], 1, '.2f')} "
                     f"({s['before']['hops_max']}) | {s['before']['affected_per_scenario']:.1f} → {d['affected_after_per_scenario']:.1f} |")
    return "\n".join(lines)


def markdown_online_sensitivity(summaries: dict[str, dict[str, Any]]) -> str:
    """Online containment per type and ratio (runs made with --online-window), from {label: summary}."""
    lines = ["| type | ratio | hops as written, without → online [CI] (max) | misbehavior % in the episodes, without → online [CI] | "
             "greedy build errors % without → online | collateral % [CI] |",
             "| --- | --- | --- | --- | --- | --- |"]
    for _, s in summaries.items():
        if "online" not in s:
            continue
        before, online = s["online"]["before"], s["online"]["online"]
        # A mean over no affected derived record is not "0 hops": say so.
        hops_online = (f"{online['hops_written']:.2f} {_ci(online['hops_written_ci95'], 1, '.2f')} ({online['hops_written_max']})"
                       if online["hops_written_max"] else "no derived record affected")
        lines.append(
            f"| {s['params']['kind']} | {s['params']['ratio']:.1%} | {before['hops_written']:.2f} ({before['hops_written_max']}) → {hops_online} | "
            f"{100 * before['eval']['misbehavior']:.1f} → {100 * online['eval']['misbehavior']:.1f} {_ci(online['eval']['misbehavior_ci95'], 100, '.1f')} | "
            f"{100 * before['build_misbehavior']:.1f} → {100 * online['build_misbehavior']:.1f} | "
            f"{100 * online['collateral']:.1f} {_ci(online['collateral_ci95'], 100, '.1f')} |")
    return "\n".join(lines)


if __name__ == "__main__":  # python -m misguard.bench.memory._report summary.json [summary.json ...]
    import json
    import sys
    from pathlib import Path

    loaded = {}
    for arg in sys.argv[1:]:
        data = json.loads(Path(arg).read_text())
        if "params" in data:
            loaded[arg] = data
        else:  # a --ratios summary: {ratio: summary}
            loaded.update({f"{arg}:{k}": v for k, v in data.items()})
    if len(loaded) == 1:
        only = next(iter(loaded.values()))
        print(markdown_table1(only))
        if "online" in only:
            print("\n" + markdown_online(only))
    else:
        print(markdown_table2(loaded))
        if any("online" in v for v in loaded.values()):
            print("\n" + markdown_online_sensitivity(loaded))
