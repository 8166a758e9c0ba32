"""Redis's state for ``/healthz``, found without ever blocking the event loop.

The probe (``INFO memory``, with a short socket timeout) runs on a thread of its own; its answer is
kept for ``fresh`` seconds, and a request waits at most ``wait`` seconds for a probe under way (then
answers with the last known state). So ``/healthz`` answers within a second whatever Redis does —
slow, unreachable, or full — and whatever load the API is under.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import Future, ThreadPoolExecutor

import redis

from service.redis_link import UNREACHABLE, RedisLink


class RedisHealth:
    def __init__(self, link: RedisLink, fresh: float = 0.5, timeout: float = 0.3, wait: float = 0.5):
        self.link = link
        self.fresh = fresh
        self.wait = wait
        self.client = redis.Redis.from_url(link.url, socket_timeout=timeout, socket_connect_timeout=timeout)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="saddlelab-health")
        self._value: str | None = None
        self._at = -1e9
        self._probe: Future[str] | None = None

    def probe(self) -> str:
        """'ok', 'full' (at maxmemory: writes are refused) or 'down'."""
        try:
            info = self.client.info("memory")
        except (*UNREACHABLE, redis.exceptions.ResponseError):
            state = "down"
        else:
            cap, used = int(info.get("maxmemory", 0) or 0), int(info.get("used_memory", 0) or 0)
            state = "full" if self.link.full or (cap > 0 and used >= cap) else "ok"
        self._value, self._at = state, time.monotonic()
        return state

    async def status(self) -> str:
        if self._value is not None and time.monotonic() - self._at < self.fresh:
            return self._value
        probe = self._probe
        if probe is None or probe.done():
            probe = self._probe = self._executor.submit(self.probe)
        try:
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(probe)), self.wait)
        except TimeoutError:
            return self._value or "down"

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
