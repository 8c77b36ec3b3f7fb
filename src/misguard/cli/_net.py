"""The fetcher the CLI's network commands share (`claims pull`, `data fetch`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import typer

AllowPrivateOption = Annotated[bool, typer.Option(
    "--allow-private", help="Also fetch from loopback and private addresses (a server on your own network).")]
TimeoutOption = Annotated[float, typer.Option("--timeout", min=0.1, help="Seconds allowed per request.")]
RetriesOption = Annotated[int, typer.Option("--retries", min=0, max=20, help="Retries of a failed request (timeouts, refused connections, HTTP 429 and 5xx), with exponential backoff.")]


def make_fetcher(*, allow_private: bool, timeout_s: float, retries: int, max_bytes: int,
                 secrets: Sequence[str] = (), backoff_s: float = 1.0):
    """An SSRF-safe fetcher (public addresses only unless `allow_private`) with retries."""
    from ..net import PageFetcher, RetryingFetcher, any_address, public_only

    page = PageFetcher(policy=any_address if allow_private else public_only, timeout_s=timeout_s, max_bytes=max_bytes)
    return RetryingFetcher(page, retries=retries, backoff_s=backoff_s, secrets=secrets)
