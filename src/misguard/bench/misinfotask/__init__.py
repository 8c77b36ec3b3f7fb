"""The MisInfoTask benchmark (ARGUS setting): loader, LLM and embedding judges, the
resumable sweep (asyncio or Ray) and reports rendered from its run log."""

from ._judge import ClaimCheck, JudgeScore, LLMJudge, ProxyJudge, split_sentences
from ._report import (
    comparison_markdown,
    defense_label,
    plot_defense_curves,
    plot_mt_curve,
    results_markdown,
    results_table,
    summarize,
    write_comparison,
    write_reports,
)
from ._rejudge import rejudge_sweep
from ._stats import bootstrap_ci, paired_reduction_ci
from ._sweep import (
    LLM_VERDICTS,
    Components,
    SweepConfig,
    background_for,
    defense_usage_by_round,
    localization_by_round,
    run_key,
    llm_verdicts,
    parse_verdicts,
    run_one,
    score_run,
    run_sweep,
)

__all__ = [
    "LLM_VERDICTS",
    "ClaimCheck",
    "Components",
    "JudgeScore",
    "LLMJudge",
    "ProxyJudge",
    "SweepConfig",
    "background_for",
    "bootstrap_ci",
    "comparison_markdown",
    "defense_label",
    "defense_usage_by_round",
    "llm_verdicts",
    "parse_verdicts",
    "localization_by_round",
    "paired_reduction_ci",
    "plot_defense_curves",
    "plot_mt_curve",
    "rejudge_sweep",
    "results_markdown",
    "results_table",
    "run_key",
    "run_one",
    "run_sweep",
    "score_run",
    "summarize",
    "write_comparison",
    "write_reports",
    "split_sentences",
]
