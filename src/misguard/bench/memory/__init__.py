"""`misguard bench memory`: the memory-poisoning surrogate benchmark (MPE/PettingZoo-style tasks)."""

from ._env import DOMAINS, Scenario, make_scenarios
from ._report import render_tables
from ._run import METHODS, BenchParams, aggregate, run_memory_bench, run_seed
from ._sim import Attack, build_memory, run_eval

__all__ = [
    "DOMAINS", "METHODS", "Attack", "BenchParams", "Scenario", "aggregate", "build_memory",
    "make_scenarios", "render_tables", "run_eval", "run_memory_bench", "run_seed",
]
