"""Fetch a URL without opening the caller to SSRF (the service's page checks, claim pulls,
dataset downloads).

A URL from a client may point at the service's own network: loopback, private ranges, the
cloud metadata address (169.254.169.254), or a public name that resolves there (or is made
to, later: DNS rebinding). So every hop, the first and each redirect, is resolved here,
every address it resolves to must pass the policy, and the connection goes to the address
that was checked (the name is kept for the Host header and TLS), never to a second lookup.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import DataError, MissingExtraError

if TYPE_CHECKING:  # httpx comes with the service extra, imported where used
    import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]
AddressPolicy = Callable[[IPAddress], bool]

_REDIRECTS = {301, 302, 303, 307, 308}


class UnsafeURLError(DataError):
    """The URL (or a redirect) leads somewhere the service may not fetch."""


#: IPv6 ranges never fetched, whatever they carry: site-local (deprecated, routed inside
#: a site), IPv4-compatible (deprecated; `::127.0.0.1` reaches loopback on some stacks) and
#: the local-use NAT64 prefix (RFC 8215: translates inside one network).
_NEVER_IPV6 = tuple(ipaddress.IPv6Network(n) for n in ("fec0::/10", "::/96", "64:ff9b:1::/48"))
#: IPv6 forms whose low 32 bits are the IPv4 address they reach: the NAT64 well-known prefix
#: (RFC 6052) and IPv4-translated addresses (SIIT, RFC 2765). Python's `is_global` calls
#: both global, whatever IPv4 address they carry.
_IPV4_IN_LOW_BITS = tuple(ipaddress.IPv6Network(n) for n in ("64:ff9b::/96", "::ffff:0:0:0/96"))


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address reaches, for every form that carries one: mapped
    (`::ffff:a.b.c.d`), translated (`::ffff:0:a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`), 6to4
    (`2002:AABB:CCDD::`) and Teredo (the client's address); None for the others."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if any(ip in net for net in _IPV4_IN_LOW_BITS):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    return None


def public_only(ip: IPAddress) -> bool:
    """True for globally routable unicast addresses: refuses loopback, private, link-local
    (cloud metadata), shared (100.64/10), multicast, reserved and unspecified ones, site-local
    and IPv4-compatible IPv6, and IPv4 addresses hidden in IPv6 (mapped, translated, NAT64,
    6to4, Teredo) unless the IPv4 address they reach is public itself."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id or any(ip in net for net in _NEVER_IPV6):
            return False
        embedded = embedded_ipv4(ip)
        if embedded is not None:
            return public_only(embedded)
    return ip.is_global and not ip.is_multicast


def any_address(ip: IPAddress) -> bool:
    """The policy of `allow_private_urls`: every address (tests, intranet deployments)."""
    return True


async def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for `host`."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise UnsafeURLError(f"cannot resolve {host!r}: {exc.strerror}") from None
    except UnicodeError as exc:
        raise UnsafeURLError(f"not a valid host name: {host!r}: {exc}") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class FetchedPage:
    url: str
    """The final URL, after redirects."""
    status: int
    content_type: str
    text: str
    content: bytes = b""
    """The body as received (`text` is it decoded)."""


class PageFetcher:
    """Fetch one page over http(s), checking every hop against an address policy.

    Args:
        policy: which resolved addresses may be contacted (default: public ones only).
        resolver: name -> addresses (default: the system resolver); tests inject one.
        timeout_s: for each hop (connect, and the whole read).
        max_bytes: a longer body is refused, not truncated.
        max_redirects: hops followed after the first.
    """

    def __init__(
        self,
        *,
        policy: AddressPolicy = public_only,
        resolver: Resolver = system_resolver,
        timeout_s: float = 10.0,
        max_bytes: int = 2_000_000,
        max_redirects: int = 5,
    ) -> None:
        self.policy = policy
        self.resolver = resolver
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects

    async def fetch(self, url: str, *, accept: str = "text/html,text/plain;q=0.9") -> FetchedPage:
        try:
            import httpx
        except ImportError:
            raise MissingExtraError("httpx", "net", "fetching pages") from None
        current = _parse(url)
        async with httpx.AsyncClient(follow_redirects=False, trust_env=False, timeout=self.timeout_s) as client:
            for _ in range(self.max_redirects + 1):
                address = await self._checked_address(current)
                request = client.build_request(
                    "GET", current.copy_with(host=address),
                    headers={"Host": current.netloc.decode("ascii"), "Accept": accept},
                    extensions={"sni_hostname": current.host} if current.scheme == "https" else {},
                )
                try:
                    response = await asyncio.wait_for(client.send(request, stream=True), self.timeout_s)
                    try:
                        if response.status_code in _REDIRECTS and "location" in response.headers:
                            current = _parse(str(current.join(response.headers["location"])))
                            continue
                        body = await asyncio.wait_for(self._read(response), self.timeout_s)
                    finally:
                        await response.aclose()
                except (httpx.HTTPError, TimeoutError) as exc:
                    raise DataError(f"could not fetch {current}: {type(exc).__name__}: {exc}") from None
                except UnicodeError as exc:
                    # httpx decodes a redirect's Location while it reads the response (even
                    # when it does not follow it): an invalid punycode host fails there.
                    raise UnsafeURLError(f"not a valid host name in the redirect from {current}: {exc}") from None
                return FetchedPage(
                    url=str(current), status=response.status_code,
                    content_type=response.headers.get("content-type", ""),
                    text=body.decode(response.encoding or "utf-8", errors="replace"), content=body,
                )
        raise UnsafeURLError(f"more than {self.max_redirects} redirects from {url}")

    async def _checked_address(self, url: httpx.URL) -> str:
        host = url.host
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            addresses = [ipaddress.ip_address(host)]
        except ValueError:
            addresses = [ipaddress.ip_address(a.split("%")[0]) for a in await self.resolver(host, port)]
        if not addresses:
            raise UnsafeURLError(f"{host!r} resolves to no address")
        refused = [str(a) for a in addresses if not self.policy(a)]
        if refused:
            # One bad address refuses the name: a client could not choose which one we use.
            raise UnsafeURLError(
                f"refusing to fetch {host!r}: it resolves to a non-public address ({', '.join(refused)}); "
                "the service only fetches public addresses unless allow_private_urls is set"
            )
        return str(addresses[0])  # httpx brackets an IPv6 host itself

    async def _read(self, response: httpx.Response) -> bytes:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > self.max_bytes:
                raise UnsafeURLError(f"the page is larger than {self.max_bytes:,} bytes")
            chunks.append(chunk)
        return b"".join(chunks)


def _parse(url: str) -> httpx.URL:
    import httpx

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise UnsafeURLError(f"not a URL: {exc}") from None
    if parsed.scheme not in ("http", "https"):
        raise UnsafeURLError(f"only http and https URLs can be fetched, not {parsed.scheme or 'no scheme'!r}")
    try:
        # The host is decoded (punycode) and encoded (IDNA) here, once, so that a name no
        # resolver accepts is refused now, with its reason, and not deep inside a lookup.
        host = parsed.host
        if host and not _is_ip_literal(host):
            host.encode("idna")
    except UnicodeError as exc:  # idna.IDNAError is one
        raise UnsafeURLError(f"not a valid host name in {url[:200]!r}: {exc}") from None
    if not host:
        raise UnsafeURLError("the URL has no host")
    if parsed.userinfo:
        raise UnsafeURLError("URLs with credentials are not fetched")
    return parsed


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
