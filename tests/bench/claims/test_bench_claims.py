"""The claim benchmark end to end on the shared dev set, with a fast embedder."""

import io

import pytest

from misguard.bench.claims import render_tables, run_claims_bench
from misguard.config import load_settings
from misguard.runlog import read_runlog

pytestmark = pytest.mark.shared_data


def test_bench_runs_and_resumes(shared_data, tmp_path):
    from rich.console import Console

    settings = load_settings(embed={"model": "hashing/256"}, llm={"model": "mock"})
    console = Console(file=io.StringIO(), width=120)
    out = tmp_path / "run"
    summary = run_claims_bench(settings, out, data_dir=shared_data, distractors=300, store_dir=None, judge=True,
                               judge_limit=8, speed=False, resume=True, console=console,
                               paper=10, checkthat_limit=40)
    cells = summary["accuracy"]["offline decision across sources (CV by claim)"]
    assert set(cells) >= {"direct (en)", "mcq (en)", "summarize (en)", "translate zh", "all"}
    assert cells["all"]["n_false"] == 320 and cells["all"]["n_true"] == 160
    assert 0.0 <= cells["all"]["false_acc"] <= 1.0
    assert summary["store"]["claims"] == 340
    # The mock LLM answers "{}": every judge answer is unparseable and counted, never read as "No".
    assert summary["judge"]["llm-judge-2"]["all"]["errors"] == 8
    # The final decision's coefficients are logged (the library fits it: tests/claims/test_fit.py).
    header, events = read_runlog(out / "runlog.jsonl")
    model = [e.data for e in events if e.type == "model"][-1]
    assert set(model["coef"]) >= {"s1", "social", "s1_social"} and model["c"] in (0.01, 0.1, 1.0)
    # The paper-style rows: 10 stored false and 10 held-out true claims x 3 offline attacks,
    # decided out of fold; CheckThat train tweets with and without their right claim.
    pooled = summary["pooled"]
    assert {"paper: direct (en)", "paper: mcq (en)", "paper: summarize (en)", "paper: all"} <= set(pooled)
    assert (pooled["paper: all"]["n_false"], pooled["paper: all"]["n_true"]) == (30, 30)
    # ... and again in tweet form (the dev queries too), so "social" is not "a CheckThat tweet".
    assert (pooled["paper: all as tweet"]["n_false"], pooled["paper: all as tweet"]["n_true"]) == (30, 30)
    assert pooled["devset: all as tweet"]["n_false"] > 0 and pooled["devset: all as tweet"]["n_true"] > 0
    assert pooled["checkthat: all"]["n_false"] == 40 and 0 < pooled["checkthat: all"]["n_true"] <= 40
    assert {r["source"] for r in summary["leave_one_source_out"]} == {"devset", "paper", "checkthat"}
    # Retrieval measured like the shared task, from the verdicts' candidates.
    for split in ("dev", "test"):
        m = summary["checkthat"][split]
        assert m["n"] == 40 and 0 <= m["p1"] <= m["mrr"] <= 1 and 0 <= m["map5"] <= 1
    assert {r["ranking"] for r in summary["checkthat_ranking"]} == {"dense", "lexical", "rrf", "learned"}
    assert {r["variant"] for r in summary["checkthat_social"]} >= {"none", "default", "without handles"}
    assert [r["sentence_words"] for r in summary["checkthat_views"]] == [0, 20, 30, 40, 50, 60]
    ranker = [e.data for e in events if e.type == "ranker"][-1]
    assert list(ranker["coef"])[:2] == ["body", "seg"]
    n_events = len(events)
    # A rerun resumes the logged expensive parts (stores, normalisation variants, checked
    # tweets); the analyses behind the decision are re-derived from the embedding cache.
    run_claims_bench(settings, out, data_dir=shared_data, distractors=300, store_dir=None, judge=False,
                     judge_limit=0, speed=False, resume=True, console=console, paper=10,
                     checkthat_limit=40)
    _, events = read_runlog(out / "runlog.jsonl")
    assert sum(e.type == "query" for e in events) == 480 * 2
    assert sum(e.type == "tweet" for e in events) == 80  # checked tweets are not re-checked
    assert sum(e.type == "social" for e in events) == len(summary["checkthat_social"])
    assert len(events) > n_events
    assert (out / "tables.md").read_text().count("| translate hi |") >= 2
    render_tables(out / "runlog.jsonl", out, console)


def test_checkthat_only_logs_rankings_and_checks_tweets(shared_data, tmp_path):
    from rich.console import Console

    settings = load_settings(embed={"model": "hashing/256"})
    console = Console(file=io.StringIO(), width=120)
    summary = run_claims_bench(settings, tmp_path / "ct", data_dir=shared_data, distractors=20, store_dir=None,
                               judge=False, judge_limit=0, speed=False, resume=True,
                               console=console, checkthat_limit=12, checkthat_only=True)
    assert summary["checkthat"]["test"]["n"] == 12 and "pooled" not in summary
    lexical = {r["split"]: r for r in summary["checkthat_ranking"] if r["ranking"] == "lexical"}
    # BM25 does not depend on the (hashing) embedder: tweets repeat their claims' words.
    assert lexical["test"]["p1"] >= 0.5


def test_speed_texts_are_real_statements_never_handed_out_twice(shared_data):
    from misguard.bench.claims._speed import SpeedTexts

    pool = SpeedTexts(shared_data, seed=0)
    first, second = pool.take(50), pool.take(50)
    assert len(set(first + second)) == 100 and all(len(t.split()) >= 2 for t in first)
    assert SpeedTexts(shared_data, seed=0).take(50) == first
    with pytest.raises(ValueError, match="more than"):
        pool.take(len(pool.texts))


def test_decision_with_an_embedding_reader(shared_data, tmp_path):
    """`--reader SPEC` (here any embedder spec): the decision reads the reader's cosine, and
    the same decision without it is measured on the same rows."""
    from rich.console import Console

    settings = load_settings(embed={"model": "hashing/256"})
    out = tmp_path / "run"
    summary = run_claims_bench(settings, out, data_dir=shared_data, distractors=20, store_dir=None, judge=False,
                               judge_limit=0, speed=False, resume=True, console=Console(file=io.StringIO(), width=120),
                               paper=4, checkthat_limit=10, only="decision", reader="hashing/64")
    without = {f"{r['source']}: {r['attack']}": r for r in summary["pooled_noreader"]}
    assert without["checkthat: all"]["n_false"] == summary["pooled"]["checkthat: all"]["n_false"] == 10
    _, events = read_runlog(out / "runlog.jsonl")
    model = [e.data for e in events if e.type == "model"][-1]
    assert list(model["coef"])[-1] == "reader_en"
    assert [e.data for e in events if e.type == "reader"][-1]["embedder"] == "hashing/64"
