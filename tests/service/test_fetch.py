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
    # IPv4 hidden in IPv6 forms: NAT64 (well-known and local-use prefixes), IPv4-compatible,
    # IPv4-translated (SIIT), Teredo; and the deprecated site-local range.
    ("64:ff9b::7f00:1", False), ("64:ff9b::a00:1", False), ("64:ff9b::5db8:d822", True),
    ("64:ff9b:1::7f00:1", False), ("64:ff9b:1::5db8:d822", False),
    ("::127.0.0.1", False), ("::5db8:d822", False), ("::ffff:0:7f00:1", False), ("::ffff:0:a9fe:a9fe", False),
    ("fec0::1", False), ("feff::1", False), ("2001:0:4136:e378:8000:63bf:80ff:fffe", False),
    ("::ffff:93.184.216.34", True), ("2002:5db8:d822::1", True), ("2001:db8::1", False), ("ff0e::1", False),
])
def test_public_only_policy(address, allowed):
    assert public_only(ipaddress.ip_address(address)) is allowed


@pytest.mark.parametrize("url", ["http://[::127.0.0.1]:9/", "http://[64:ff9b::7f00:1]/", "http://[::ffff:0:7f00:1]/",
                                 "http://[fec0::1]/", "http://[64:ff9b:1::a9fe:a9fe]/"])
async def test_ipv6_literals_hiding_private_ipv4_are_refused_before_connecting(url):
    with pytest.raises(UnsafeURLError, match="non-public"):
        await PageFetcher().fetch(url)


@pytest.mark.parametrize("url", ["http://xn--lcalhost-sxa.example/", "http://xn--/", "http://a..b/",
                                 "http://" + "a" * 70 + ".example/"])
async def test_invalid_host_names_are_a_clear_refusal(url):
    with pytest.raises(UnsafeURLError, match="not a valid host name"):
        await PageFetcher().fetch(url)


async def test_an_invalid_host_in_a_redirect_is_a_clear_refusal():
    pages = {"/bad": Page(status=302, headers={"Location": "http://xn--lcalhost-sxa.example/"})}
    with page_server(pages) as site:
        with pytest.raises(UnsafeURLError, match="not a valid host name"):
            await PageFetcher(policy=loopback_only).fetch(site.url + "/bad")


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
