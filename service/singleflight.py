"""Identical concurrent requests compute once.

Within a process, the first caller for a key computes while the others wait on its lock and
then read the cache. Across processes (several API replicas on one Redis), a short-lived Redis
lock plays the same role; if Redis is down each process computes on its own, which is correct,
only not deduplicated.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from service.redis_link import RedisLink


class SingleFlight:
    def __init__(self, link: RedisLink | None = None, lock_ttl: int = 600):
        self._locks: dict[str, threading.Lock] = {}
        self._refs: dict[str, int] = {}
        self._guard = threading.Lock()
        self.link = link
        self.lock_ttl = lock_ttl

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
            self._refs[key] = self._refs.get(key, 0) + 1
        try:
            with lock, self._redis_lock(key):
                yield
        finally:
            with self._guard:
                self._refs[key] -= 1
                if self._refs[key] == 0:
                    del self._refs[key]
                    del self._locks[key]

    @contextmanager
    def _redis_lock(self, key: str, wait: float = 600.0) -> Iterator[None]:
        if self.link is None:
            yield
            return
        name = f"saddlelab:lock:{key}"
        token = str(time.time_ns())
        deadline = time.monotonic() + wait
        acquired = False
        while time.monotonic() < deadline:
            got = self.link.call(lambda r: r.set(name, token, nx=True, ex=self.lock_ttl), None)
            if got is None and not self.link.up:
                break  # Redis down: compute locally.
            if got:
                acquired = True
                break
            time.sleep(0.05)
        try:
            yield
        finally:
            if acquired:
                release: Callable = lambda r: r.delete(name) if r.get(name) == token.encode() else None  # noqa: E731
                self.link.call(release, None)
