"""kill -9 of `misguard bench memory` (tiny), then a resume: the suite runs 2 trials (each
is a killed run plus a resumed one, about a minute); the full run has 50."""

from __future__ import annotations

import pytest

from misguard.bench.crash import run_crash_bench

from .conftest import assert_safe

pytestmark = pytest.mark.slow


def test_bench_memory_resumes_after_kill_9(tmp_path, settings):
    summary = run_crash_bench(settings, ["bench-memory"], 2, tmp_path / "crash", seed=1)
    assert_safe(summary, "bench-memory", 2)
