"""Prometheus metrics of one app (its own registry, so several apps can live in a process; the
workers of `serve --workers` add theirs up through prometheus-client's multiprocess mode)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..errors import MissingExtraError
from ..types import Verdict


class Metrics:
    """Request counts and latency, texts checked, batch sizes, store size, refused fetches."""

    def __init__(self) -> None:
        try:
            import prometheus_client as prom
        except ImportError:
            raise MissingExtraError("prometheus-client", "service", "the service's metrics") from None
        self._prom = prom
        self.registry = prom.CollectorRegistry()
        self.requests = prom.Counter(
            "misguard_http_requests_total", "HTTP requests by route, method and status",
            ["route", "method", "status"], registry=self.registry,
        )
        self.latency = prom.Histogram(
            "misguard_http_request_seconds", "HTTP request latency by route", ["route"], registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.texts = prom.Counter(
            "misguard_texts_checked_total", "Texts checked, by outcome (cached: answered from the verdict cache)",
            ["outcome"], registry=self.registry,
        )
        self.batch_size = prom.Histogram(
            "misguard_check_batch_texts", "Texts per claim-guard batch", registry=self.registry,
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
        )
        self.batch_seconds = prom.Histogram(
            "misguard_check_batch_seconds", "Seconds per claim-guard batch", registry=self.registry,
        )
        # Workers of one service (`serve --workers`) serve one store: its latest size is the size.
        self.store_claims = prom.Gauge("misguard_store_claims", "Claims in the served store", registry=self.registry,
                                       multiprocess_mode="mostrecent")
        self.auth_failures = prom.Counter(
            "misguard_auth_failures_total", "Requests with a missing or wrong API key", registry=self.registry,
        )
        self.auth_limited = prom.Counter(
            "misguard_auth_limited_total", "Requests refused because their address failed to authenticate too often",
            registry=self.registry,
        )
        self.fetch_refused = prom.Counter(
            "misguard_fetch_refused_total", "URL fetches refused by the address policy", registry=self.registry,
        )

    @property
    def content_type(self) -> str:
        return str(self._prom.CONTENT_TYPE_LATEST)

    def render(self) -> str:
        """The metrics in Prometheus' text format; with several workers (prometheus-client's
        multiprocess mode, `PROMETHEUS_MULTIPROC_DIR`), those of every worker together."""
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from prometheus_client import multiprocess

            registry = self._prom.CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            return self._prom.generate_latest(registry).decode()
        return self._prom.generate_latest(self.registry).decode()

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(route, method, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def observe_batch(self, texts: int, seconds: float) -> None:
        self.batch_size.observe(texts)
        self.batch_seconds.observe(seconds)

    def observe_verdicts(self, verdicts: Sequence[Verdict]) -> None:
        for v in verdicts:
            outcome = "cached" if "cache" in v.stages else ("flagged" if v.flagged else "clean")
            self.texts.labels(outcome).inc()
