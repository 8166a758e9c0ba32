"""The embedded executor of every kind of job (no ``REDIS_URL``): the same API as the RQ backend, in memory.

Submit (one computation per key of what it computes, one job per owner on it, bounded per owner), status with
progress, queue position and result pages, cancel, held requests woken when a job ends. Nothing survives a
restart of the process: that is what the RQ backend (:mod:`service.kernel.rq_backend`) is for. What a unit is,
how it runs and how the result is assembled is its kind's (:class:`~service.kernel.kind.LocalKind`).

- **Killable units.** A kind may run each unit in a child process (:mod:`service.isolation`) with the
  instance's memory cap, killed when it exceeds ``job_timeout`` (the computation then fails with that reason) or
  when its computation is cancelled; or in a thread of the API process (a unit asks ``should_stop`` at every
  step, which also says when its clock has run out).
- **Fair slots.** ``local_workers`` units run at once. A free slot goes to the owner (API key) with the fewest
  units running, oldest submission first among equals; and when an owner has no unit running while another holds
  two or more slots, the latter's most recent unit is stopped and put back at the head of its queue (it resumes
  from what it stored), so one key cannot hold every slot while another waits.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from service.isolation import ChildDied, ChildFailed, ChildKilled, ChildOutOfMemory
from service.kernel.kind import LocalKind, Pages
from service.kernel.ownership import ACTIVE, JobLimitExceeded, owner_tag, public_id
from service.kernel.pages import Page
from service.kernel.stops import Cancelled
from service.secrets import InstanceSecret
from service.settings import Settings

log = logging.getLogger("saddlelab.jobs")

#: Seconds the executor's shutdown waits for its running units to stop.
SHUTDOWN_GRACE = 5.0


class Stop(Exception):
    """A unit running in a thread stopped: ``reason`` is "deadline" or "stopped"."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


@dataclass
class _Handle:
    key: str
    owner: str
    created: float
    cancelled: bool = False


@dataclass
class _Computation:
    payload: dict[str, Any]
    lead: str  # the owner whose share of the slots its units count against
    owners: set[str]
    state: Any
    created: float = field(default_factory=time.time)
    status: str = "queued"
    error: str | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    updated: float = field(default_factory=time.time)


@dataclass
class _Run:
    """One unit running, as the kind sees it (:class:`~service.kernel.kind.LocalRun`)."""

    key: str
    unit: str
    owner: str
    seq: int
    started: float
    cancel: threading.Event  # the computation's, when this run started (a restart gets a new one)
    comp: _Computation
    end: Callable[[_Computation, str], None]
    timeout: float
    preempt: bool = False

    @property
    def payload(self) -> dict[str, Any]:
        return self.comp.payload

    @property
    def state(self) -> Any:
        return self.comp.state

    def cancelled(self) -> bool:
        """The computation this run belongs to was stopped (cancelled, failed): what the unit computes now is
        not part of it."""
        return self.cancel.is_set()

    def stopped(self) -> bool:
        """Cancelled or pre-empted."""
        return self.cancel.is_set() or self.preempt

    def should_stop(self) -> bool:
        """For a unit in a thread: raises :class:`Stop` past the job timeout, else :meth:`stopped`."""
        if time.monotonic() - self.started > self.timeout:
            raise Stop("deadline")
        return self.stopped()

    def fail(self, reason: str) -> None:
        self.end(self.comp, reason)


@dataclass(frozen=True)
class _Queued:
    seq: int
    key: str
    unit: str


