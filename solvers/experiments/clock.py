"""A chain's clock: how many warmup steps or draws the next compiled call may take, so that it ends in time.

A compiled call (a chunk of warmup steps, a block of draws) cannot look at the clock, so a time limit checked
only between calls is as late as the longest call: a warmup of 10⁷ steps or a block of 10⁶ draws. The clock sizes
each call instead: it measures the seconds per unit (warmup step, kept draw) of the last call, and the next call
gets as many units as fill ``SAFETY`` of the time left, at most ``CHUNK_FRACTION`` of the whole limit (the cost of
a unit can grow — a NUTS trajectory lengthens as its step size adapts — so no call is planned long). The first two
calls of each kind run one unit: the first one's time includes the compilation. When not even one unit fits in
the time left, the chain stops.

What remains unbounded is one unit itself (one draw of ``thin`` steps, the first call's compilation); the
service puts a watchdog behind this (``service.experiments.chain_watch``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

#: Share of the time left that one call is planned to take.
SAFETY = 0.5
#: Largest share of the whole limit one call is planned to take.
CHUNK_FRACTION = 1 / 16


class ChainClock:
    """Sizes a chain's calls against ``seconds`` from now (None: no limit, every call as large as asked)."""

    def __init__(self, seconds: float | None, now: Callable[[], float] = time.monotonic):
        self._now = now
        self.seconds = seconds
        self.deadline = None if seconds is None else now() + max(0.0, seconds)
        self._rate: dict[str, float] = {}
        self._calls: dict[str, int] = {}
        #: Set when the chain was stopped for want of time (by :func:`solvers.experiments.stepping.steps`).
        self.stopped = False

    def now(self) -> float:
        return self._now()

    def left(self) -> float:
        return math.inf if self.deadline is None else self.deadline - self._now()

    def units(self, kind: str, wanted: int) -> int:
        """How many units of ``kind`` the next call may run (at most ``wanted``); 0 when none fits in time."""
        if wanted <= 0 or self.deadline is None:
            return max(0, wanted)
        left = self.left()
        if left <= 0:
            return 0
        rate = self._rate.get(kind)
        if rate is None or self._calls.get(kind, 0) < 2:
            return 1  # measure first, then measure without the compilation
        if rate > left:
            return 0
        budget = min(SAFETY * left, CHUNK_FRACTION * (self.seconds or 0.0))
        return int(max(1, min(wanted, budget // rate if rate > 0 else wanted)))

    def record(self, kind: str, units: int, seconds: float) -> None:
        """What a call of ``units`` units took; the latest measure is what sizes the next call."""
        if units > 0:
            self._rate[kind] = max(seconds, 0.0) / units
            self._calls[kind] = self._calls.get(kind, 0) + 1
