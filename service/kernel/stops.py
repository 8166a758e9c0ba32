"""How a unit of work stops before its end, on every backend: cancelled, or handed back by a stopping worker.

- **Cancellation**: a unit asks ``should_stop`` at every step (a point, a continuation step, a block of draws);
  True raises :class:`Cancelled`. On RQ, :func:`stop_poll` reads the computation's status at most every
  ``CANCEL_POLL`` seconds.
- **SIGTERM hand-back**: a worker asked to stop sets :data:`HANDOFF` in its work horse (SIGUSR1,
  :mod:`service.worker`); the unit raises :class:`HandedOff` at its next step and goes back to the queue.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import redis

from service.kernel.records import text
from service.redis_link import UNREACHABLE

#: Seconds between two checks of the cancel flag while a unit computes.
CANCEL_POLL = 0.25


class Cancelled(Exception):
    """Raised inside a unit when its computation was cancelled."""


class HandedOff(Exception):
    """Raised inside a unit when its worker is stopping: the unit goes back to the queue."""


#: Set in a work horse when its worker was asked to stop: the unit is handed back after its current step.
HANDOFF = threading.Event()


def stop_poll(client: redis.Redis, record_key: str, *, tolerate_outage: bool) -> Callable[[], bool]:
    """``should_stop`` for a running unit: raises :class:`HandedOff` when the worker is stopping, else True when
    the computation's status (field ``status`` of ``record_key``) is gone or ``cancelled``, read at most every
    ``CANCEL_POLL`` seconds. ``tolerate_outage``: an unreachable Redis reads as "keep computing" (the unit's
    next write waits for it); otherwise the connection error propagates."""
    last_check = [0.0]

    def should_stop() -> bool:
        if HANDOFF.is_set():
            raise HandedOff()
        now = time.monotonic()
        if now - last_check[0] < CANCEL_POLL:
            return False
        last_check[0] = now
        try:
            st = client.hget(record_key, "status")
        except UNREACHABLE:
            if tolerate_outage:
                return False
            raise
        return st is None or text(st) == "cancelled"

    return should_stop


