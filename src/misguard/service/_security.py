"""API keys with two scopes, and a request-body limit enforced before a body is read."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from enum import Enum
from typing import Any

from pydantic import SecretStr


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
