"""`misguard bench memory`: memory poisoning and repair on PettingZoo MPE agents that act from
shared memory; `misguard bench memory-nl`: the same with LLM agents writing notes in text."""

from ._audit import field_separability
from ._mpe import ACTIONS, FAMILIES, Attack, Scenario, World, build_world, make_scenarios, reference_action
from ._nl import NLParams, NLScenario, run_nl_bench, run_nl_seed, tune_threshold
from ._report import render_tables
from ._run import BenchParams, aggregate, propagation, run_memory_bench, run_seed

__all__ = [
    "ACTIONS", "FAMILIES", "Attack", "BenchParams", "NLParams", "NLScenario", "Scenario", "World", "aggregate", "build_world",
    "field_separability", "make_scenarios", "propagation", "reference_action", "render_tables",
    "run_memory_bench", "run_nl_bench", "run_nl_seed", "run_seed", "tune_threshold",
]
