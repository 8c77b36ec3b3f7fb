"""Demo section: fact-checks pulled the way `misguard claims pull` pulls them. A ClaimReview
feed and a fact-check page (written for this demo, shipped in `misguard/claims/data/pull/`)
are served over HTTP on loopback; they are pulled through the SSRF-safe fetcher into a fresh
store (loopback allowed explicitly), pulled again (nothing changes), and an article is
checked against what was pulled."""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ..claims import ClaimGuard, ClaimStore, FeedSource, OfflineTopicClassifier, PageSource, pull_claims
from ..config import Settings
from ..embed import get_embedder
from ..net import PageFetcher, RetryingFetcher, any_address

#: URL path -> (shipped file, content type).
FILES = {
    "/feeds/claimreview.json": ("feed.json", "application/ld+json; charset=utf-8"),
    "/fact-checks/5g-corona.html": ("factcheck.html", "text/html; charset=utf-8"),
    "/news/weekend-mailbag.html": ("article.html", "text/html; charset=utf-8"),
}


def _shipped(name: str) -> bytes:
    return resources.files("misguard.claims").joinpath("data", "pull", name).read_bytes()


@contextmanager
def serve_shipped_files() -> Iterator[str]:
    """The shipped demo files at http://127.0.0.1:<port>/... until the block ends."""
    bodies = {path: (_shipped(name), kind) for path, (name, kind) in FILES.items()}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body, kind = bodies.get(self.path, (b"not found", "text/plain"))
            self.send_response(200 if self.path in bodies else 404)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def run(settings: Settings, console: Console) -> None:
    embedder = get_embedder(None, settings.embed)
    # Loopback is a private address: allowed here on purpose, refused by default.
    fetcher = RetryingFetcher(PageFetcher(policy=any_address, timeout_s=10), retries=1, backoff_s=0.2)
    with tempfile.TemporaryDirectory() as tmp, serve_shipped_files() as site, \
            ClaimStore.open(Path(tmp) / "claims", embedder, create=True) as store:
        sources = [FeedSource(f"{site}/feeds/claimreview.json"), PageSource(f"{site}/fact-checks/5g-corona.html")]
        topics = OfflineTopicClassifier(embedder)
        started = time.perf_counter()
        report = pull_claims(store, sources, fetcher=fetcher, assign_topics=lambda v: topics.predict_one(v, "passage"))
        for source in report.sources:
            console.print(f"pulled {source.kept} review(s) from {source.source}", highlight=False)
        console.print(f"store: {report.added} claims added in {time.perf_counter() - started:.1f} s "
                      f"({report.embedded} embedded with {embedder.spec})", highlight=False)
        table = Table(title="pulled fact-checks and their provenance", show_lines=False)
        for column in ("lang", "claim", "rating as published", "verdict", "publisher", "reviewed"):
            table.add_column(column, overflow="fold")
        for claim in store.iter_claims():
            table.add_row(claim.language, claim.text, claim.verdict_original or "", claim.verdict.value,
                          claim.publisher or "-", claim.date or "-")
        console.print(table)
        again = pull_claims(store, sources, fetcher=fetcher)
        console.print(f"pulled again: {again.added} added, {again.updated} updated, {again.unchanged} unchanged",
                      highlight=False)
        article = asyncio.run(fetcher.get(f"{site}/news/weekend-mailbag.html", accept="text/html"))
        guard = ClaimGuard(store)
        report_page = guard.check_document(article.text, html=True, doc_id="article")
        console.print(f"article {article.url}: {len(report_page.chunks)} paragraphs checked, "
                      f"{len(report_page.notifications)} repeat a pulled fact-check", highlight=False)
        for notice in report_page.notifications:
            chunk = next(c for c in report_page.chunks if c.id == notice.chunk_id)
            claim = store.get(notice.claim_id) if notice.claim_id else None
            source = f"\n    review: {claim.url}" if claim and claim.url else ""
            console.print(f"  [red]notice[/] {chunk.text[:90]}\n    {notice.message}{source}", highlight=False)
