"""Ingest throughput of `pull_claims`, next to the embedder's raw rate on the same texts.

Real fact-checks (a claim file or a dataset by name, e.g. `snopes`) are written as a
schema.org ClaimReview `DataFeed`, served over HTTP on loopback, and pulled through the public
`pull_claims` into a fresh store (SSRF-safe fetcher with loopback allowed, topics assigned as
`misguard claims pull` does). Each repeat measures, in alternating order so that both arms see
the same machine load:

- `raw`: the embedder alone on the same texts (`embed(texts, "passage")`, its own batching);
- `pull`: the whole pull into an empty store (fetch, parse, embed, topics, write);
- `repull`: the same feed again into that store (nothing to embed: the cost around the embedder).

The embedder's in-memory cache is off, so no arm is served from another's work. Every
measurement goes to the run log first; the summary (medians and the pull/raw ratio of each
repeat) is computed from it.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ...claims import ClaimStore, FeedSource, OfflineTopicClassifier, pull_claims, read_claims, to_claimreview
from ...config import Settings
from ...embed import get_embedder
from ...errors import ConfigError
from ...net import PageFetcher, RetryingFetcher, any_address
from ...runlog import RunHeader, RunLog, public_settings, read_runlog


def feed_document(claims: list[Any]) -> bytes:
    """Claims as a ClaimReview data feed, one DataFeedItem per review."""
    items = [{"@type": "DataFeedItem", "item": [item]} for item in to_claimreview(claims)]
    return json.dumps({"@context": "https://schema.org", "@type": "DataFeed", "dataFeedElement": items},
                      ensure_ascii=False).encode()


@contextmanager
def serve_feed(body: bytes) -> Iterator[str]:
    """`body` at http://127.0.0.1:<port>/feed.json until the block ends."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", "application/ld+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/feed.json"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _sample(path: Path, n: int, seed: int) -> list[Any]:
    """`n` claims with distinct texts and review keys, in a seeded order."""
    claims = read_claims(path)
    seen: set[str] = set()
    unique = []
    for claim in claims:
        key = " ".join(claim.text.casefold().split())
        if key not in seen and claim.url not in seen:
            seen.update({key, claim.url or key})
            unique.append(claim)
    random.Random(seed).shuffle(unique)
    if n > len(unique):
        raise ConfigError(f"{path} has {len(unique)} distinct claims; ask for at most that many (--claims)")
    return unique[:n]


