"""What a kind of job tells the kernel: how to plan its units of work, run one, and assemble the result.

The kernel (:mod:`service.kernel.rq_backend`, :mod:`service.kernel.local`, :mod:`service.kernel.unit_task`)
does the rest the same way for every kind: ownership, deduplication, the per-key limit, queueing, progress
counts, cancellation, hand-back, hard clocks, reconciliation with RQ, 503s. A *unit* is named by a string
(``"3"``: line 3 of a sweep; ``"0:1"``: chain 1 of point 0 of an experiment); the RQ job carrying it now is the
field ``rq:<unit>`` of the computation's record.

A kind has two faces, one per backend: :class:`RedisKind` (its state in Redis, its units on RQ workers) and
:class:`LocalKind` (its state in the API process's memory, its units on the embedded executor's threads).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from service.kernel.ownership import HoldingKeys
from service.kernel.pages import Page
from service.kernel.records import RedisRecord


@dataclass(frozen=True)
class Pages:
    """The pages of a result one status read asks for: of its points, and of its curves."""

    points: Page
    curves: Page


class RedisKind(Protocol):
    """A kind whose state lives in Redis and whose units run as RQ jobs."""

    #: Its records are ``saddlelab:<name>:<key>``.
    name: str
    #: Where the owners' jobs on its computations are kept.
    holdings: HoldingKeys
    #: The RQ task running one unit, called with (computation key, unit).
    task: str
    #: True: a unit's writes are retried across a Redis outage; False: it fails and RQ retries it.
    rides_outages: bool
    #: Whether a status shows how many units wait ahead of this computation's next one.
    shows_queue_position: bool

    def label(self, unit: str) -> str:
        """The unit in words ("line 3")."""
        ...

    def where(self, unit: str) -> dict[str, Any]:
        """The unit's fields in its execution records."""
        ...

    #: Its store: ``store(client, ttl, retry_seconds)`` reads and writes its computations' records and parts.
    store: Callable[[Any, int, float], RedisRecord]

    def record_fields(self, payload: dict[str, Any]) -> dict[str, Any]:
        """What the computation's record holds beyond the kernel's fields (its sizes, its kind)."""
        ...

    def stale(self, key: str) -> tuple[str, ...]:
        """Keys of an earlier result, dropped when the computation starts again."""
        ...

    def reusable(self, store: Any, key: str) -> bool:
        """A finished computation's result is there and final: a submission shares it."""
        ...

    def plan(self, store: Any, key: str, payload: dict[str, Any]) -> list[str]:
        """The units a (re)started computation runs: what an earlier run stored is kept (none: assemble now)."""
        ...

    def pending(self, store: Any, key: str, meta: dict[str, str]) -> list[str]:
        """Units not completed yet."""
        ...

    def assemble(self, store: Any, key: str, payload: dict[str, Any]) -> None:
        """Store the result when every unit is complete (once, while the computation is active)."""
        ...

    def describe(self, store: Any, key: str, meta: dict[str, str], status: str, detail: bool,
                 pages: Pages) -> dict[str, Any]:
        """The kind's part of a status: progress, the result (or a page of it), partial points."""
        ...

    def run(self, store: Any, client: Any, key: str, unit: str, payload: dict[str, Any], meta: dict[str, str],
            should_stop: Callable[[], bool], who: dict[str, Any]) -> dict[str, Any]:
        """Run (or finish) one unit in a work horse, storing its progress as it goes; its outcome. The last unit
        to complete assembles the result."""
        ...

    def handed_back(self, store: Any, key: str, unit: str) -> dict[str, Any]:
        """What the execution log says of a unit handed back (what it had stored)."""
        ...

    def on_full(self, store: Any, key: str, unit: str, meta: dict[str, str]) -> Callable[[Any], None] | None:
        """What to do when Redis stays full under the unit's writes (free room, record the failure); None: let
        the error propagate."""
        ...


class LocalRun(Protocol):
    """One unit on the embedded executor, as its kind sees it."""

    unit: str
    payload: dict[str, Any]
    state: Any

    def cancelled(self) -> bool:
        """The computation was stopped: what the unit computes now is not part of it."""
        ...

    def stopped(self) -> bool:
        """True when the unit must stop: its computation cancelled, or the unit pre-empted."""
        ...

    def should_stop(self) -> bool:
        """For a unit in a thread: :meth:`stopped`, and past the job timeout raises
        :class:`service.kernel.local.Stop`."""
        ...

    def fail(self, reason: str) -> None:
        """End the computation as failed now (its unit stops at its next look); never called holding a lock
        that a status read takes."""
        ...


class LocalKind(Protocol):
    """A kind whose state lives in the API process and whose units run on the embedded executor."""

    #: Whether a status shows the position of the computation's next unit in the queue.
    shows_queue_position: bool

    def label(self, unit: str) -> str: ...

    def where(self, unit: str) -> dict[str, Any]:
        """The unit's fields in its execution records."""
        ...

    def open(self, payload: dict[str, Any], state: Any) -> Any:
        """The state of a computation (re)started: ``state`` is what an earlier run left (None: new)."""
        ...

    def reusable(self, state: Any) -> bool:
        """A finished computation's result is final: a submission shares it."""
        ...

    def plan(self, state: Any) -> list[str]:
        """The units still to run (none: assemble now)."""
        ...

    def stored(self, state: Any, unit: str) -> int:
        """What a unit has stored (points, draws), for the execution log."""
        ...

    def run(self, run: LocalRun, seconds: float, memory_bytes: int | None) -> dict[str, Any]:
        """Run (or finish) one unit, keeping its outcome and recording its start and completion; its outcome.
        Stopping early raises (:class:`service.kernel.local.Stop`, :class:`~service.kernel.stops.Cancelled`, or
        the isolation's :class:`~service.isolation.ChildKilled`)."""
        ...

    def done(self, state: Any, unit: str, outcome: dict[str, Any]) -> None:
        """Keep the outcome of a unit that completed as part of the current run of its computation."""
        ...

    def assemble(self, state: Any) -> str | None:
        """Assemble the result once every unit completed; why not (the computation then fails), or None."""
        ...

    def forget(self, state: Any) -> None:
        """Drop what a computation stored (it expired)."""
        ...

    def describe(self, state: Any, status: str, detail: bool, pages: Pages) -> dict[str, Any]: ...

    def record(self, state: Any, entry: dict[str, Any]) -> None:
        """Append to the computation's execution log."""
        ...

    def executions(self, state: Any) -> list[dict[str, Any]]: ...