class LocalBackend:
    """Jobs of one kind on the API process's own slots; the backend of the embedded default."""

    backend = "local"
    #: :meth:`ended` reads memory without a lock: a held request may ask it on the event loop.
    ended_in_memory = True

    def __init__(self, kind: LocalKind, workers: int = 2, secret: InstanceSecret | None = None,
                 settings: Settings | None = None):
        self.kind = kind
        self.settings = settings or Settings(redis_url=None)
        self.secret = secret or InstanceSecret(None, None)
        self.slots = max(1, workers)
        self._comps: dict[str, _Computation] = {}
        self._handles: dict[str, _Handle] = {}
        self._pending: list[_Queued] = []
        self._running: dict[tuple[str, str], _Run] = {}
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._closed = False
        self._end_callbacks: set[Callable[[], None]] = set()

    # ---- submit -----------------------------------------------------------------------------
    def submit(self, payload: dict[str, Any], owner: str | None = None, limit: int = 0) -> tuple[str, bool]:
        """The owner's job on the computation of ``payload``: (job id, deduplicated = nothing new started)."""
        key = payload["key"]
        tag = owner_tag(owner, self.secret)
        job_id = public_id(tag, key, self.secret)
        with self._lock:
            self._prune()
            self._closed = False  # an app shut down and serving again (an ASGI lifespan per client session)
            comp = self._comps.get(key)
            handle = self._handles.get(job_id)
            shared = comp is not None and (comp.status in ACTIVE
                                           or (comp.status == "finished" and self.kind.reusable(comp.state)))
            if shared and handle is not None and not handle.cancelled and tag in comp.owners:  # type: ignore[union-attr]
                return job_id, True
            if not shared and limit and self._active(tag) >= limit:
                raise JobLimitExceeded(limit)
            if handle is None:
                self._handles[job_id] = _Handle(key, tag, time.time())
            else:
                handle.cancelled = False
            if shared:
                comp.owners.add(tag)  # type: ignore[union-attr]
                return job_id, True
            if comp is None:
                comp = self._comps[key] = _Computation(payload, tag, {tag}, self.kind.open(payload, None))
            else:  # ended before: start again, keeping every unit already computed
                comp.status, comp.error, comp.cancel, comp.lead = "queued", None, threading.Event(), tag
                comp.state = self.kind.open(payload, comp.state)
                comp.owners.add(tag)
                comp.updated = time.time()
            units = self.kind.plan(comp.state)
            for unit in units:
                self._pending.append(_Queued(next(self._seq), key, unit))
            if not units:
                self._assemble(comp)
            self._dispatch()
        return job_id, False

    def _prune(self) -> None:
        """Forget ended computations older than ``result_ttl`` (and the jobs on them)."""
        horizon = time.time() - self.settings.result_ttl
        old = [k for k, c in self._comps.items() if c.status not in ACTIVE and c.updated < horizon]
        for k in old:
            self.kind.forget(self._comps.pop(k).state)
        if old:
            gone = set(old)
            for job_id in [j for j, h in self._handles.items() if h.key in gone]:
                del self._handles[job_id]

    def _active(self, tag: str) -> int:
        return sum(1 for h in self._handles.values()
                   if h.owner == tag and not h.cancelled and self._comps.get(h.key) is not None
                   and self._comps[h.key].status in ACTIVE)

    def active_for(self, owner: str | None) -> int:
        with self._lock:
            return self._active(owner_tag(owner, self.secret))

    # ---- scheduling -------------------------------------------------------------------------
    def _order(self) -> list[_Queued]:
        """The queued units in the order they would start: each next slot to the owner with the fewest units
        running (counting those placed before it), oldest first among equals."""
        running = Counter(run.owner for run in self._running.values())
        queues: dict[str, deque[_Queued]] = {}
        for q in sorted(self._pending, key=lambda q: q.seq):
            queues.setdefault(self._comps[q.key].lead, deque()).append(q)
        out: list[_Queued] = []
        while queues:
            owner = min(queues, key=lambda o: (running[o], queues[o][0].seq))
            out.append(queues[owner].popleft())
            running[owner] += 1
            if not queues[owner]:
                del queues[owner]
        return out

    def _dispatch(self) -> None:
        """Fill free slots fairly; stop a unit of an owner holding several slots while another owner waits."""
        if self._closed:
            return
        while len(self._running) < self.slots and self._pending:
            q = self._order()[0]
            self._pending.remove(q)
            comp = self._comps[q.key]
            run = _Run(q.key, q.unit, comp.lead, q.seq, time.monotonic(), comp.cancel, comp, self._fail,
                       float(self.settings.job_timeout))
            self._running[(q.key, q.unit)] = run
            comp.status = "running"
            threading.Thread(target=self._run_unit, args=(run,), daemon=True,
                             name=f"saddlelab-unit-{q.key[:8]}-{q.unit}").start()
        if len(self._running) < self.slots or not self._pending:
            return
        running = Counter(run.owner for run in self._running.values() if not run.preempt)
        waiting = {self._comps[q.key].lead for q in self._pending}
        if not any(running[o] == 0 for o in waiting):
            return
        heavy = max(running, key=lambda o: running[o], default=None)
        if heavy is None or running[heavy] < 2:
            return
        victim = max((r for r in self._running.values() if r.owner == heavy and not r.preempt),
                     key=lambda r: r.started)
        victim.preempt = True

    # ---- one unit ---------------------------------------------------------------------------
    def _run_unit(self, run: _Run) -> None:
        comp, label = run.comp, self.kind.label(run.unit)
        memory = self.settings.max_solve_memory_bytes or None
        outcome: dict[str, Any] | None = None
        failure: str | None = None
        event = "completed"
        try:
            outcome = self.kind.run(run, run.timeout, memory)
        except (ChildKilled, Stop) as exc:
            if exc.reason == "deadline":
                event, failure = "failed", f"{label} exceeded the job timeout of {run.timeout:g} s (job_timeout)"
            else:
                event = "preempted" if run.preempt and not run.cancel.is_set() else "cancelled"
        except Cancelled:
            event = "preempted" if run.preempt and not run.cancel.is_set() else "cancelled"
        except ChildOutOfMemory as exc:
            event, failure = "failed", (f"{label} needed more memory than the limit max_solve_memory_bytes="
                                        f"{self.settings.max_solve_memory_bytes} of this instance ({exc})")
        except ChildFailed as exc:
            log.error("%s of job %s failed: %s\n%s", label, run.key, exc, exc.remote_traceback)
            event, failure = "failed", f"{label}: {exc}"
        except ChildDied as exc:
            event, failure = "failed", f"{label}: {exc}"
        except Exception as exc:  # a unit that raises fails its job, with the reason
            log.exception("%s of job %s failed", label, run.key)
            event, failure = "failed", f"{label}: {type(exc).__name__}: {exc}"
        with self._lock:
            if self._running.get((run.key, run.unit)) is run:
                del self._running[(run.key, run.unit)]
            if event != "completed":
                entry: dict[str, Any] = {"time": time.time(), **self.kind.where(run.unit), "event": event,
                                         "stored": self.kind.stored(comp.state, run.unit)}
                if failure:
                    entry["error"] = failure
                self.kind.record(comp.state, entry)
            current = not run.cancel.is_set()  # not a run of an earlier, stopped execution of the computation
            if event == "preempted":
                self._pending.append(_Queued(run.seq, run.key, run.unit))  # its old place: first in its queue
            elif failure is not None and current and comp.status in ACTIVE:
                self._end(comp, "failed", failure)
            elif outcome is not None and current and comp.status in ACTIVE:
                self.kind.done(comp.state, run.unit, outcome)
                if not any(q.key == run.key for q in self._pending) and not any(
                        r.key == run.key for r in self._running.values()):
                    self._assemble(comp)
            self._dispatch()

    def _fail(self, comp: _Computation, reason: str) -> None:
        """A running unit fails its computation (from the unit's thread, holding none of the kind's locks)."""
        with self._lock:
            if comp.status in ACTIVE:
                self._end(comp, "failed", reason)
                self._dispatch()

    def _end(self, comp: _Computation, status: str, error: str | None = None) -> None:
        """Fail or cancel a computation: its queued units are dropped, its running units stopped."""
        comp.status, comp.error, comp.updated = status, error, time.time()
        comp.cancel.set()
        self._pending = [q for q in self._pending if q.key != comp.payload["key"]]
        self._ended()

    def _assemble(self, comp: _Computation) -> None:
        reason = self.kind.assemble(comp.state)
        if reason is not None:
            self._end(comp, "failed", reason)
            return
        comp.status, comp.updated = "finished", time.time()
        self._ended()

    def on_end(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (from any thread, so it must only schedule work) whenever a job ends; returns the
        function that stops it. A held status request wakes from it instead of looking at its job every few ms."""
        with self._lock:
            self._end_callbacks.add(callback)

        def stop() -> None:
            with self._lock:
                self._end_callbacks.discard(callback)
        return stop

    def _ended(self) -> None:
        for callback in list(self._end_callbacks):
            callback()

    # ---- status -----------------------------------------------------------------------------
    def ended(self, job_id: str, owner: str | None = None) -> bool:
        """Whether the owner's job has ended (or is not the owner's), read without the lock: a waiting status
        request asks it every few tens of milliseconds from the event loop; a stale answer only delays the
        request to its next look."""
        handle = self._handles.get(job_id)
        if handle is None or handle.owner != owner_tag(owner, self.secret):
            return True
        comp = self._comps.get(handle.key)
        return comp is None or handle.cancelled or comp.status not in ACTIVE

    def _held(self, job_id: str, owner: str | None) -> tuple[_Handle, _Computation] | None:
        handle = self._handles.get(job_id)
        if handle is None or handle.owner != owner_tag(owner, self.secret):
            return None
        comp = self._comps.get(handle.key)
        return None if comp is None else (handle, comp)

    def status(self, job_id: str, owner: str | None = None, detail: bool = False,
               page: Page | None = None, curve_page: Page | None = None) -> dict[str, Any] | None:
        """The job's state as its owner sees it; None when ``owner`` holds no job ``job_id``."""
        settings = self.settings
        pages = Pages(page or Page(0, settings.result_page_size, settings.result_page_bytes),
                      curve_page or Page(0, settings.result_page_curves, settings.result_page_bytes))
        with self._lock:
            held = self._held(job_id, owner)
            if held is None:
                return None
            handle, comp = held
            status = "cancelled" if handle.cancelled else comp.status
            out: dict[str, Any] = {"job_id": job_id, "status": status, "backend": self.backend,
                                   "created": handle.created, "result": None, "error": comp.error}
            out.update(self.kind.describe(comp.state, status, detail, pages))
            if self.kind.shows_queue_position:
                out["queue_position"] = None
                if status in ACTIVE:
                    order = [q.key for q in self._order()]
                    out["queue_position"] = order.index(handle.key) if handle.key in order else None
            if detail:
                out["executions"] = self.kind.executions(comp.state)
            return out

    def read(self, job_id: str, owner: str | None, part: Callable[[Any, str], Any]) -> Any:
        """``part(state, key)`` of the owner's job (one the owner has not cancelled); None when there is none."""
        with self._lock:
            held = self._held(job_id, owner)
            if held is None or held[0].cancelled:
                return None
            state = held[1].state
        return part(state, held[0].key)

    # ---- cancel -----------------------------------------------------------------------------
    def cancel(self, job_id: str, owner: str | None = None) -> bool:
        """Withdraw the owner's interest (the computation stops when nobody else wants it); False: no such job."""
        with self._lock:
            held = self._held(job_id, owner)
            if held is None:
                return False
            handle, comp = held
            if comp.status not in ACTIVE:
                return True  # finished, failed or cancelled: nothing changes
            handle.cancelled = True
            self._ended()
            comp.owners.discard(handle.owner)
            if not comp.owners:
                self.kind.record(comp.state, {"time": time.time(), "event": "cancel_requested"})
                self._end(comp, "cancelled")
            elif comp.lead == handle.owner:
                comp.lead = min(comp.owners)  # its units now count against a key that still wants them
            self._dispatch()
            return True

    def shutdown(self) -> None:
        """Stop every unit: a child process is killed at its next look at the cancel flag (a quarter second), a
        thread stops at its next step; wait up to ``SHUTDOWN_GRACE`` seconds for that (a process still there then
        dies with the API's fork server: :func:`service.isolation.die_with_parent`). Stopped computations read
        ``cancelled``; submitted again, they resume from what they stored."""
        with self._lock:
            self._closed = True
            self._pending.clear()
            for comp in self._comps.values():
                comp.cancel.set()
                if comp.status in ACTIVE:
                    comp.status, comp.updated = "cancelled", time.time()
        deadline = time.monotonic() + SHUTDOWN_GRACE
        while self._running and time.monotonic() < deadline:
            time.sleep(0.05)
