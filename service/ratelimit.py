"""Per-key request rate limit: a fixed one-minute window, counted in Redis when present.

With Redis every API replica shares the count; without it (or while Redis is down) each
process counts on its own, which can only be more permissive, never wrongly refuse.
"""

from __future__ import annotations

import threading
import time

from starlette.types import ASGIApp, Receive, Scope, Send

from service.middleware import OPEN_PATHS, reply
from service.redis_link import RedisLink


class RateCounter:
    def __init__(self, limit_per_minute: int, link: RedisLink | None):
        self.limit = limit_per_minute
        self.link = link
        self._local: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()

    def hit(self, who: str) -> tuple[bool, int]:
        """Count one request; returns (allowed, seconds until the window resets)."""
        now = time.time()
        window = int(now // 60)
        reset = int(60 - now % 60) + 1
        if self.limit <= 0:
            return True, reset
        count = None
        if self.link is not None:
            key = f"saddlelab:rate:{who}:{window}"

            def incr(r):  # type: ignore[no-untyped-def]
                pipe = r.pipeline()
                pipe.incr(key)
                pipe.expire(key, 120)
                return pipe.execute()[0]

            count = self.link.call(incr, None)
        if count is None:
            with self._lock:
                for k in [k for k in self._local if k[1] < window]:
                    del self._local[k]
                count = self._local[(who, window)] = self._local.get((who, window), 0) + 1
        return int(count) <= self.limit, reset


class RateLimit:
    """429 with Retry-After once a key (or, on an open instance, a client address) exceeds its quota."""

    def __init__(self, app: ASGIApp, counter: RateCounter):
        self.app = app
        self.counter = counter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path", "").startswith(OPEN_PATHS):
            await self.app(scope, receive, send)
            return
        who = scope.get("state", {}).get("api_key") or (scope.get("client") or ("anonymous",))[0]
        allowed, reset = self.counter.hit(str(who))
        if not allowed:
            await reply(send, 429, f"rate limit of {self.counter.limit} requests per minute exceeded "
                                   f"(rate_limit_per_minute)", headers=[(b"retry-after", str(reset).encode())])
            return
        await self.app(scope, receive, send)
