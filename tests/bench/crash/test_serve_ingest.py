"""kill -9 of serve-ingest at random moments (the suite's trials; the full run has 50)."""

from __future__ import annotations

import pytest

from misguard.bench.crash import run_crash_bench

from .conftest import CI_TRIALS, assert_safe

pytestmark = pytest.mark.slow


def test_serve_ingest_survives_kill_9(tmp_path, settings):
    summary = run_crash_bench(settings, ["serve-ingest"], CI_TRIALS, tmp_path / "crash", seed=1)
    assert_safe(summary, "serve-ingest", CI_TRIALS)
