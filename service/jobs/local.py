"""In-process job executor, used when no Redis is configured.

The :class:`~service.jobs.backend.JobBackend` of the embedded default, as the RQ backend
(:mod:`service.jobs.rq_backend`): submit (one computation per sweep, one job per owner, bounded
per owner), status with progress, queue position and result pages, cancel. Nothing survives a
restart of the process: that is what the Redis backend is for.

- **Killable lines.** Each line runs in a child process (:mod:`service.isolation`) with the
  instance's memory cap, killed when it exceeds ``job_timeout`` (the computation then fails with
  that reason) or when its computation is cancelled. Its points come back as they are computed
  (gathered for at most ``SEND_EVERY`` = 50 ms), so the status shows progress (and, on request,
  the points so far) and a stopped line resumes from them. (With ``solve_processes = 0`` lines run
  in threads of the API process and the timeout is checked between points.)
- **Fair slots.** ``local_workers`` lines run at once. A free slot goes to the owner (API key) with
  the fewest lines running, oldest submission first among equals; and when an owner has no line
  running while another holds two or more slots, the latter's most recent line is stopped and put
  back at the head of its queue (it resumes from its stored points), so one key cannot hold every
  slot while another waits.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from service.isolation import ChildDied, ChildFailed, ChildKilled, ChildOutOfMemory, run_child
from service.jobs.backend import Page, RawJSON, job_kind, line_count, line_total, with_points
from service.jobs.lines import (
    expected_points,
    fixed_for_row,
    job_curves,
    job_summary,
    line_outcome,
    run_line,
    tag_point,
)
from service.kernel import stored_bytes
from service.kernel.ownership import ACTIVE, JobLimitExceeded, owner_tag, public_id
from service.kernel.stops import Cancelled
from service.secrets import InstanceSecret
from service.serialize import dumps, point_text
from service.settings import Settings

log = logging.getLogger("saddlelab.jobs")


#: Seconds a line's process gathers its points before sending them on together: one message (one wake-up of the
#: receiving thread) per batch instead of per point; a line stopped meanwhile recomputes at most these points.
SEND_EVERY = 0.05
#: Seconds the executor's shutdown waits for its running lines to stop.
SHUTDOWN_GRACE = 5.0


def _line_in_child(send: Any, payload: dict[str, Any], line: int, stored: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """A line in its own process: its points go back as lists of (index, JSON text), every SEND_EVERY seconds."""
    batch: list[tuple[int, str]] = []
    last = [time.monotonic()]

    def take(i: int, pt: dict[str, Any]) -> None:
        batch.append((i, point_text(tag_point(payload, line, pt))))
        now = time.monotonic()
        if now - last[0] >= SEND_EVERY:
            send(batch[:])
            batch.clear()
            last[0] = now

    try:
        out = run_line(payload, fixed=fixed_for_row(payload, line), stored=stored, on_point=take)
    finally:
        if batch:
            send(batch)
    return line_outcome(out)


class _Stop(Exception):
    """An in-process line stopped: ``reason`` is "deadline" or "stopped"."""

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
class _Run:
    key: str
    line: int
    owner: str
    seq: int
    started: float
    cancel: threading.Event  # the computation's, when this run started (a restart gets a new one)
    preempt: bool = False


@dataclass
class _Computation:
    payload: dict[str, Any]
    lead: str  # the owner whose share of the slots its lines count against
    owners: set[str]
    created: float = field(default_factory=time.time)
    status: str = "queued"
    error: str | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    points: list[dict[int, str]] = field(default_factory=list)
    outcomes: dict[int, dict[str, Any]] = field(default_factory=dict)
    summary: str | None = None
    result_points: list[str] | None = None
    result_curves: list[str] | None = None
    log: list[dict[str, Any]] = field(default_factory=list)
    bytes: int = 0  # of the point texts stored
    updated: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        if not self.points:
            self.points = [{} for _ in range(line_count(self.payload))]

    @property
    def lines(self) -> int:
        return len(self.points)

    @property
    def stored(self) -> int:
        return sum(len(p) for p in self.points)


@dataclass(frozen=True)
class _Queued:
    seq: int
    key: str
    line: int


class LocalJobs:
    kind = "local"

    def __init__(self, workers: int = 2, secret: InstanceSecret | None = None, settings: Settings | None = None):
        self.settings = settings or Settings(redis_url=None)
        self.secret = secret or InstanceSecret(None, None)
        self.slots = max(1, workers)
        self._comps: dict[str, _Computation] = {}
        self._handles: dict[str, _Handle] = {}
        self._pending: list[_Queued] = []
        self._running: dict[tuple[str, int], _Run] = {}
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
            comp = self._comps.get(key)
            handle = self._handles.get(job_id)
            shared = comp is not None and (comp.status in ACTIVE or comp.status == "finished")
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
                comp = self._comps[key] = _Computation(payload, tag, {tag})
            else:  # failed or cancelled before: start again, keeping every point and line already computed
                comp.status, comp.error, comp.cancel, comp.lead = "queued", None, threading.Event(), tag
                comp.owners.add(tag)
                comp.updated = time.time()
            for line in range(comp.lines):
                if line not in comp.outcomes:
                    self._pending.append(_Queued(next(self._seq), key, line))
            if len(comp.outcomes) == comp.lines:
                self._assemble(comp)
            self._dispatch()
        return job_id, False

    def _prune(self) -> None:
        """Forget ended computations older than ``result_ttl`` (and the jobs on them)."""
        horizon = time.time() - self.settings.result_ttl
        old = [k for k, c in self._comps.items() if c.status not in ACTIVE and c.updated < horizon]
        for k in old:
            del self._comps[k]
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
        """The queued lines in the order they would start: each next slot to the owner with the fewest lines
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
        """Fill free slots fairly; stop a line of an owner holding several slots while another owner waits."""
        if self._closed:
            return
        while len(self._running) < self.slots and self._pending:
            q = self._order()[0]
            self._pending.remove(q)
            comp = self._comps[q.key]
            run = _Run(q.key, q.line, comp.lead, q.seq, time.monotonic(), comp.cancel)
            self._running[(q.key, q.line)] = run
            comp.status = "running"
            threading.Thread(target=self._run_line, args=(run,), daemon=True,
                             name=f"saddlelab-line-{q.key[:8]}-{q.line}").start()
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

    # ---- one line ---------------------------------------------------------------------------
    def _points(self, comp: _Computation, run: _Run, points: list[tuple[int, str]]) -> None:
        with self._lock:
            if run.cancel.is_set():
                return  # computed after the computation was stopped: not part of it
            line = comp.points[run.line]
            try:
                for index, text in points:
                    if int(index) in line:
                        continue
                    line[int(index)] = text
                    comp.bytes += len(text)
                    stored_bytes.check(float(comp.payload.get("stored_bytes_limit") or 0), comp.bytes,
                                       len(text) if comp.bytes == len(text) else None, line_total(comp.payload))
            except stored_bytes.StoredBytesExceeded as exc:
                self._end(comp, "failed", str(exc))
                comp.points, comp.bytes = [{} for _ in range(comp.lines)], 0
                self._dispatch()

    def _run_line(self, run: _Run) -> None:
        comp = self._comps[run.key]
        with self._lock:
            stored = {i: json.loads(t) for i, t in comp.points[run.line].items()}
            comp.log.append({"time": time.time(), "line": run.line, "event": "started", "stored": len(stored)})
        timeout = float(self.settings.job_timeout)

        def should_stop() -> bool:
            return run.cancel.is_set() or run.preempt

        outcome: dict[str, Any] | None = None
        failure: str | None = None
        event = "completed"
        try:
            if self.settings.solve_processes > 0:
                outcome = run_child(_line_in_child, (comp.payload, run.line, stored), seconds=timeout,
                                    memory_bytes=self.settings.max_solve_memory_bytes or None,
                                    on_message=lambda m: self._points(comp, run, m), should_stop=should_stop)
            else:
                outcome = self._line_here(comp, run, stored, timeout, should_stop)
        except (ChildKilled, _Stop) as exc:
            if exc.reason == "deadline":
                event, failure = "failed", f"line {run.line} exceeded the job timeout of {timeout:g} s (job_timeout)"
            else:
                event = "preempted" if run.preempt and not run.cancel.is_set() else "cancelled"
        except ChildOutOfMemory as exc:
            event, failure = "failed", (f"line {run.line} needed more memory than the limit max_solve_memory_bytes="
                                        f"{self.settings.max_solve_memory_bytes} of this instance ({exc})")
        except ChildFailed as exc:
            log.error("line %s of job %s failed: %s\n%s", run.line, run.key, exc, exc.remote_traceback)
            event, failure = "failed", f"line {run.line}: {exc}"
        except ChildDied as exc:
            event, failure = "failed", f"line {run.line}: {exc}"
        except Exception as exc:  # an in-process line that raises fails its job, with the reason
            log.exception("line %s of job %s failed", run.line, run.key)
            event, failure = "failed", f"line {run.line}: {type(exc).__name__}: {exc}"
        with self._lock:
            if self._running.get((run.key, run.line)) is run:
                del self._running[(run.key, run.line)]
            entry: dict[str, Any] = {"time": time.time(), "line": run.line, "event": event,
                                     "stored": len(comp.points[run.line])}
            if failure:
                entry["error"] = failure
            comp.log.append(entry)
            current = not run.cancel.is_set()  # not a run of an earlier, stopped execution of the computation
            if event == "preempted":
                self._pending.append(_Queued(run.seq, run.key, run.line))  # its old place: first in its queue
            elif failure is not None and current and comp.status in ACTIVE:
                self._end(comp, "failed", failure)
            elif outcome is not None and current and comp.status in ACTIVE:
                comp.outcomes[run.line] = outcome
                if len(comp.outcomes) == comp.lines:
                    self._assemble(comp)
            self._dispatch()

    def _line_here(self, comp: _Computation, run: _Run, stored: dict[int, dict[str, Any]], timeout: float,
                   should_stop: Any) -> dict[str, Any]:
        start = time.monotonic()

        def check() -> bool:
            if time.monotonic() - start > timeout:
                raise _Stop("deadline")
            if should_stop():
                raise _Stop("stopped")
            return False

        try:
            out = run_line(comp.payload, fixed=fixed_for_row(comp.payload, run.line), stored=stored,
                           on_point=lambda i, pt: self._points(
                               comp, run, [(i, point_text(tag_point(comp.payload, run.line, pt)))]),
                           should_stop=check)
        except Cancelled:
            raise _Stop("stopped") from None
        return line_outcome(out)

    def _end(self, comp: _Computation, status: str, error: str | None = None) -> None:
        """Fail or cancel a computation: its queued lines are dropped, its running lines stopped."""
        comp.status, comp.error, comp.updated = status, error, time.time()
        comp.cancel.set()
        self._pending = [q for q in self._pending if q.key != comp.payload["key"]]
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

    def _assemble(self, comp: _Computation) -> None:
        payload = comp.payload
        expected = expected_points(payload)
        for line, pts in enumerate(comp.points):
            if sorted(pts) != list(range(expected)):
                self._end(comp, "failed", f"line {line} completed with {len(pts)} of {expected} points stored")
                return
        outcomes = [comp.outcomes[c] for c in range(comp.lines)]
        summary = job_summary(payload, outcomes)
        curves = job_curves(payload, outcomes)
        comp.summary = dumps(summary)
        comp.result_points = [pts[i] for pts in comp.points for i in range(expected)]
        comp.result_curves = None if curves is None else [dumps(c) for c in curves]
        for outcome in outcomes:
            outcome.pop("curves", None)  # the result holds them now
        comp.points = [{} for _ in range(comp.lines)]  # the result holds them now
        comp.status, comp.updated = "finished", time.time()
        self._ended()

    # ---- status -----------------------------------------------------------------------------
    #: :meth:`ended` reads memory without a lock: a held request may ask it on the event loop.
    ended_in_memory = True

    def ended(self, job_id: str, owner: str | None = None) -> bool:
        """Whether the owner's job has ended (or is not the owner's), read without the lock: a waiting status
        request asks it every few tens of milliseconds from the event loop; a stale answer only delays the
        request to its next look."""
        handle = self._handles.get(job_id)
        if handle is None or handle.owner != owner_tag(owner, self.secret):
            return True
        comp = self._comps.get(handle.key)
        return comp is None or handle.cancelled or comp.status not in ACTIVE

    def status(self, job_id: str, owner: str | None = None, detail: bool = False,
               page: Page | None = None, curve_page: Page | None = None) -> dict[str, Any] | None:
        page = page or Page(0, self.settings.result_page_size, self.settings.result_page_bytes)
        curve_page = curve_page or Page(0, self.settings.result_page_curves, self.settings.result_page_bytes)
        with self._lock:
            handle = self._handles.get(job_id)
            if handle is None or handle.owner != owner_tag(owner, self.secret):
                return None
            comp = self._comps.get(handle.key)
            if comp is None:
                return None
            status = "cancelled" if handle.cancelled else comp.status
            payload = comp.payload
            total = line_total(payload)
            out: dict[str, Any] = {
                "job_id": job_id,
                "status": status,
                "kind": job_kind(payload),
                "parameters": list(payload["parameters"]),
                "method": payload["method"],
                "backend": self.kind,
                "created": handle.created,
                "result": None,
                "error": comp.error,
                "queue_position": None,
                "chunks": {"done": len(comp.outcomes), "total": comp.lines},
            }
            if status == "finished" and comp.summary is not None and comp.result_points is not None:
                points = page.take(comp.result_points)
                curves = None
                if comp.result_curves is not None:
                    curves = curve_page.take(comp.result_curves)
                    out["curve_page"] = curve_page.describe(len(comp.result_curves), len(curves), "result.curves")
                out["result"] = with_points(comp.summary, points, curves)
                out["page"] = page.describe(len(comp.result_points), len(points), "result.points")
                out["progress"] = {"done": total, "total": total}
            else:
                out["progress"] = {"done": comp.stored, "total": total}
                if status in ACTIVE:
                    order = [q.key for q in self._order()]
                    out["queue_position"] = order.index(handle.key) if handle.key in order else None
                if detail:
                    texts = [pts[i] for pts in comp.points for i in sorted(pts)]
                    chosen = page.take(texts)
                    out["partial"] = RawJSON('{"points":[' + ",".join(chosen) + "]}")
                    out["page"] = page.describe(len(texts), len(chosen), "partial.points")
            if detail:
                out["executions"] = [dict(e) for e in comp.log]
            return out

    # ---- cancel -----------------------------------------------------------------------------
    def cancel(self, job_id: str, owner: str | None = None) -> bool:
        with self._lock:
            handle = self._handles.get(job_id)
            if handle is None or handle.owner != owner_tag(owner, self.secret):
                return False
            comp = self._comps.get(handle.key)
            if comp is None:
                return False
            if comp.status not in ACTIVE:
                return True  # finished, failed or cancelled: nothing changes
            handle.cancelled = True
            self._ended()
            comp.owners.discard(handle.owner)
            if not comp.owners:
                comp.log.append({"time": time.time(), "event": "cancel_requested"})
                self._end(comp, "cancelled")
            elif comp.lead == handle.owner:
                comp.lead = min(comp.owners)  # its lines now count against a key that still wants them
            self._dispatch()
            return True

    def shutdown(self) -> None:
        """Stop every line: each one's process is killed at its next look at the cancel flag (a quarter second);
        wait up to ``SHUTDOWN_GRACE`` seconds for that (a process still there then dies with the API's fork
        server: :func:`service.isolation.die_with_parent`)."""
        with self._lock:
            self._closed = True
            self._pending.clear()
            for comp in self._comps.values():
                comp.cancel.set()
        deadline = time.monotonic() + SHUTDOWN_GRACE
        while self._running and time.monotonic() < deadline:
            time.sleep(0.05)
