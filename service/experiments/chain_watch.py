"""The hard end of a chain's time: a sampling call still running ``grace`` seconds past the deadline is abandoned.

The chain's clock (:class:`solvers.experiments.clock.ChainClock`) sizes every compiled call to end before the
deadline; what it cannot bound is one unit of work itself (a draw of ``thin`` steps, a step slower than the
last measured ones). So each call runs on a thread of its own, and the chain waits for it until the deadline
plus the grace: past that, :class:`ChainOverran` is raised, the chain reports the draws it stored as
``time_limit``, and the call's result, whenever it comes, is dropped.

A thread cannot be killed. On the RQ backend the chain runs in a work horse, which exits when its job returns,
and the abandoned call ends with it. In the embedded executor (the API process's threads) an abandoned call runs
on until its compiled code returns, with nobody waiting for it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


class ChainOverran(Exception):
    """A sampling call outlived its chain's deadline by more than the grace; it was abandoned."""


def watched(deadline: float | None, grace: float) -> Callable[..., Any]:
    """``call(fn, *args)``: ``fn(*args)``, abandoned (:class:`ChainOverran`) at ``deadline + grace``
    (``time.monotonic`` seconds; None: never)."""

    def call(fn: Callable[..., Any], *args: Any) -> Any:
        if deadline is None:
            return fn(*args)
        box: dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                box["value"] = fn(*args)
            except BaseException as exc:  # handed to the waiting chain, which raises it
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=run, daemon=True, name="saddlelab-chain-call").start()
        if not done.wait(max(0.0, deadline + grace - time.monotonic())):
            raise ChainOverran(f"a sampling call was still running {grace:g} s past the chain's time limit")
        if "error" in box:
            raise box["error"]
        return box["value"]

    return call
