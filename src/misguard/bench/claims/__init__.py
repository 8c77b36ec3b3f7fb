"""`misguard bench claims`: the claim guard on the multilingual dev set, with LIAR and Snopes
false claims as distractors and CheckThat-2020 tweets (data loaded by path, never copied).
The decision it measures is fitted by `misguard.claims.fit_decision`."""

from ._report import render_tables
from ._run import resolve_data_dir, run_claims_bench

__all__ = ["render_tables", "resolve_data_dir", "run_claims_bench"]
