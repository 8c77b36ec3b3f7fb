"""Tables and summary of a `bench claims` run, rendered from its run log only."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ...runlog import read_runlog

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
    judge = _latest(events, "judge")
    speed = _latest(events, "speed").get("speed")
    stores = [e.data for e in events if e.type == "store" and "source" not in e.data]
    models = [e.data for e in events if e.type == "model"]
    naive = _latest(events, "naive")
    rows = [{**q, **decisions.get(k, {}), **naive.get(k, {})} for k, q in queries.items()]
    summary: dict = {"run_id": header.run_id, "store": stores[-1] if stores else None, "accuracy": {}}
    md: list[str] = []

    def emit(table: Table, lines: list[str]) -> None:
        console.print(table)
        md.extend(lines + [""])

    # Accuracy per attack and language.
    # (decision, the record it matched)
    methods = {
        "naive top-1 cosine threshold (CV)": (lambda r: r.get("threshold_cv"), "naive_matched"),
        "offline decision across sources (CV by claim)": (lambda r: r.get("logistic_cv"), "matched"),
    }
    for name, (pred, matched) in methods.items():
        if not rows:
            break
        table = Table(title=f"{name}; store {summary['store']['claims'] if summary['store'] else '?'} claims")
        lines = [f"**{name}**", "", "| attack / language | false acc | factual acc | ASR | top-1 right claim id | n false / true |",
                 "|---|---:|---:|---:|---:|---:|"]
        for col in ("cell", "false acc", "factual acc", "ASR", "top-1 id", "n"):
            table.add_column(col, justify="right" if col != "cell" else "left")
        per_cell = {}
        for cell, select in CELLS:
            sub = [r for r in rows if select(r)]
            acc = _acc(sub, pred)
            false = [r for r in sub if r["label"] == "false"]
            top1 = sum(r.get(matched) == r["claim_id"] for r in false) / len(false) if false else None
            acc["top1"] = top1
            per_cell[cell] = acc
            cells = [cell, _pct(acc["false_acc"]), _pct(acc["factual_acc"]), _pct(acc["asr"]), _pct(top1),
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
        md += [f"Final decision fitted on every source's rows (C={models[-1].get('c')}, standardised coefficients): "
               + ", ".join(f"{k} {v:+.2f}" for k, v in coef.items()), ""]

    _checkthat_tables(events, summary, emit)
    _pooled_tables(events, summary, emit)

    # The paper's LLM translation attacks (with --paper-translate) on the final guard.
    paper = list(_latest(events, "paper").values())
    if paper:
        title = "paper-style attacks incl. LLM translations, final guard (in sample for direct/mcq/summarize)"
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
        if "every_sentence_checks_per_s" in speed:
            items.insert(3, ("batch checks, every sentence checked (the earlier guard; checks/s, median)",
                             f"{speed['every_sentence_checks_per_s']:.1f}" + _runs(speed, "every_sentence_runs")))
        tok = speed.get("tokens") or {}
        if tok:
            items.insert(4, (f"e5 tokens embedded per raw token ({tok['texts']} texts): default / every sentence",
                             f"{tok['default_per_raw']:.2f} / {tok['every_sentence_per_raw']:.2f}"))
            items.insert(5, ("views embedded per text: default / every sentence",
                             f"{tok['default_views_per_text']:.2f} / {tok['every_sentence_views_per_text']:.2f}"))
        lines = ["**speed**", "", "| measure | value |", "|---|---:|"]
        for k, v in items:
            table.add_row(k, v)
            lines.append(f"| {k} | {v} |")
        lines += ["", "Profile of a batch check (share of wall time): "
                  + ", ".join(f"{k} {100 * v:.0f}%" for k, v in speed["profile"].items() if k != "total_s")]
        emit(table, lines)

    cli_speed = _latest(events, "cli_speed").get("cli_speed")
    if cli_speed:
        summary["cli_speed"] = cli_speed
        c = cli_speed
        emit(*_table(f"speed through the CLI ({c['store_claims']} claims, {c['n']} fresh LIAR statements, medians of {c['repeats']})",
                     ["measure", "value"],
                     [["raw e5 embedding in-process (texts/s)", f"{c['raw_embed_per_s']:.1f}" + _runs(c, "raw_runs")],
                      ["misguard check --input, process start included (texts/s)", f"{c['cli_checks_per_s']:.1f}" + _runs(c, "cli_runs")],
                      ["ratio of medians", f"{c['ratio']:.2f}"],
                      [f"misguard claims add, {c['ingest_claims']} fresh claims, process start included (claims/s)",
                       f"{c['cli_ingest_claims_per_s']:.1f}"],
                      *([["misguard check of one text: process start, imports, store and model load (s)",
                          f"{c['one_text_s']:.2f}" + _runs(c, "one_text_runs")]] if "one_text_s" in c else [])]))

    (output / "tables.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    (output / "summary.json").write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
    return summary


def _table(title: str, columns: list[str], body: list[list[str]]) -> tuple[Table, list[str]]:
    table = Table(title=title)
    for col in columns:
        table.add_column(col)
    lines = [f"**{title}**", "", "| " + " | ".join(columns) + " |", "|---" + "|---:" * (len(columns) - 1) + "|"]
    for cells in body:
        table.add_row(*cells)
        lines.append("| " + " | ".join(cells) + " |")
    return table, lines


def _checkthat_tables(events, summary: dict, emit) -> None:
    """CheckThat-2020: normalisation steps, rankings per split, the final guard on tweets."""
    social = list(_latest(events, "social").values())
    if social:
        body = [[r["variant"], f"{r['dense_p1']:.3f}", f"{r.get('lexical_p1', float('nan')):.3f}", f"{r['rrf_p1']:.3f}",
                 f"{r['rrf_mrr']:.3f}", f"{r['rrf_map5']:.3f}", f"{r['rrf_recall_candidates']:.3f}", str(r["rrf_n"])]
                for r in social]
        summary["checkthat_social"] = social
        emit(*_table("CheckThat-2020 dev tweets: social-media normalisation steps",
                     ["variant", "P@1 dense", "P@1 BM25", "P@1 RRF", "MRR RRF", "MAP@5 RRF", "right claim among candidates", "tweets"], body))
    views = list(_latest(events, "views").values())
    if views:
        body = [[str(r["sentence_words"]), f"{r.get('statements_tokens_per_raw', float('nan')):.2f}",
                 f"{r.get('tweets_tokens_per_raw', float('nan')):.2f}", f"{r['dense_p1']:.3f}", f"{r['learned_p1']:.3f}",
                 f"{r['learned_map5']:.3f}", str(r["learned_n"])] for r in views]
        summary["checkthat_views"] = views
        emit(*_table("Sentence views only from N words (CheckThat-2020 dev tweets; tokens: e5 tokens embedded per raw token)",
                     ["N", "tokens, LIAR train statements", "tokens, dev tweets", "P@1 dense", "P@1 learned",
                      "MAP@5 learned", "tweets"], body))
    ranking = list(_latest(events, "ranking").values())
    if ranking:
        body = [[r["split"], r["ranking"], f"{r['map5']:.3f}", f"{r['p1']:.3f}", f"{r['mrr']:.3f}",
                 f"{r['recall_candidates']:.3f}", str(r["n"])] for r in ranking]
        summary["checkthat_ranking"] = ranking
        c = ranking[0].get("c")
        emit(*_table(f"CheckThat-2020 rankings (re-ranker fitted on train, C={c} chosen on dev; test: reporting only)",
                     ["split", "ranking", "MAP@5", "P@1", "MRR", "right claim among candidates", "tweets"], body))
    tweets = list(_latest(events, "tweet").values())
    if tweets:
        body = []
        summary["checkthat"] = {}
        for split in ("dev", "test"):
            sub = [r for r in tweets if r["split"] == split]
            if not sub:
                continue
            n = len(sub)
            m = {"map5": sum(r["ap5"] for r in sub) / n, "p1": sum(r["p1"] for r in sub) / n,
                 "mrr": sum(r["rr"] for r in sub) / n, "flagged": sum(r["flagged"] for r in sub) / n, "n": n}
            summary["checkthat"][split] = m
            body.append([split, f"{m['map5']:.3f}", f"{m['p1']:.3f}", f"{m['mrr']:.3f}", _pct(m["flagged"]), str(n)])
        emit(*_table("CheckThat-2020 through ClaimGuard.check_many with the final decision (candidates in the verdicts)",
                     ["split", "MAP@5", "P@1", "MRR (top 20)", "flagged", "tweets"], body))


def _pooled_tables(events, summary: dict, emit) -> None:
    """The cross-source decision: out-of-fold results per source and cell; leave-one-source-out."""
    pooled = list(_latest(events, "pooled").values())
    if pooled:
        body = []
        summary["pooled"] = {}
        cells = sorted({(r["source"], r["attack"], r["lang"]) for r in pooled})
        sources = sorted({r["source"] for r in pooled})
        alls = [(s, a, "") for s in sources for a in ("all", "all as tweet")]
        for source, attack, lang in [*cells, *alls]:
            # "all": the texts as given; "all as tweet": the same with a tweet's trappings added
            sub = [r for r in pooled if r["source"] == source and (
                (r["attack"], r["lang"]) == (attack, lang) if not attack.startswith("all")
                else r["attack"].endswith(" as tweet") == (attack == "all as tweet"))]
            if not sub:
                continue
            acc = _acc(sub, lambda r: r["flagged"])
            false = [r for r in sub if r["label"] == "false"]
            top1 = sum(bool(r["right"]) for r in false) / len(false) if false else None
            name = f"{source}: {attack}" + (f" ({lang})" if lang and attack != "all" else "")
            summary["pooled"][name] = {**acc, "top1": top1}
            body.append([name, _pct(acc["false_acc"]), _pct(acc["factual_acc"]), _pct(top1),
                         f"{acc['n_false']} / {acc['n_true']}"])
        emit(*_table("decision across sources, out of fold (10-fold CV grouped by claim, C nested)",
                     ["source: attack", "false acc", "factual acc", "top-1 right claim", "n false / true"], body))
    for kind, title in (
        ("pooled_plain", "the same CV without the social features, every cell weighing the same (the earlier decision)"),
        ("pooled_noreader", "the same CV without the pair reader (the decision fitted without --reader)"),
    ):
        variant = list(_latest(events, kind).values())
        if variant:
            summary[kind] = variant
            body = [[f"{r['source']}: {r['attack']}", _pct(r["false_acc"]), _pct(r["factual_acc"]),
                     f"{r['n_false']} / {r['n_true']}"] for r in variant]
            emit(*_table(title, ["source: attack", "false acc", "factual acc", "n false / true"], body))
    loso = list(_latest(events, "loso").values())
    if loso:
        summary["leave_one_source_out"] = loso
        body = [[r["source"], _pct(r["false_acc"]), _pct(r["factual_acc"]), f"{r['n_false']} / {r['n_true']}"] for r in loso]
        emit(*_table("leave one source out (decision fitted on the other sources only)",
                     ["held-out source", "false acc", "factual acc", "n false / true"], body))
