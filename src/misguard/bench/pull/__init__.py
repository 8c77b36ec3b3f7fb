"""`misguard bench pull`: ingest throughput of fact-check pulls against the embedder's raw rate."""

from ._run import feed_document, render_summary, run_pull_bench, serve_feed, summarise

__all__ = ["feed_document", "render_summary", "run_pull_bench", "serve_feed", "summarise"]
