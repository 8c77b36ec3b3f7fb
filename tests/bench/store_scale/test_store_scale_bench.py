"""`misguard bench store-scale`: its synthetic claims and its summary (the figures come from a
run on real data, docs/BENCHMARKS.md)."""

from __future__ import annotations

import numpy as np
import pytest

from misguard.bench.store_scale import summarise, synthetic_claims
from misguard.runlog import RunHeader, RunLog
from misguard.types import Claim


def _base(n: int = 30, dim: int = 16) -> tuple[np.ndarray, list[Claim]]:
    rng = np.random.default_rng(0)
    v = rng.normal(size=(n, dim)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    claims = [Claim(id=f"b{i}", text=f"base claim number {i} about topic {i % 3}", verdict="false" if i % 2 else "true")
              for i in range(n)]
    return v, claims


def test_synthetic_claims_are_unit_vectors_near_real_ones_and_the_same_for_the_same_seed():
    vectors, claims = _base()
    made, by_id = synthetic_claims(vectors, claims, 100, 50, seed=7)
    again, by_id_again = synthetic_claims(vectors, claims, 100, 50, seed=7)
    other, _ = synthetic_claims(vectors, claims, 150, 50, seed=7)
    assert [c.id for c in made] == [f"syn-{i}" for i in range(100, 150)]
    assert [c.text for c in made] == [c.text for c in again] and [c.text for c in made] != [c.text for c in other]
    matrix = np.stack([by_id[c.id] for c in made])
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(matrix, np.stack([by_id_again[c.id] for c in again]))
    # a mix of two base vectors: close to at least one of them
    assert (matrix @ vectors.T).max(axis=1).min() > 0.6  # its larger part weighs at least half
    assert {c.verdict for c in made} <= {c.verdict for c in claims}


def test_summary_takes_medians_over_repeats_per_index_mode_and_write_arm(tmp_path):
    path = tmp_path / "runlog.jsonl"
    with RunLog.open(path, RunHeader(kind="bench.store_scale", params={"claims": 100}), resume=False) as log:
        for repeat, (auto_ms, exact_ms) in enumerate([(10.0, 40.0), (20.0, 60.0)]):
            for mode, ms in (("auto", auto_ms), ("exact", exact_ms)):
                profile = {"total": 2.0, "checks": 20, "embed": 1.0 + repeat, "store search": 0.2,
                           "lexical search": 0.1, "claim rows": 0.0}
                log.write("checks", key=f"{repeat}-{mode}", repeat=repeat, mode=mode, claims=100, open_seconds=1.0,
                          check_ms=[ms] * 20, embed_ms=[ms / 2] * 20, search_ms=[ms / 10] * 20, profile=profile,
                          rss_mb=500.0, peak_rss_mb=600.0, load=1.0)
        log.write("add_one", arm="delta", claims=101, seconds=0.2, load=1.0)
        log.write("add_one", arm="whole", claims=102, seconds=4.0, load=1.0)
        log.write("add_one", arm="whole", claims=103, seconds=2.0, load=1.0)
        log.write("add_one", arm="delta", claims=104, seconds=0.4, load=1.0)
        log.write("add_batch", arm="delta", claims=130, added=28, seconds=2.0, raw_seconds=1.0, load=1.0)
        log.write("add_batch", arm="whole", claims=158, added=28, seconds=4.0, raw_seconds=1.0, load=1.0)
    summary = summarise(path)
    assert summary["checks"]["auto"]["check_p95_ms"] == 15.0 and summary["checks"]["exact"]["check_p95_ms"] == 50.0
    assert summary["checks"]["auto"]["search_p50_ms"] == 1.5 and summary["checks"]["auto"]["embed_p50_ms"] == 7.5
    assert summary["checks"]["auto"]["profile_share"]["embed"] == 0.75
    assert summary["add_one"]["delta"] == {"claims": 104, "median_seconds": pytest.approx(0.3), "max_seconds": 0.4,
                                           "adds": 2}
    assert summary["add_one"]["whole"]["median_seconds"] == 3.0
    assert summary["add_batch"]["delta"]["rate"] == 14.0 and summary["add_batch"]["delta"]["raw_rate"] == 28.0
    assert summary["add_batch"]["whole"]["ratio"] == 0.25


def test_backend_arm_measures_another_backend_against_exact_sqlite(tmp_path):
    pytest.importorskip("qdrant_client", reason="the qdrant extra is not installed")
    from rich.console import Console

    from misguard.bench.store_scale import _backend_arm, render_summary
    from misguard.claims import ClaimStore, ThresholdDecision, read_claims, sample_claims_path
    from misguard.embed import get_embedder

    embedder = get_embedder("hashing/256")
    with ClaimStore.open(tmp_path / "sqlite", embedder, create=True) as store:
        store.add(read_claims(sample_claims_path()))
    texts = [c.text for c in read_claims(sample_claims_path())][:12] + ["a recipe for lentil soup"]
    path = tmp_path / "runlog.jsonl"
    with RunLog.open(path, RunHeader(kind="bench.store_scale", params={"claims": 0}), resume=False) as log:
        _backend_arm(f"qdrant:{tmp_path / 'q'}", tmp_path / "sqlite", embedder, texts, log, Console(quiet=True),
                     decision=ThresholdDecision(0.6))
    summary = summarise(path)
    assert [(r["backend"], r["flaggable_only"], r["recall"]) for r in summary["backend_recall"]] == [
        ("qdrant", False, 1.0), ("qdrant", True, 1.0)]
    checks = summary["backend_checks"][0]
    assert checks["claims"] == 32 and checks["texts"] == 13 and checks["same_verdict"] == 1.0
    assert set(checks["search_p50_ms"]) == {"sqlite", "qdrant"}
    assert render_summary(summary).row_count >= 4
