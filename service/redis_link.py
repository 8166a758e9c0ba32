"""A Redis connection that degrades instead of failing, and bounded retries for writes that must land.

Every call of the API goes through :meth:`RedisLink.call`; a connection error marks Redis ``down``
and returns the caller's fallback, a write refused because Redis reached its ``maxmemory`` (with
``noeviction`` it refuses writes rather than dropping data) marks it ``full`` and returns the
fallback too. After ``retry_seconds`` the next call tries again, so the service picks Redis up again
by itself when it returns.

Job state that must not be lost (a sweep point, a line's completion) is written with
:func:`retrying`: the write is repeated with a bounded exponential backoff while Redis is away or
full, and gives up with :class:`RedisUnavailable` after a bounded time.
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

#: Errors that mean "Redis cannot be reached now" (a restart, a lost network).
UNREACHABLE = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)

#: How long an observed "full" refusal is remembered by :meth:`RedisLink.status`.
FULL_MEMORY_SECONDS = 10.0


#: redis-py's own class for the ``OOM`` reply (recent versions); older ones raise a plain ResponseError.
_OUT_OF_MEMORY: tuple[type[BaseException], ...] = tuple(
    c for c in (getattr(redis.exceptions, "OutOfMemoryError", None),) if c is not None
)


def is_full(exc: BaseException) -> bool:
    """A write refused because Redis is at ``maxmemory`` with ``noeviction`` (the ``OOM`` error reply)."""
    if _OUT_OF_MEMORY and isinstance(exc, _OUT_OF_MEMORY):
        return True
    text = str(exc)
    return isinstance(exc, redis.exceptions.ResponseError) and (
        text.startswith("OOM") or "used memory > 'maxmemory'" in text
    )


def is_transient(exc: BaseException) -> bool:
    """Redis is unreachable or full: the same command may succeed later."""
    return isinstance(exc, UNREACHABLE) or is_full(exc)


def describe(exc: BaseException) -> str:
    """The cause in words, for 503s and job errors."""
    if is_full(exc):
        return f"Redis is full (maxmemory reached; nothing is evicted, writes are refused): {exc}"
    return f"Redis is unreachable ({type(exc).__name__}: {exc})"


class RedisUnavailable(Exception):
    """A write kept failing because Redis stayed unreachable or full; ``cause`` is the last error."""

    def __init__(self, cause: BaseException, seconds: float):
        self.cause = cause
        self.full = is_full(cause)
        super().__init__(f"{describe(cause)}; retried for {seconds:.0f} s")


def retrying(fn: Callable[[], T], seconds: float, *, first_delay: float = 0.05, max_delay: float = 5.0,
             on_retry: Callable[[BaseException, float], None] | None = None) -> T:
    """``fn()``, repeated with exponential backoff (``first_delay`` doubling up to ``max_delay``) while Redis
    is unreachable or full, for at most ``seconds``; then :class:`RedisUnavailable`. Other errors propagate."""
    deadline = time.monotonic() + max(0.0, seconds)
    delay = first_delay
    while True:
        try:
            return fn()
        except (redis.exceptions.ResponseError, *UNREACHABLE) as exc:
            if not is_transient(exc):
                raise
            left = deadline - time.monotonic()
            if left <= 0:
                raise RedisUnavailable(exc, seconds) from exc
            if on_retry is not None:
                on_retry(exc, delay)
            time.sleep(min(delay, left))
            delay = min(delay * 2, max_delay)


class RedisLink:
    def __init__(self, url: str, retry_seconds: float = 2.0, timeout: float = 1.0):
        self.url = url
        self.retry_seconds = retry_seconds
        self.client = redis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout, health_check_interval=10
        )
        self._down_since: float | None = None
        self._full_at: float | None = None
        self._lock = threading.Lock()

    @property
    def up(self) -> bool:
        return self._down_since is None

    @property
    def full(self) -> bool:
        """A write was refused for lack of memory within the last :data:`FULL_MEMORY_SECONDS`."""
        at = self._full_at
        return at is not None and time.monotonic() - at < FULL_MEMORY_SECONDS

    @property
    def writable(self) -> bool:
        return self.up and not self.full

    def saw_full(self, exc: BaseException) -> None:
        """Record a refusal for lack of memory seen by a caller that handles the error itself."""
        with self._lock:
            if not self.full:
                log.warning("%s; answers are returned uncached", describe(exc))
            self._full_at = time.monotonic()

    def status(self) -> str:
        """'ok', 'full' or 'down', probing Redis (a ping) when it is due."""
        ok = self.call(lambda r: bool(r.ping()), False, force=True)
        if not ok:
            return "down"
        return "full" if self.full else "ok"

    def call(self, fn: Callable[[redis.Redis], T], fallback: T, *, force: bool = False) -> T:
        with self._lock:
            down = self._down_since
        if down is not None and not force and time.monotonic() - down < self.retry_seconds:
            return fallback
        try:
            out = fn(self.client)
        except UNREACHABLE as exc:
            with self._lock:
                if self._down_since is None:
                    log.warning("redis unreachable (%s); continuing without it", exc)
                self._down_since = time.monotonic()
            return fallback
        except redis.exceptions.ResponseError as exc:
            if not is_full(exc):
                raise
            self.saw_full(exc)
            return fallback
        with self._lock:
            if self._down_since is not None:
                log.info("redis is back")
            self._down_since = None
        return out

    def raw(self) -> Any:
        return self.client
