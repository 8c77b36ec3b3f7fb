"""Tables and summary of a `bench claims` run, rendered from its run log only."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ...runlog import read_runlog

#: A matched record this close (e5 passage cosine) to the query's own dev claim is counted
#: as a duplicate fact-check of the same myth in the second top-1 column.
DUPLICATE_COSINE = 0.90

CELLS: list[tuple[str, Callable[[dict], bool]]] = [
    ("direct (en)", lambda r: r["attack"] == "direct"),
    ("mcq (en)", lambda r: r["attack"] == "mcq"),
    ("summarize (en)", lambda r: r["attack"] == "summarize"),
    ("translate fr", lambda r: r["attack"] == "translate" and r["lang"] == "fr"),
    ("translate es", lambda r: r["attack"] == "translate" and r["lang"] == "es"),
    ("translate ar", lambda r: r["attack"] == "translate" and r["lang"] == "ar"),
    ("translate hi", lambda r: r["attack"] == "translate" and r["lang"] == "hi"),
    ("translate zh", lambda r: r["attack"] == "translate" and r["lang"] == "zh"),
    ("all", lambda r: True),
]


def _latest(events, type_: str) -> dict[str, dict]:
    return {e.key: e.data for e in events if e.type == type_}


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _acc(rows: list[dict], pred: Callable[[dict], bool | None]) -> dict[str, float | None]:
    false = [r for r in rows if r["label"] == "false"]
    true = [r for r in rows if r["label"] == "true"]
    f_ok = [pred(r) for r in false]
    t_ok = [pred(r) for r in true]
    f_valid = [p for p in f_ok if p is not None]
    t_valid = [p for p in t_ok if p is not None]
    fa = sum(f_valid) / len(f_valid) if f_valid else None
    ta = sum(not p for p in t_valid) / len(t_valid) if t_valid else None
    return {"false_acc": fa, "factual_acc": ta, "asr": None if fa is None else 1 - fa,
            "n_false": len(false), "n_true": len(true),
            "errors": (len(f_ok) - len(f_valid)) + (len(t_ok) - len(t_valid))}


def _runs(speed: dict, key: str) -> str:
    runs = speed.get(key)
    return f" ({min(runs):.1f}-{max(runs):.1f} over {len(runs)})" if runs else ""


def render_tables(log_path: Path, output: Path, console: Console) -> dict:
    header, events = read_runlog(log_path)
    queries = _latest(events, "query")
    decisions = _latest(events, "decision")
    routing = _latest(events, "routing")
    judge = _latest(events, "judge")
    speed = _latest(events, "speed").get("speed")
    stores = [e.data for e in events if e.type == "store"]
    models = [e.data for e in events if e.type == "model"]
    rows = [{**q, **decisions.get(k, {})} for k, q in queries.items()]
    summary: dict = {"run_id": header.run_id, "store": stores[-1] if stores else None, "accuracy": {}}
    md: list[str] = []

    def emit(table: Table, lines: list[str]) -> None:
        console.print(table)
        md.extend(lines + [""])

    # Accuracy per attack and language.
    # (decision, the record it matched and that record's cosine to the query's own claim)
    methods = {
        "naive top-1 cosine threshold (CV)": (lambda r: r.get("threshold_cv"), "naive_matched", "naive_gold_cosine"),
        "offline logistic decision (CV by claim)": (lambda r: r.get("logistic_cv"), "matched", "matched_gold_cosine"),
    }
    for name, (pred, matched, gold_cosine) in methods.items():
        table = Table(title=f"{name}; store {summary['store']['claims'] if summary['store'] else '?'} claims")
        lines = [f"**{name}**", "", "| attack / language | false acc | factual acc | ASR | top-1 right claim id | top-1 id or same-myth duplicate | n false / true |",
                 "|---|---:|---:|---:|---:|---:|---:|"]
        for col in ("cell", "false acc", "factual acc", "ASR", "top-1 id", "top-1 id|dup", "n"):
            table.add_column(col, justify="right" if col != "cell" else "left")
        per_cell = {}
        for cell, select in CELLS:
            sub = [r for r in rows if select(r)]
            acc = _acc(sub, pred)
            false = [r for r in sub if r["label"] == "false"]
            top1 = sum(r.get(matched) == r["claim_id"] for r in false) / len(false) if false else None
            dup = sum(r.get(matched) == r["claim_id"] or (r.get(gold_cosine) or 0) >= DUPLICATE_COSINE
                      for r in false) / len(false) if false else None
            acc["top1"], acc["top1_or_duplicate"] = top1, dup
            per_cell[cell] = acc
            cells = [cell, _pct(acc["false_acc"]), _pct(acc["factual_acc"]), _pct(acc["asr"]), _pct(top1), _pct(dup),
                     f"{acc['n_false']} / {acc['n_true']}"]
            table.add_row(*cells)
            lines.append("| " + " | ".join(cells) + " |")
        summary["accuracy"][name] = per_cell
        emit(table, lines)

    # Hard negatives (state the correct fact on the point the myth gets wrong).
    hard = [r for r in rows if r.get("negative_type") == "hard"]
    if hard:
        ok = sum(not r.get("logistic_cv") for r in hard) / len(hard)
        summary["hard_negative_factual_acc"] = ok
        md += [f"Hard negatives (6 true claims x 8 queries): factual accuracy {_pct(ok)} with the logistic decision.", ""]

    if models:
        coef = models[-1]["coef"]
        md += ["Logistic decision fitted on all dev queries (standardised coefficients): "
               + ", ".join(f"{k} {v:+.2f}" for k, v in coef.items()), ""]

    # Topic routing.
    if routing:
        table = Table(title="topic routing (offline nearest-centroid topic agent)")
        lines = ["**topic routing** (offline topic agent; speed-up of exact search; recall = top-1 right claim, false queries)", "",
                 "| attack / language | topic accuracy | speed-up mean | speed-up median | searched | top-1 full | top-1 routed |",
                 "|---|---:|---:|---:|---:|---:|---:|"]
        for col in ("cell", "topic acc", "speed-up mean", "median", "searched", "top-1 full", "top-1 routed"):
            table.add_column(col)
        rrows = list(routing.values())
        summary["routing"] = {}
        for cell, select in CELLS:
            sub = [r for r in rrows if select(r)]
            if not sub:
                continue
            ups = [r["full_s"] / r["routed_s"] for r in sub if r["routed_s"] > 0]
            false = [r for r in sub if r["label"] == "false"]
            cells = [
                cell, _pct(sum(r["topic_hit"] for r in sub) / len(sub)), f"{statistics.mean(ups):.2f}x",
                f"{statistics.median(ups):.2f}x", _pct(statistics.mean(r["searched_fraction"] for r in sub)),
                _pct(sum(r["top1_full"] == r["claim_id"] for r in false) / len(false) if false else None),
                _pct(sum(r["top1_routed"] == r["claim_id"] for r in false) / len(false) if false else None),
            ]
            summary["routing"][cell] = cells[1:]
            table.add_row(*cells)
            lines.append("| " + " | ".join(cells) + " |")
        emit(table, lines)

    # The paper's Table 1 on LIAR/Snopes (stored false claims vs held-out true ones).
    paper = list(_latest(events, "paper").values())
    if paper:
        title = "paper-style benchmark on LIAR/PolitiFact + Snopes (offline decision fitted on the dev set)"
        table = Table(title=title)
        lines = [f"**{title}**", "", "| attack | false acc | factual acc | ASR | top-1 right claim id | n false / true |",
                 "|---|---:|---:|---:|---:|---:|"]
        for col in ("attack", "false acc", "factual acc", "ASR", "top-1 id", "n"):
            table.add_column(col)
        summary["paper"] = {}
        cells_of = sorted({(r["attack"], r["lang"]) for r in paper}, key=lambda c: (c[0] == "translate", c))
        for attack, lang in [*cells_of, ("all", "")]:
            sub = [r for r in paper if attack == "all" or (r["attack"], r["lang"]) == (attack, lang)]
            acc = _acc(sub, lambda r: r["flagged"])
            false = [r for r in sub if r["label"] == "false"]
            acc["top1"] = sum(r["matched"] == r["claim_id"] for r in false) / len(false) if false else None
            name = f"{attack} ({lang})" if lang else attack
            summary["paper"][name] = acc
            cells = [name, _pct(acc["false_acc"]), _pct(acc["factual_acc"]), _pct(acc["asr"]), _pct(acc["top1"]),
                     f"{acc['n_false']} / {acc['n_true']}"]
            table.add_row(*cells)
            lines.append("| " + " | ".join(cells) + " |")
        emit(table, lines)

    # LLM judge.
    if judge:
        jrows = [{**queries[k], **v} for k, v in judge.items() if k in queries]
        llm = jrows[0].get("llm", "?") if jrows else "?"
        summary["judge"] = {"llm": llm, "n": len(jrows)}
        for prompt in ("llm-judge-1", "llm-judge-2"):
            table = Table(title=f"{prompt} on {llm} ({len(jrows)} queries)")
            lines = [f"**{prompt}** on `{llm}` ({len(jrows)} queries)", "",
                     "| attack / language | false acc | factual acc | ASR | unparseable |", "|---|---:|---:|---:|---:|"]
            for col in ("cell", "false acc", "factual acc", "ASR", "unparseable"):
                table.add_column(col)

            def pred(r: dict, p: str = prompt) -> bool | None:
                v = r.get(p)
                return v if isinstance(v, bool) else None

            summary["judge"][prompt] = {}
            for cell, select in CELLS:
                sub = [r for r in jrows if select(r)]
                if not sub:
                    continue
                acc = _acc(sub, pred)
                summary["judge"][prompt][cell] = acc
                cells = [cell, _pct(acc["false_acc"]), _pct(acc["factual_acc"]), _pct(acc["asr"]), str(acc["errors"])]
                table.add_row(*cells)
                lines.append("| " + " | ".join(cells) + " |")
            emit(table, lines)

    # Speed.
    if speed:
        summary["speed"] = speed
        table = Table(title=f"speed ({speed['store_claims']} claims, one process, no LLM)")
        table.add_column("measure")
        table.add_column("value", justify="right")
        items = [
            ("raw e5 embedding, batch (texts/s, median)", f"{speed['raw_embed_per_s']:.1f}" + _runs(speed, "raw_embed_runs")),
            ("batch checks (checks/s, median)", f"{speed['batch_checks_per_s']:.1f}" + _runs(speed, "batch_check_runs")),
            ("batch checks / raw embedding (ratio of medians)", f"{speed['ratio']:.2f}"),
            ("repeated texts from the cache (checks/s)", f"{speed['cached_checks_per_s']:.0f}"),
            ("single check p50 / p95 (ms)", f"{speed['single_p50_ms']:.0f} / {speed['single_p95_ms']:.0f}"),
            ("single raw embedding p50 / p95 (ms)", f"{speed['single_embed_p50_ms']:.0f} / {speed['single_embed_p95_ms']:.0f}"),
            ("ingest (claims/s, embedding included)", f"{speed['ingest_claims_per_s']:.1f}"),
            ("100k claims: RSS growth (MB)", f"{speed['mem_100k_rss_growth_mb']:.0f}"),
            ("100k claims: index size (MB)", f"{speed['mem_100k_index_mb']:.0f}"),
            ("100k claims: exact search (ms/query)", f"{speed['search_100k_ms_per_query']:.1f}"),
            ("100k claims: reopen store (s)", f"{speed['open_100k_s']:.2f}"),
        ]
        lines = ["**speed**", "", "| measure | value |", "|---|---:|"]
        for k, v in items:
            table.add_row(k, v)
            lines.append(f"| {k} | {v} |")
        lines += ["", "Profile of a batch check (share of wall time): "
                  + ", ".join(f"{k} {100 * v:.0f}%" for k, v in speed["profile"].items() if k != "total_s")]
        emit(table, lines)

    (output / "tables.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    (output / "summary.json").write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
    return summary
