"""Held status requests (``GET /v1/jobs/{id}?wait=``): answered as soon as the job has ended, at a cost that does
not grow with the job.

A held request looks at the job with its backend's ``ended`` — an O(1) read whatever the job's size (its handle
and its status field in Redis; a flag in memory on the embedded executor), never the whole status (a count per
line, queue positions, a reconciliation with RQ) — after a tenth of the time waited so far, between
``STEP[0]`` and ``STEP[1]`` seconds: a job is seen ended within a tenth of the wait. The full status is read
once, when the request is answered. Where the look reads memory (the embedded executor), it is repeated every
``MEMORY_STEP`` instead: a user waiting for a one-second sweep then waits 5 ms, not 50 ms, past its end.

Each key holds at most ``max_waits_per_key`` requests at once (:class:`HeldRequests`): past that, a request is
answered at once, with the status then, as if it had not asked to wait.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

#: Bounds (s) of the interval between two looks of a held request.
STEP = (0.02, 0.25)
#: Interval (s) between two looks where a look reads memory (the embedded executor): it costs microseconds, so a
#: held request sees the job's end within 10 ms whatever the job's length.
MEMORY_STEP = (0.01, 0.01)


class HeldRequests:
    """How many requests each key holds now (in this API process); at most ``cap`` each (0: no cap)."""

    def __init__(self, cap: int):
        self.cap = int(cap)
        self._held: dict[str | None, int] = {}
        self._lock = threading.Lock()

    @contextmanager
    def hold(self, owner: str | None) -> Iterator[bool]:
        """Within the block, whether this request may be held (the key is under its cap)."""
        with self._lock:
            held = self._held.get(owner, 0)
            allowed = not self.cap or held < self.cap
            if allowed:
                self._held[owner] = held + 1
        try:
            yield allowed
        finally:
            if allowed:
                with self._lock:
                    left = self._held[owner] - 1
                    if left:
                        self._held[owner] = left
                    else:
                        del self._held[owner]

    def count(self, owner: str | None) -> int:
        return self._held.get(owner, 0)


async def until_ended(ended: Callable[[], Awaitable[bool]], wait: float,
                      step: tuple[float, float] = STEP) -> None:
    """Return when ``ended()`` says so, or after ``wait`` seconds; ``step``: the bounds of the interval between
    two looks (a tenth of the time waited so far in between)."""
    started = time.monotonic()
    while True:
        done = await ended()
        waited = time.monotonic() - started
        if done or waited >= wait:
            return
        await asyncio.sleep(min(wait - waited, max(step[0], min(step[1], 0.1 * waited))))
