"""Every limit of the service at its boundary, both ways: N is accepted, N+1 refused."""

from __future__ import annotations

import json
import time

import pytest
from fastapi.testclient import TestClient

from misguard.claims import ClaimGuard, ThresholdDecision
from misguard.errors import DataError
from misguard.service import PageFetcher, UnsafeURLError, create_app
from tests.helpers.page_server import Page, page_server

from .conftest import ADMIN_KEY, CHECK_KEY, auth, make_app, make_settings


def body_of_size(size: int) -> bytes:
    """A valid check request of exactly `size` bytes."""
    empty = json.dumps({"text": ""}).encode()
    body = json.dumps({"text": "x" * (size - len(empty))}).encode()
    assert len(body) == size
    return body


@pytest.mark.parametrize("chunked", [False, True])
def test_body_size_limit_both_ways(db, chunked):
    limit = 5_000
    with TestClient(make_app(db, max_body_bytes=limit)) as client:
        def post(body: bytes):
            content = (body[i : i + 1000] for i in range(0, len(body), 1000)) if chunked else body
            return client.post("/v1/check", content=content, headers={**auth(), "Content-Type": "application/json"})

        at = post(body_of_size(limit))
        assert at.status_code == 200, at.text
        over = post(body_of_size(limit + 1))
        assert over.status_code == 413 and f"over {limit} bytes" in over.json()["detail"]


def test_text_length_limit_both_ways(db):
    with TestClient(make_app(db, max_text_chars=1_000)) as client:
        assert client.post("/v1/check", json={"text": "y" * 1_000}, headers=auth()).status_code == 200
        over = client.post("/v1/check", json={"texts": ["ok", "y" * 1_001]}, headers=auth())
        assert over.status_code == 413 and "text 1 has 1,001 characters" in over.json()["detail"]


def test_batch_size_limit_both_ways(db):
    with TestClient(make_app(db, max_batch=8)) as client:
        at = client.post("/v1/check", json={"texts": [f"text {i}" for i in range(8)]}, headers=auth())
        assert at.status_code == 200 and len(at.json()["results"]) == 8
        over = client.post("/v1/check", json={"texts": [f"text {i}" for i in range(9)]}, headers=auth())
        assert over.status_code == 413 and "9 texts" in over.json()["detail"]


def page_of(blocks: int) -> str:
    paragraphs = "".join(f"<p>Paragraph {i} says that the council met on a Tuesday to discuss the bus timetable.</p>"
                         for i in range(blocks))
    return f"<html><body><article>{paragraphs}</article></body></html>"


def test_page_block_limit_both_ways(db):
    with TestClient(make_app(db, max_page_blocks=3)) as client:
        at = client.post("/v1/check/page", json={"html": page_of(3)}, headers=auth()).json()
        assert len(at["blocks"]) == 3 and at["skipped_blocks"] == 0
        over = client.post("/v1/check/page", json={"html": page_of(4)}, headers=auth()).json()
        assert len(over["blocks"]) == 3 and over["skipped_blocks"] == 1


class SlowGuard(ClaimGuard):
    """A guard that takes `delay_s` per batch (a loaded machine, a slow judge)."""

    delay_s = 0.0

    def check_many(self, texts):
        time.sleep(self.delay_s)
        return super().check_many(texts)


@pytest.mark.parametrize("delay_s, status", [(0.1, 200), (1.5, 503)])
def test_request_timeout_both_ways(db, delay_s, status):
    guard_class = type("Slow", (SlowGuard,), {"delay_s": delay_s})
    app = create_app(make_settings(db, request_timeout_s=0.8),
                     make_guard=lambda store: guard_class(store, decision=ThresholdDecision(0.6)))
    with TestClient(app) as client:
        response = client.post("/v1/check", json={"text": "a text to check"}, headers=auth())
        assert response.status_code == status, response.text
        if status == 503:
            assert response.headers["Retry-After"] and "took too long" in response.json()["detail"]


def loopback_only(ip) -> bool:
    return str(ip) == "127.0.0.1"


async def test_fetch_timeout_both_ways():
    pages = {"/quick": Page("<p>quick</p>", delay_s=0.1), "/slow": Page("<p>slow</p>", delay_s=2.0)}
    with page_server(pages) as site:
        fetcher = PageFetcher(policy=loopback_only, timeout_s=1.0)
        assert (await fetcher.fetch(site.url + "/quick")).text == "<p>quick</p>"
        started = time.perf_counter()
        with pytest.raises(DataError, match="could not fetch .*Timeout"):
            await fetcher.fetch(site.url + "/slow")
        assert time.perf_counter() - started < 1.9  # gave up at the timeout, not after the answer


async def test_redirect_count_both_ways():
    pages = {f"/r{i}": Page(status=302, headers={"Location": f"/r{i + 1}"}) for i in range(3)}
    pages["/r3"] = Page("<p>arrived</p>")
    with page_server(pages) as site:
        fetcher = PageFetcher(policy=loopback_only, max_redirects=3)
        page = await fetcher.fetch(site.url + "/r0")  # exactly 3 redirects
        assert page.url == site.url + "/r3" and page.text == "<p>arrived</p>"
        with pytest.raises(UnsafeURLError, match="more than 2 redirects"):
            await PageFetcher(policy=loopback_only, max_redirects=2).fetch(site.url + "/r0")


async def test_fetched_page_size_both_ways():
    with page_server({"/page": Page("z" * 1_000)}) as site:
        assert len((await PageFetcher(policy=loopback_only, max_bytes=1_000).fetch(site.url + "/page")).text) == 1_000
        with pytest.raises(UnsafeURLError, match="larger than 999"):
            await PageFetcher(policy=loopback_only, max_bytes=999).fetch(site.url + "/page")


REVIEW = {"@type": "ClaimReview", "claimReviewed": "Hedgehogs can climb trees to escape foxes at night",
          "reviewRating": {"alternateName": "False"}}
ADMIN_ROUTES = [("get", "/v1/claims", None), ("post", "/v1/claims", REVIEW), ("delete", "/v1/claims/no-such-claim", None)]


@pytest.mark.parametrize("method, path, body", ADMIN_ROUTES)
def test_admin_routes_need_the_admin_key(client, method, path, body):
    def call(headers):
        kwargs = {"headers": headers} | ({"json": body} if body is not None else {})
        return getattr(client, method)(path, **kwargs)

    assert call({}).status_code == 401
    assert call(auth("not-a-key")).status_code == 401
    refused = call(auth(CHECK_KEY))
    assert refused.status_code == 403 and "not manage" in refused.json()["detail"]
    allowed = call(auth(ADMIN_KEY))
    assert allowed.status_code == (404 if method == "delete" else 200), allowed.text


def test_listing_limits_both_ways(client):
    assert client.get("/v1/claims", params={"limit": 1000}, headers=auth(ADMIN_KEY)).status_code == 200
    assert client.get("/v1/claims", params={"limit": 1001}, headers=auth(ADMIN_KEY)).status_code == 422
    assert client.get("/v1/claims", params={"limit": 0}, headers=auth(ADMIN_KEY)).status_code == 422
    assert client.get("/v1/claims", params={"offset": -1}, headers=auth(ADMIN_KEY)).status_code == 422
