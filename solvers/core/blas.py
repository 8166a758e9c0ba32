"""One BLAS thread for small algebra, switched cheaply and consistently across threads.

Small matrix work (the observables at a solution; the LAPACK calls that JAX's CPU backend makes
through scipy's OpenBLAS inside a sampler step) is as fast on one BLAS thread, and far faster when
the cores are shared: OpenBLAS's idle threads spin between calls and take the core from the thread
doing the work. Measured on the 2-core reference machine: one chain of the rubin_cavity network
(D = 20, N = 100, MALA) ran a 1500-step block in 1.9 s with BLAS's default threads and 0.93 s with
one; in a forked RQ work horse pinned to one core the same chain took 78 s instead of 5 s. Large
factorisations (a cold spectrum) run outside and keep every thread. threadpoolctl's
context manager re-inspects every library on entry and exit (a quarter of a millisecond, more than
the algebra it wraps at moderate P); here the libraries are found once and only their thread
counts are set. The BLAS pool is process-wide, so overlapping users (request threads) share one
switch: the first one in lowers the count, the last one out restores it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from threading import Lock
from typing import Any

import numpy  # noqa: F401  (loaded first, so that its BLAS is found)
import scipy.linalg  # noqa: F401  (and scipy's)
from threadpoolctl import ThreadpoolController


@cache
def _libraries() -> tuple[Any, ...]:
    return tuple(ThreadpoolController().select(user_api="blas").lib_controllers)


class _Switch:
    def __init__(self) -> None:
        self._lock = Lock()
        self._users = 0
        self._saved: list[tuple[Any, int]] = []

    def enter(self) -> None:
        with self._lock:
            if self._users == 0:
                self._saved = [(lib, lib.num_threads) for lib in _libraries()]
                for lib, n in self._saved:
                    if n != 1:
                        lib.set_num_threads(1)
            self._users += 1

    def leave(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0:
                for lib, n in self._saved:
                    if n != 1:
                        lib.set_num_threads(n)
                self._saved = []


_SWITCH = _Switch()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    _SWITCH.enter()
    try:
        yield
    finally:
        _SWITCH.leave()
