"""API keys with two scopes, a limit on failed authentications per client address, and a
request-body limit enforced before a body is read."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Iterable
from enum import Enum
from typing import Any

from pydantic import SecretStr

from ..errors import ConfigError


class Scope(str, Enum):
    CHECK = "check"
    ADMIN = "admin"


def key_id(key: str) -> str:
    """A key's name in logs and rate-limit counters: never the key itself."""
    return hashlib.sha256(key.encode()).hexdigest()[:12]


class KeyRing:
    """Which bearer keys hold which scope. Admin keys may also check."""

    def __init__(self, check_keys: Iterable[SecretStr], admin_keys: Iterable[SecretStr]) -> None:
        admin = [k.get_secret_value().encode() for k in admin_keys]
        check = [k.get_secret_value().encode() for k in check_keys]
        self._keys = {Scope.ADMIN: admin, Scope.CHECK: check + admin}

    def __bool__(self) -> bool:
        return bool(self._keys[Scope.CHECK])

    def allows(self, key: str | None, scope: Scope) -> bool:
        if not key:
            return False
        given = key.encode()
        # compare_digest against every key, no early exit: timing says nothing about which.
        return sum(hmac.compare_digest(given, k) for k in self._keys[scope]) > 0


class FailedAuthLimiter:
    """Counts failed authentications (missing or wrong keys) per client address.

    Checked before the key is: once an address is over the limit, every request from it is
    refused until the window ends, with the right key too, so a guesser learns nothing from
    its answers. Counters live in the same storage as the per-key limits (`memory://`, or
    `redis://` shared by replicas).

    Args:
        limit: in the `limits` syntax, e.g. `"10/minute"` or `"5/second;30/hour"`.
        storage_uri: the `limits` storage.
    """

    def __init__(self, limit: str, storage_uri: str) -> None:
        from limits import parse_many
        from limits.storage import storage_from_string
        from limits.strategies import FixedWindowRateLimiter

        try:
            self.items = parse_many(limit)
        except ValueError as exc:
            raise ConfigError(f"auth_failure_limit {limit!r} is not a limit such as '10/minute': {exc}") from None
        self._limiter = FixedWindowRateLimiter(storage_from_string(storage_uri))

    def retry_after(self, address: str) -> int | None:
        """Seconds until `address` may try again, or None when it is not over the limit."""
        waits = []
        for item in self.items:
            if not self._limiter.test(item, "auth-failures", address):
                reset, _ = self._limiter.get_window_stats(item, "auth-failures", address)
                waits.append(max(1, int(reset - time.time()) + 1))
        return max(waits) if waits else None

    def failed(self, address: str) -> None:
        """Count one failed authentication from `address`."""
        for item in self.items:
            self._limiter.hit(item, "auth-failures", address)


def bearer_key(authorization: str | None) -> str | None:
    """The KEY of an `Authorization: Bearer KEY` header, else None."""
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return value.strip() or None


class BodyLimitMiddleware:
    """Answer 413 to bodies over `max_bytes`, by Content-Length or while they arrive.

    A plain ASGI middleware that reads the body itself (at most `max_bytes` of it) before
    the app sees the request: a chunked upload without a length is cut off as soon as it
    passes the limit, and the app never buffers more than the limit either.
    """

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            await _too_large(send, self.max_bytes)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left before sending its body
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await _too_large(send, self.max_bytes)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()  # later calls wait for the disconnect, as usual

        await self.app(scope, replay, send)


async def _too_large(send: Any, max_bytes: int) -> None:
    body = f'{{"detail":"request body over {max_bytes} bytes; send fewer or shorter texts"}}'.encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
