"""A Redis connection that degrades instead of failing.

Every call goes through :meth:`RedisLink.call`; a connection error marks Redis ``down`` and
returns the caller's fallback. After ``retry_seconds`` the next call tries again, so the
service picks Redis up again by itself when it returns.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import redis

log = logging.getLogger("saddlelab.redis")
T = TypeVar("T")


class RedisLink:
    def __init__(self, url: str | None, retry_seconds: float = 2.0, timeout: float = 1.0,
                 client: redis.Redis | None = None):
        self.url = url
        self.retry_seconds = retry_seconds
        self.client = client if client is not None else redis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout, health_check_interval=10
        )
        self._down_since: float | None = None
        self._lock = threading.Lock()

    @property
    def up(self) -> bool:
        return self._down_since is None

    def status(self) -> str:
        """'ok' or 'down', probing Redis (a ping) when it is due."""
        ok = self.call(lambda r: bool(r.ping()), False, force=True)
        return "ok" if ok else "down"

    def call(self, fn: Callable[[redis.Redis], T], fallback: T, *, force: bool = False) -> T:
        with self._lock:
            down = self._down_since
        if down is not None and not force and time.monotonic() - down < self.retry_seconds:
            return fallback
        try:
            out = fn(self.client)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
            with self._lock:
                if self._down_since is None:
                    log.warning("redis unreachable (%s); continuing without it", exc)
                self._down_since = time.monotonic()
            return fallback
        with self._lock:
            if self._down_since is not None:
                log.info("redis is back")
            self._down_since = None
        return out

    def raw(self) -> Any:
        return self.client
