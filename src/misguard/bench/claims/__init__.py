"""`misguard bench claims`: the claim guard on the multilingual dev set, with LIAR and
Snopes false claims as distractors (data loaded by path, never copied)."""

from ._data import DevSet, Query, load_devset, load_distractors, resolve_data_dir
from ._report import render_tables
from ._run import run_claims_bench

__all__ = ["DevSet", "Query", "load_devset", "load_distractors", "render_tables", "resolve_data_dir", "run_claims_bench"]
