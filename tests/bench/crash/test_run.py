"""The crash benchmark's machinery: the kill helper, resume, and what counts as a problem."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from misguard.bench.crash import CRASH_TARGETS, CrashTarget, run_crash_bench
from misguard.bench.crash._kill import run_and_kill
from misguard.errors import ConfigError

TICKS = "import time\nfor i in range(20):\n    print('tick', i, flush=True)\n    time.sleep(0.1)\n"


def test_kill_after_a_delay_and_after_a_line():
    early = run_and_kill([sys.executable, "-c", TICKS], 0.35)
    assert early.killed and early.returncode == -9 and not early.printed("tick 10")
    late = run_and_kill([sys.executable, "-c", TICKS], 0.15, after="tick 5")
    assert late.killed and late.printed("tick 5") and not late.printed("tick 12")
    finished = run_and_kill([sys.executable, "-c", "print('done')"], 30)
    assert not finished.killed and finished.returncode == 0 and finished.printed("done")


class _Flaky(CrashTarget):
    name = "test-flaky"

    def prepare(self, log):
        self.fresh_workdir()
        return {"ok": True}

    def trial(self, i, rng: np.random.Generator):
        lost = int(i == 2)  # the third trial "loses" a write
        return {"killed": True, "kill_at_s": 0.1, "seconds": 0.2, "returncode": -9, "acknowledged": 1,
                "opened": True, "verified": True, "mixed": False, "lost": lost, "outcome": "new"}


@pytest.fixture
def flaky():
    CRASH_TARGETS.register("test-flaky", what="a target for the machinery's test")(_Flaky)
    yield "test-flaky"
    CRASH_TARGETS._entries.pop("test-flaky")  # other tests see the registry as shipped


def test_a_lost_write_is_counted_and_a_finished_target_is_not_run_again(tmp_path, settings, flaky):
    summary = run_crash_bench(settings, ["test-flaky"], 4, tmp_path / "c")
    t = summary["targets"]["test-flaky"]
    assert t["trials_losing_acknowledged_writes"] == 1 and t["acknowledged_writes"] == 4 and t["outcomes"] == {"new": 4}
    logs: list[str] = []
    again = run_crash_bench(settings, ["test-flaky"], 4, tmp_path / "c", log=logs.append)
    assert "done in an earlier run, skipped" in logs[0] and again["targets"] == summary["targets"]


def test_unknown_targets_fail_before_any_work(tmp_path, settings):
    with pytest.raises(ConfigError, match="known: .*claims-add"):
        run_crash_bench(settings, ["claims-add", "nope"], 1, tmp_path / "c")
    assert not (tmp_path / "c").exists()
