"""Request-level guards: body size (413) and API keys (401; 429 for an address that keeps failing)."""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from anyio import to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

OPEN_PATHS = ("/healthz", "/docs", "/redoc", "/openapi.json")
T = TypeVar("T")


async def off_loop(fn: Callable[..., T], *args: Any, remote: bool = True) -> T:
    """Run ``fn`` on a worker thread when it talks to Redis (``remote``): the event loop never waits on a socket."""
    return await to_thread.run_sync(fn, *args) if remote else fn(*args)


async def reply(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    base = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": base + (headers or [])})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """Refuse bodies above ``limit`` bytes, by header and while streaming (chunked uploads)."""

    def __init__(self, app: ASGIApp, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    too_big = int(value) > self.limit
                except ValueError:
                    too_big = False
                if too_big:
                    await reply(send, 413, f"request body exceeds the limit max_body_bytes={self.limit}")
                    return
        seen = 0
        replied = False

        async def limited() -> Message:
            nonlocal seen, replied
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit and not replied:
                    replied = True
                    await reply(send, 413, f"request body exceeds the limit max_body_bytes={self.limit}")
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if not replied:  # once the 413 is out, whatever the app answers is dropped
                await send(message)

        await self.app(scope, limited, guarded_send)


def client_address(scope: Scope) -> str:
    """The peer's address as the server saw it (proxy headers are honoured only from trusted proxies)."""
    client: Any = scope.get("client") or ("anonymous",)
    return str(client[0])


class FailureCounter(Protocol):
    limit: int
    link: Any

    def exceeded(self, who: str) -> tuple[bool, int]: ...
    def hit(self, who: str) -> tuple[bool, int]: ...


class ApiKeys:
    """``X-API-Key`` must match one configured key (constant-time); no keys = open instance.

    Failed attempts are counted per client address; an address over ``failures.limit`` per minute
    gets 429 (with Retry-After) until its window resets, whatever key it tries.
    """

    def __init__(self, app: ASGIApp, keys: tuple[str, ...], failures: FailureCounter | None = None):
        self.app = app
        self.keys = tuple(k.encode() for k in keys)
        self.failures = failures

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.keys or scope.get("path", "").startswith(OPEN_PATHS):
            await self.app(scope, receive, send)
            return
        address = f"addr:{client_address(scope)}"
        remote = self.failures is not None and self.failures.link is not None
        if self.failures is not None:
            blocked, reset = await off_loop(self.failures.exceeded, address, remote=remote)
            if blocked:
                await self._too_many(send, reset)
                return
        given = dict(scope.get("headers", [])).get(b"x-api-key", b"")
        # Compare against every key so the time taken does not reveal which one nearly matched.
        match = None
        for key in self.keys:
            if hmac.compare_digest(given, key):
                match = key
        if match is None:
            if self.failures is not None:
                allowed, reset = await off_loop(self.failures.hit, address, remote=remote)
                if not allowed:
                    await self._too_many(send, reset)
                    return
            await reply(send, 401, "missing or invalid X-API-Key")
            return
        scope.setdefault("state", {})["api_key"] = match.decode()
        await self.app(scope, receive, send)

    async def _too_many(self, send: Send, reset: int) -> None:
        assert self.failures is not None
        await reply(send, 429, f"too many failed authentications from this address (more than "
                               f"{self.failures.limit} per minute, auth_failures_per_minute)",
                    headers=[(b"retry-after", str(reset).encode())])
