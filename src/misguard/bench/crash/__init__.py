"""Crash safety, measured: kill -9 at random points of real commands (a claim ingest, a
memory repair, a benchmark run, a service ingest), then check that the store opens,
passes verify and holds the old or the new state, and that no acknowledged write is lost.

    misguard bench crash --target claims-add --trials 50
"""

from ._run import run_crash_bench, summarise
from ._targets import CRASH_TARGETS, CrashTarget

__all__ = ["CRASH_TARGETS", "CrashTarget", "run_crash_bench", "summarise"]
