"""Request-level guards: body size (413) and API keys (401)."""

from __future__ import annotations

import hmac
import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

OPEN_PATHS = ("/healthz", "/docs", "/redoc", "/openapi.json")


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


class ApiKeys:
    """``X-API-Key`` must match one configured key (constant-time); no keys = open instance."""

    def __init__(self, app: ASGIApp, keys: tuple[str, ...]):
        self.app = app
        self.keys = tuple(k.encode() for k in keys)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.keys or scope.get("path", "").startswith(OPEN_PATHS):
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers", [])).get(b"x-api-key", b"")
        # Compare against every key so the time taken does not reveal which one nearly matched.
        match = None
        for key in self.keys:
            if hmac.compare_digest(given, key):
                match = key
        if match is None:
            await reply(send, 401, "missing or invalid X-API-Key")
            return
        scope.setdefault("state", {})["api_key"] = match.decode()
        await self.app(scope, receive, send)
