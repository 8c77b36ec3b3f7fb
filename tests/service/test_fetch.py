"""The page fetcher's SSRF defences, against a real HTTP server on loopback."""

from __future__ import annotations

import ipaddress

import pytest

from misguard.service import PageFetcher, UnsafeURLError, public_only
from tests.helpers.page_server import Page, page_server


@pytest.mark.parametrize("address, allowed", [
    ("93.184.216.34", True), ("2606:4700:4700::1111", True),
    ("127.0.0.1", False), ("10.1.2.3", False), ("172.16.0.1", False), ("192.168.1.1", False),
    ("169.254.169.254", False), ("100.100.100.200", False), ("0.0.0.0", False), ("224.0.0.1", False),
    ("::1", False), ("fe80::1", False), ("fd00:ec2::254", False), ("::ffff:127.0.0.1", False),
    ("2002:7f00:1::1", False), ("255.255.255.255", False),
])
def test_public_only_policy(address, allowed):
    assert public_only(ipaddress.ip_address(address)) is allowed


def resolver(table: dict[str, list[str]]):
    async def resolve(host: str, port: int) -> list[str]:
        return table[host]

    return resolve


def loopback_only(ip) -> bool:
    """A policy for these tests: the page server (127.0.0.1) stands for the public web."""
    return str(ip) == "127.0.0.1"


async def test_default_policy_refuses_loopback_literals_and_names():
    fetcher = PageFetcher(resolver=resolver({"intranet.example": ["10.0.0.7"], "mixed.example": ["93.184.216.34", "127.0.0.1"]}))
    for url in ("http://127.0.0.1/", "http://[::1]:8080/", "http://intranet.example/", "http://mixed.example/"):
        with pytest.raises(UnsafeURLError):
            await fetcher.fetch(url)
    for url in ("http://localhost/", "http://0x7f000001/", "http://2130706433/"):  # the system resolver's answers
        with pytest.raises(UnsafeURLError, match="non-public"):
            await PageFetcher().fetch(url)
    for url in ("file:///etc/passwd", "gopher://x/", "http://user:pw@example.org/", "not a url"):
        with pytest.raises(UnsafeURLError):
            await fetcher.fetch(url)


async def test_redirects_are_checked_at_every_hop():
    pages = {
        "/ok": Page("<p>fine</p>"),
        "/to-private": Page(status=302, headers={"Location": "http://127.0.0.2:{port}/ok"}),
        "/to-metadata": Page(status=301, headers={"Location": "http://169.254.169.254/latest/meta-data/"}),
        "/to-rebound-name": Page(status=307, headers={"Location": "http://rebound.example:{port}/ok"}),
        "/to-ok": Page(status=302, headers={"Location": "/ok"}),
        "/loop": Page(status=302, headers={"Location": "/loop"}),
    }
    with page_server(pages) as site:
        for page in pages.values():
            if "Location" in page.headers:
                page.headers["Location"] = page.headers["Location"].format(port=site.port)
        fetcher = PageFetcher(policy=loopback_only, resolver=resolver({"rebound.example": ["10.9.9.9"]}))
        for path in ("/to-private", "/to-metadata", "/to-rebound-name"):
            with pytest.raises(UnsafeURLError, match="non-public"):
                await fetcher.fetch(site.url + path)
        with pytest.raises(UnsafeURLError, match="redirects"):
            await fetcher.fetch(site.url + "/loop")
        page = await fetcher.fetch(site.url + "/to-ok")
        assert page.url == site.url + "/ok" and page.text == "<p>fine</p>" and page.status == 200


async def test_the_connection_goes_to_the_checked_address_with_the_name_as_host():
    """No second DNS lookup: the name resolves once (to the page server) and the request
    carries it in the Host header."""
    with page_server({"/": Page("<p>hello</p>")}) as site:
        fetcher = PageFetcher(policy=loopback_only, resolver=resolver({"news.example": ["127.0.0.1"]}))
        page = await fetcher.fetch(f"http://news.example:{site.port}/")
        assert page.text == "<p>hello</p>"
        assert site.requests[-1][1]["Host"] == f"news.example:{site.port}"


async def test_oversized_pages_are_refused():
    with page_server({"/big": Page("x" * 5000)}) as site:
        with pytest.raises(UnsafeURLError, match="larger than"):
            await PageFetcher(policy=loopback_only, max_bytes=1000).fetch(site.url + "/big")
