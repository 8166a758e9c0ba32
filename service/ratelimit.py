"""Per-key request quotas and per-address failed-authentication limits: fixed one-minute windows.

Counted in Redis when present, so every API replica shares them; without Redis (or while it is
down) each process counts on its own, which can only be more permissive, never wrongly refuse.
Counters are named by a keyed hash (:mod:`service.secrets`): neither API keys nor addresses are
written in plain text.
"""

from __future__ import annotations

import threading
import time

from starlette.types import ASGIApp, Receive, Scope, Send

from service.middleware import OPEN_PATHS, client_address, off_loop, reply
from service.redis_link import RedisLink
from service.secrets import InstanceSecret


class RateCounter:
    def __init__(self, limit_per_minute: int, link: RedisLink | None, secret: InstanceSecret, kind: str = "rate"):
        self.limit = limit_per_minute
        self.link = link
        self.secret = secret
        self.kind = kind
        self._local: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _window() -> tuple[int, int]:
        now = time.time()
        return int(now // 60), int(60 - now % 60) + 1

    def _key(self, who: str, window: int) -> str:
        return f"saddlelab:{self.kind}:{self.secret.tag(who)}:{window}"

    def count(self, who: str) -> int:
        """Requests counted for ``who`` in the current window."""
        window, _ = self._window()
        value = None
        if self.link is not None:
            value = self.link.call(lambda r: r.get(self._key(who, window)), None)
        if value is None:
            with self._lock:
                return self._local.get((who, window), 0)
        return int(value)

    def exceeded(self, who: str) -> tuple[bool, int]:
        """Whether ``who`` is already over the limit (without counting); and seconds until the window resets."""
        _, reset = self._window()
        return (self.limit > 0 and self.count(who) >= self.limit), reset

    def hit(self, who: str) -> tuple[bool, int]:
        """Count one request; returns (allowed, seconds until the window resets)."""
        window, reset = self._window()
        if self.limit <= 0:
            return True, reset
        count = None
        if self.link is not None:
            key = self._key(who, window)

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
        key = scope.get("state", {}).get("api_key")
        who = f"key:{key}" if key else f"addr:{client_address(scope)}"
        allowed, reset = await off_loop(self.counter.hit, who, remote=self.counter.link is not None)
        if not allowed:
            await reply(send, 429, f"rate limit of {self.counter.limit} requests per minute exceeded "
                                   f"(rate_limit_per_minute)", headers=[(b"retry-after", str(reset).encode())])
            return
        await self.app(scope, receive, send)
