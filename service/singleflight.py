"""Identical concurrent solves compute once, also across API processes sharing one Redis.

Within a process, requests for a key that is being computed join that computation
(:class:`service.solving.SolveService`). Across processes, a short-lived Redis lock per key plays the
same role: the holder computes, the others wait for it and then read the cache. If Redis is down or
full, each process computes on its own, which is correct, only not deduplicated.
"""

from __future__ import annotations

import time

from service.redis_link import RedisLink

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class SingleFlight:
    def __init__(self, link: RedisLink | None = None, lock_ttl: int = 600):
        self.link = link
        self.lock_ttl = lock_ttl

    @staticmethod
    def _name(key: str) -> str:
        return f"saddlelab:lock:{key}"

    def try_acquire(self, key: str) -> tuple[str | None, bool]:
        """(token, held elsewhere): a token when this process now holds the lock; ``held elsewhere`` when
        another process holds it (then wait and try again). (None, False): no lock to be had — compute."""
        if self.link is None:
            return None, False
        token = str(time.time_ns())
        got = self.link.call(lambda r: r.set(self._name(key), token, nx=True, ex=self.lock_ttl), None)
        if got:
            return token, False
        if got is None and not self.link.writable:
            return None, False  # Redis down or full: compute locally
        return None, True

    def release(self, key: str, token: str) -> None:
        if self.link is not None:
            self.link.call(lambda r: r.eval(_RELEASE, 1, self._name(key), token), None)
