"""`misguard bench service`: load test of the HTTP service on loopback (needs the
`service` extra)."""

from ._run import LoadParams, load_texts, render_summary, run_service_bench, summarise, unique_texts

__all__ = ["LoadParams", "load_texts", "render_summary", "run_service_bench", "summarise", "unique_texts"]
