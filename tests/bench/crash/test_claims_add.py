"""kill -9 of claims-add at random moments (the suite's trials; the full run has 50)."""

from __future__ import annotations

import pytest

from misguard.bench.crash import run_crash_bench

from .conftest import CI_TRIALS, assert_safe

pytestmark = pytest.mark.slow


def test_claims_add_survives_kill_9(tmp_path, settings):
    summary = run_crash_bench(settings, ["claims-add"], CI_TRIALS, tmp_path / "crash", seed=1)
    assert_safe(summary, "claims-add", CI_TRIALS)
