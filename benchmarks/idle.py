"""Time a call only while nothing else runs on the machine.

On a shared machine a best-of-three can still be three disturbed runs: a ratio of two wall times then measures the
neighbours. Here a repetition starts once the processes outside the measurement have used less than
``QUIET_SHARE`` of one core for ``QUIET_WINDOW`` seconds, and it counts only when they stayed that quiet while it
ran (the machine's busy time from ``/proc/stat`` minus this process's and the measured processes' own CPU time);
otherwise it is run again. After ``MAX_WAIT`` seconds without a quiet machine a repetition is taken as it comes and
marked disturbed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

#: Clock ticks per second of the times /proc counts in.
TICK = os.sysconf("SC_CLK_TCK")
#: Share of one core the rest of the machine may use while a repetition runs.
QUIET_SHARE = 0.05
QUIET_WINDOW = 0.4
MAX_WAIT = 600.0

T = TypeVar("T")


@dataclass
class Timed(Generic[T]):
    seconds: float
    value: T
    #: Whether the rest of the machine stayed quiet while it ran.
    quiet: bool
    #: Repetitions run again because other processes used the CPU meanwhile.
    discarded: int


def machine_busy() -> float:
    """CPU seconds every process of the machine has used since boot (idle and I/O wait left out)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / TICK


def own_cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _others(since: tuple[float, float, float], measured: Callable[[], float]) -> float:
    busy, own, theirs = since
    return (machine_busy() - busy) - (own_cpu() - own) - (measured() - theirs)


def _mark(measured: Callable[[], float]) -> tuple[float, float, float]:
    return machine_busy(), own_cpu(), measured()


def wait_until_quiet(measured: Callable[[], float], deadline: float) -> bool:
    while time.monotonic() < deadline:
        start = _mark(measured)
        time.sleep(QUIET_WINDOW)
        if _others(start, measured) <= QUIET_SHARE * QUIET_WINDOW:
            return True
    return False


def timed_when_quiet(fn: Callable[[], T], measured: Callable[[], float] = lambda: 0.0) -> Timed[T]:
    """Wall time of ``fn()`` on a quiet machine. ``measured``: CPU seconds so far of the processes that are part of
    the measurement besides this one (a server and its children), so that their work is not taken for a
    neighbour's."""
    deadline = time.monotonic() + MAX_WAIT
    discarded = 0
    while True:
        quiet = wait_until_quiet(measured, deadline)
        start = _mark(measured)
        t0 = time.perf_counter()
        value = fn()
        seconds = time.perf_counter() - t0
        stayed = _others(start, measured) <= QUIET_SHARE * max(seconds, QUIET_WINDOW)
        if (quiet and stayed) or time.monotonic() >= deadline:
            return Timed(seconds, value, quiet and stayed, discarded)
        discarded += 1
