"""GET with retries over the SSRF-safe fetcher: transient failures (a refused or reset
connection, a timeout, HTTP 408/425/429/5xx) are retried with exponential backoff, anything
else fails at once, and every failure names the URL (with secrets masked)."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable, Callable, Sequence

from ..errors import DataError
from ._fetch import FetchedPage, PageFetcher, UnsafeURLError

#: HTTP statuses worth asking again for: the server is busy, throttling or briefly down.
TRANSIENT_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


class FetchError(DataError):
    """A URL could not be fetched after the allowed attempts (the message says why)."""

    def __init__(self, message: str, *, url: str, status: int | None = None, attempts: int = 1) -> None:
        self.url = url
        self.status = status
        self.attempts = attempts
        super().__init__(message)


class RetryingFetcher:
    """A `PageFetcher` that retries transient failures and raises `FetchError` for the rest.

    Args:
        fetcher: the SSRF-safe fetcher every attempt goes through (its address policy,
            timeouts and size limit apply to each attempt).
        retries: attempts after the first, on transient failures only.
        backoff_s: delay before the first retry; doubles each retry, with jitter.
        secrets: strings (API keys) masked as `***` in every message and URL reported.
        sleep: the pause between attempts (tests pass one that records instead of waiting).
    """

    def __init__(
        self,
        fetcher: PageFetcher | None = None,
        *,
        retries: int = 3,
        backoff_s: float = 1.0,
        secrets: Sequence[str] = (),
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        if retries < 0 or backoff_s < 0:
            raise ValueError("retries and backoff_s must be >= 0")
        self.fetcher = fetcher or PageFetcher()
        self.retries = retries
        self.backoff_s = backoff_s
        self.secrets = tuple(s for s in secrets if s)
        self.sleep = sleep

    def mask(self, text: str) -> str:
        """`text` with every secret replaced by `***`."""
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    async def get(self, url: str, *, accept: str = "application/json, application/ld+json;q=0.9, */*;q=0.5") -> FetchedPage:
        """The page at `url` (status 2xx), after up to `retries` retries.

        Raises:
            FetchError: an unsafe address, a non-2xx answer, or transient failures on
                every attempt.
        """
        shown = self.mask(url)
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            try:
                page = await self.fetcher.fetch(url, accept=accept)
            except UnsafeURLError as exc:
                raise FetchError(f"could not fetch {shown}: {self.mask(str(exc))}", url=shown) from None
            except DataError as exc:  # connection refused or reset, timeouts
                if attempt == attempts:
                    raise FetchError(
                        f"could not fetch {shown} after {attempts} attempt(s): {self.mask(str(exc))}",
                        url=shown, attempts=attempt,
                    ) from None
            else:
                if 200 <= page.status < 300:
                    return page
                if page.status not in TRANSIENT_STATUSES or attempt == attempts:
                    detail = self.mask(_error_detail(page))
                    tries = f" after {attempt} attempt(s)" if attempt > 1 else ""
                    raise FetchError(
                        f"{shown} answered HTTP {page.status}{tries}{': ' + detail if detail else ''}",
                        url=shown, status=page.status, attempts=attempt,
                    )
            await self.sleep(self.backoff_s * 2 ** (attempt - 1) * (0.5 + random.random() / 2))
        raise AssertionError("unreachable")  # the loop returns or raises


def _error_detail(page: FetchedPage) -> str:
    """What an error body says: a JSON API's `error.message`, else the start of the text."""
    text = page.text.strip()
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"][:300]
        if isinstance(error, str):
            return error[:300]
    if "<" in text[:200]:
        return ""  # an HTML error page says nothing a user can act on
    return " ".join(text.split())[:200]