def run_pull_bench(settings: Settings, output: Path, *, data: Path, n_claims: int = 1000, repeats: int = 3,
                   console: Console | None = None) -> dict[str, Any]:
    console = console or Console()
    claims = _sample(data, n_claims, settings.seed)
    texts = [c.text for c in claims]
    body = feed_document(claims)
    embed_settings = settings.embed.model_copy(update={"memory_cache_size": 0, "cache_dir": None})
    embedder = get_embedder(None, embed_settings)
    topics = OfflineTopicClassifier(embedder)
    fetcher = RetryingFetcher(PageFetcher(policy=any_address, timeout_s=60, max_bytes=len(body) + 1), retries=0)
    output.mkdir(parents=True, exist_ok=True)
    header = RunHeader(kind="bench.pull", settings=public_settings(settings), seeds={"sample": settings.seed},
                       components={"embedder": embedder.describe()},
                       params={"data": str(data), "claims": len(claims), "repeats": repeats, "feed_bytes": len(body),
                               "cpu_count": os.cpu_count(), "load_average_1min_at_start": os.getloadavg()[0]})
    with RunLog.open(output / "runlog.jsonl", header, resume=False) as log, serve_feed(body) as url:
        embedder.embed(texts[:8], "passage")  # load the model before any timing
        # The topic centroids are a fixed cost, once per store (kept beside it): measured apart.
        started = time.perf_counter()
        topics.centroids("passage")
        log.write("topics", seconds=time.perf_counter() - started)
        for repeat in range(repeats):
            order = ("raw", "pull") if repeat % 2 == 0 else ("pull", "raw")
            with tempfile.TemporaryDirectory() as tmp:
                for arm in order:
                    if arm == "raw":
                        started = time.perf_counter()
                        embedder.embed(texts, "passage")
                        seconds = time.perf_counter() - started
                        log.write("raw", key=str(repeat), repeat=repeat, texts=len(texts), seconds=seconds,
                                  rate=len(texts) / seconds, load=os.getloadavg()[0])
                        continue
                    with ClaimStore.open(Path(tmp) / "store", embedder, create=True) as store:
                        for phase in ("pull", "repull"):
                            started = time.perf_counter()
                            report = pull_claims(store, FeedSource(url), fetcher=fetcher,
                                                 assign_topics=lambda v: topics.predict_one(v, "passage"))
                            seconds = time.perf_counter() - started
                            if report.failed:
                                raise ConfigError(f"the benchmark's own feed failed: {report.failed[0].error}")
                            log.write(phase, key=str(repeat), repeat=repeat, claims=report.claims, added=report.added,
                                      unchanged=report.unchanged, embedded=report.embedded, seconds=seconds,
                                      fetch_seconds=report.fetch_seconds, ingest_seconds=report.ingest_seconds,
                                      rate=report.claims / seconds, load=os.getloadavg()[0])
            console.print(f"repeat {repeat + 1}/{repeats} done", highlight=False)
    summary = summarise(output / "runlog.jsonl")
    (output / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    console.print(render_summary(summary))
    return summary


def summarise(path: Path) -> dict[str, Any]:
    """Medians per arm and the pull/raw ratio of each repeat, from the run log."""
    header, events = read_runlog(path)
    by = {kind: {e.data["repeat"]: e.data for e in events if e.type == kind} for kind in ("raw", "pull", "repull")}
    paired = sorted(set(by["raw"]) & set(by["pull"]))
    ratios = [by["pull"][r]["rate"] / by["raw"][r]["rate"] for r in paired]

    def median(kind: str, field: str) -> float | None:
        values = [e[field] for e in by[kind].values()]
        return statistics.median(values) if values else None

    return {
        "run_id": header.run_id, "created": header.created, "data": header.params["data"],
        "claims": header.params["claims"], "repeats": len(paired), "embedder": header.components["embedder"]["spec"],
        "raw_rate_median": median("raw", "rate"), "pull_rate_median": median("pull", "rate"),
        "pull_to_raw_ratio_median": statistics.median(ratios) if ratios else None, "pull_to_raw_ratios": ratios,
        "pull_fetch_seconds_median": median("pull", "fetch_seconds"),
        "pull_ingest_seconds_median": median("pull", "ingest_seconds"),
        "repull_rate_median": median("repull", "rate"), "repull_seconds_median": median("repull", "seconds"),
        "load_average_range": [min(e["load"] for k in by.values() for e in k.values()),
                               max(e["load"] for k in by.values() for e in k.values())] if events else None,
        "cpu_count": header.params.get("cpu_count"),
        "topic_centroids_seconds": next((e.data["seconds"] for e in events if e.type == "topics"), None),
    }


def render_summary(summary: dict[str, Any]) -> Table:
    table = Table(title=f"pull throughput: {summary['claims']} claims from {summary['data']} "
                        f"({summary['embedder']}, median of {summary['repeats']} paired repeats)")
    for column in ("measure", "value"):
        table.add_column(column)
    rows = [
        ("embedder alone (texts/s)", f"{summary['raw_rate_median']:.1f}"),
        ("pull into an empty store (claims/s, end to end)", f"{summary['pull_rate_median']:.1f}"),
        ("pull / embedder (median of per-repeat ratios)", f"{summary['pull_to_raw_ratio_median']:.2f}"),
        ("  of which fetch + parse (s)", f"{summary['pull_fetch_seconds_median']:.2f}"),
        ("  of which store write incl. embedding (s)", f"{summary['pull_ingest_seconds_median']:.2f}"),
        ("pull again, nothing changed (claims/s)", f"{summary['repull_rate_median']:.0f}"),
        ("topic centroids, once per store (s)", f"{summary['topic_centroids_seconds'] or 0:.1f}"),
        ("load average during the run", "-".join(f"{x:.1f}" for x in summary["load_average_range"] or [])),
    ]
    for row in rows:
        table.add_row(*row)
    return table
