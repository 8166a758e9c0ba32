"""Held status requests (``GET /v1/jobs/{id}?wait=``): answered as soon as the job has ended, at a cost that does
not grow with the job.

A held request looks at the job with its backend's ``ended`` — an O(1) read whatever the job's size (its handle
and its status field in Redis; a flag in memory on the embedded executor), never the whole status (a count per
line, queue positions, a reconciliation with RQ) — after a tenth of the time waited so far, between
``STEP[0]`` and ``STEP[1]`` seconds: a job is seen ended within a tenth of the wait. The full status is read
once, when the request is answered. A backend that can say when a job ends (the embedded executor's ``on_end``)
wakes the held request at once (``woken``): a user waiting for a one-second sweep does not wait the tenth of a
second more that the next look would take, and the request costs no looks meanwhile.

Each key holds at most ``max_waits_per_key`` requests at once (:class:`HeldRequests`): past that, a request is
answered at once, with the status then, as if it had not asked to wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

#: Bounds (s) of the interval between two looks of a held request.
STEP = (0.02, 0.25)


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


async def until_ended(ended: Callable[[], Awaitable[bool]], wait: float, woken: asyncio.Event | None = None) -> None:
    """Return when ``ended()`` says so, or after ``wait`` seconds. ``woken``: set when some job may have ended; the
    look is repeated then as well as on the usual schedule."""
    started = time.monotonic()
    while True:
        if woken is not None:
            woken.clear()  # before the look: an end after it sets the event again, and the wait below returns at once
        done = await ended()
        waited = time.monotonic() - started
        if done or waited >= wait:
            return
        pause = min(wait - waited, max(STEP[0], min(STEP[1], 0.1 * waited)))
        if woken is None:
            await asyncio.sleep(pause)
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken.wait(), pause)
