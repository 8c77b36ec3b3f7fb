"""The claim benchmark end to end on the shared dev set, with a fast embedder."""

import io
import json

import pytest

from misguard.bench.claims import load_devset, load_distractors, render_tables, run_claims_bench
from misguard.config import load_settings
from misguard.errors import ConfigError
from misguard.runlog import read_runlog

pytestmark = pytest.mark.shared_data


def test_devset_and_distractors_load(shared_data):
    dev = load_devset(shared_data)
    assert len(dev.claims) == 40 and len(dev.queries) == 480
    assert sum(q.label == "false" for q in dev.queries) == 320
    # Every true query is grouped with its near false claim (so CV folds keep them together).
    assert all(q.group.startswith("DF") for q in dev.queries)
    distractors = load_distractors(shared_data, -1)
    assert len(distractors) > 10_000 and all(c.verdict.value in ("false", "mostly-false") for c in distractors)
    assert len({c.id for c in distractors}) >= len(distractors) - 5


def test_bench_runs_and_resumes(shared_data, tmp_path):
    from rich.console import Console

    settings = load_settings(embed={"model": "hashing/256"}, llm={"model": "mock"})
    console = Console(file=io.StringIO(), width=120)
    out = tmp_path / "run"
    summary = run_claims_bench(settings, out, data_dir=shared_data, distractors=300, store_dir=None, judge=True,
                               judge_limit=8, speed=False, save_model=tmp_path / "m.json", resume=True, console=console,
                               paper=10, checkthat_limit=40)
    cells = summary["accuracy"]["offline decision across sources (CV by claim)"]
    assert set(cells) >= {"direct (en)", "mcq (en)", "summarize (en)", "translate zh", "all"}
    assert cells["all"]["n_false"] == 320 and cells["all"]["n_true"] == 160
    assert 0.0 <= cells["all"]["false_acc"] <= 1.0
    assert summary["store"]["claims"] == 340
    # The mock LLM answers "{}": every judge answer is unparseable and counted, never read as "No".
    assert summary["judge"]["llm-judge-2"]["all"]["errors"] == 8
    model = json.loads((tmp_path / "m.json").read_text())
    assert model["embedder"] == "hashing/256"
    # The language shift is fitted with the decision and shipped in the same file.
    assert set(model["language_shift"]["centroids"]) >= {"en", "fr", "es", "ar", "hi", "zh"}
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
    # The ranker ships inside the decision file.
    assert model["ranker"]["features"][:2] == ["body", "seg"]
    header, events = read_runlog(out / "runlog.jsonl")
    n_events = len(events)
    # A rerun resumes the logged expensive parts (stores, normalisation variants, checked
    # tweets); the analyses behind the decision are re-derived from the embedding cache.
    run_claims_bench(settings, out, data_dir=shared_data, distractors=300, store_dir=None, judge=False,
                     judge_limit=0, speed=False, save_model=None, resume=True, console=console, paper=10,
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
                               judge=False, judge_limit=0, speed=False, save_model=None, resume=True,
                               console=console, checkthat_limit=12, checkthat_only=True)
    assert summary["checkthat"]["test"]["n"] == 12 and "pooled" not in summary
    lexical = {r["split"]: r for r in summary["checkthat_ranking"] if r["ranking"] == "lexical"}
    # BM25 does not depend on the (hashing) embedder: tweets repeat their claims' words.
    assert lexical["test"]["p1"] >= 0.5


def test_speed_texts_are_real_statements_never_handed_out_twice(shared_data):
    from misguard.bench.claims._run import _SpeedTexts

    pool = _SpeedTexts(shared_data, seed=0)
    first, second = pool.take(50), pool.take(50)
    assert len(set(first + second)) == 100 and all(len(t.split()) >= 2 for t in first)
    assert _SpeedTexts(shared_data, seed=0).take(50) == first
    with pytest.raises(ValueError, match="more than"):
        pool.take(len(pool.texts))


def test_claim_copies_differ_only_in_case_quotes_and_punctuation():
    from misguard.bench.claims._run import claim_key

    assert claim_key('Olive Garden restaurants are ""funding Trump\'s re-election.""') == claim_key(
        "olive garden restaurants are 'funding Trump's re-election.'")
    assert claim_key("The moon is made of cheese.") != claim_key("The moon is not made of cheese.")


def test_decision_with_an_embedding_reader(shared_data, tmp_path):
    """`--reader st/minilm` (here any embedder spec): nothing to train; the saved decision
    records the reader and the guard rebuilds it from the decision alone."""
    from rich.console import Console

    from misguard.claims import ClaimGuard, ClaimStore, EmbeddingReader, load_decision
    from misguard.embed import get_embedder

    settings = load_settings(embed={"model": "hashing/256"})
    out = tmp_path / "run"
    summary = run_claims_bench(settings, out, data_dir=shared_data, distractors=20, store_dir=None, judge=False,
                               judge_limit=0, speed=False, save_model=tmp_path / "m.json", resume=True,
                               console=Console(file=io.StringIO(), width=120), paper=4, checkthat_limit=10,
                               only="decision", reader="hashing/64")
    assert "pooled_noreader" in summary
    decision = load_decision(tmp_path / "m.json")
    assert decision.names[-1] == "reader_en" and decision.reader == {"kind": "embedding", "embedder": "hashing/64"}
    store = ClaimStore.open(out / "store-checkthat", get_embedder("hashing/256"))
    try:
        guard = ClaimGuard(store, decision=decision)
        assert isinstance(guard.reader, EmbeddingReader) and guard.reader.embedder.spec == "hashing/64"
    finally:
        store.close()
