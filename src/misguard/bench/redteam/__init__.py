"""`misguard bench redteam`: every guard against the red-team transformations of
`misguard.attacks.transforms` (claims dev set, MisInfoTask messages through a defense,
memory poison that hides), before and after, with bootstrap intervals."""

from ._claims import ARMS, SPLIT_SEED, disguise, run_claims_redteam, split_groups
from ._cost import run_hardening_cost
from ._flips import (
    run_judge_flips,
    run_rectifier_flips,
    summarize_judge_flips,
    summarize_rectifier_flips,
)
from ._misinfotask import run_misinfotask_redteam
from ._report import render_report, summarize
from ._stats import grouped_rate
from ._suites import CLAIMS_SUITE, MISINFOTASK_SUITE, default_suite

__all__ = ["ARMS", "CLAIMS_SUITE", "MISINFOTASK_SUITE", "default_suite", "SPLIT_SEED", "disguise", "grouped_rate", "render_report", "run_claims_redteam", "run_hardening_cost", "run_judge_flips", "run_rectifier_flips",
    "summarize_judge_flips", "summarize_rectifier_flips", "run_misinfotask_redteam", "split_groups", "summarize"]
