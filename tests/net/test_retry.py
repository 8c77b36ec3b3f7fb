"""Retries over the SSRF-safe fetcher, against a real HTTP server on loopback."""

from __future__ import annotations

import pytest

from misguard.net import FetchError, PageFetcher, RetryingFetcher, any_address
from tests.helpers.route_server import Answer, route_server


def fetcher(retries: int, delays: list[float], secrets=()) -> RetryingFetcher:
    async def record(seconds: float) -> None:
        delays.append(seconds)

    return RetryingFetcher(PageFetcher(policy=any_address, timeout_s=5), retries=retries, backoff_s=1.0,
                           secrets=secrets, sleep=record)


async def test_backoff_doubles_between_attempts_and_the_error_names_the_url():
    delays: list[float] = []
    with route_server({"/busy": Answer("try later", 503, "text/plain")}) as site:
        with pytest.raises(FetchError, match="answered HTTP 503 after 4 attempt") as caught:
            await fetcher(3, delays).get(site.url + "/busy")
        assert site.hits("/busy") == 4
    assert caught.value.url == site.url + "/busy" and caught.value.status == 503 and caught.value.attempts == 4
    assert len(delays) == 3
    assert 0.5 <= delays[0] <= 1.0 and 1.0 <= delays[1] <= 2.0 and 2.0 <= delays[2] <= 4.0  # jittered doubling


async def test_client_errors_fail_at_once_and_secrets_are_masked():
    delays: list[float] = []
    routes = {"/search": Answer('{"error": {"message": "key secret-123 is not valid"}}', 403),
              "/html": Answer("<html><body>Forbidden</body></html>", 403, "text/html")}
    with route_server(routes) as site:
        with pytest.raises(FetchError) as caught:
            await fetcher(3, delays, secrets=["secret-123"]).get(site.url + "/search?key=secret-123")
        assert site.hits("/search") == 1 and delays == []
        message = str(caught.value)
        assert "HTTP 403" in message and "secret-123" not in message and "key=***" in message and "is not valid" in message
        with pytest.raises(FetchError) as html:
            await fetcher(0, delays).get(site.url + "/html")
        assert str(html.value).endswith("answered HTTP 403")  # an HTML error page is not pasted into the message


async def test_unsafe_addresses_are_never_retried():
    delays: list[float] = []
    strict = RetryingFetcher(PageFetcher(), retries=3, sleep=lambda s: delays.append(s))
    with route_server({"/": Answer("hi")}) as site:
        with pytest.raises(FetchError, match="non-public"):
            await strict.get(site.url + "/")
        assert site.requests == [] and delays == []
