"""Sweep lines as a kind of job on the embedded executor (:mod:`service.kernel.local`): state in memory.

A line runs in a child process (:mod:`service.isolation`: killable, memory-capped) whose points come back as they
are computed, gathered for at most ``SEND_EVERY`` = 50 ms, so the status shows progress (and, on request, the
points so far) and a stopped line resumes from them. With ``solve_processes = 0`` a line runs in a thread of the
API process and the job timeout is checked between points. Each point's text is checked against the contract
(``PointOut``) as it is stored, here, while the line computes the next ones, so that a response splices the stored
points in without validating them again; a point that fails the check is a bug and fails its job. Each stored
point's text is counted against the job's byte limit (:mod:`service.kernel.stored_bytes`); past it, the
computation fails and its points are dropped.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter, ValidationError

from service.isolation import run_child
from service.jobs.lines import (
    expected_points,
    fixed_for_row,
    job_curves,
    job_summary,
    line_outcome,
    run_line,
    tag_point,
)
from service.jobs.shape import LineUnits, job_kind, line_count, line_total
from service.kernel import stored_bytes
from service.kernel.kind import LocalRun, Pages
from service.kernel.pages import partial_points, with_points
from service.result_schemas import CurveOut, PointOut
from service.serialize import dumps, point_text
from service.settings import Settings

log = logging.getLogger("saddlelab.jobs")
_POINT = TypeAdapter(PointOut)
_CURVE = TypeAdapter(CurveOut)

#: Seconds a line's process gathers its points before sending them on together: one message (one wake-up of the
#: receiving thread) per batch instead of per point; a line stopped meanwhile recomputes at most these points.
SEND_EVERY = 0.05


def line_in_child(send: Any, payload: dict[str, Any], line: int, stored: dict[int, dict[str, Any]]) -> dict[str, Any]:
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


@dataclass
class Lines:
    """One computation's lines in memory: the points stored so far, each completed line's outcome, the result."""

    payload: dict[str, Any]
    lock: threading.Lock = field(default_factory=threading.Lock)
    points: list[dict[int, str]] = field(default_factory=list)
    outcomes: dict[int, dict[str, Any]] = field(default_factory=dict)
    count: int = 0  # points stored
    bytes: int = 0  # of the point texts stored
    summary: str | None = None
    result_points: list[str] | None = None
    result_curves: list[str] | None = None
    log: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.points:
            self.points = [{} for _ in range(line_count(self.payload))]

    def drop_points(self) -> None:
        self.points, self.count, self.bytes = [{} for _ in self.points], 0, 0


class LocalLines(LineUnits):
    """The :class:`~service.kernel.kind.LocalKind` of sweeps, phase diagrams and boundary jobs."""

    shows_queue_position = True

    def __init__(self, settings: Settings):
        self.settings = settings

    @staticmethod
    def open(payload: dict[str, Any], state: Lines | None) -> Lines:
        return Lines(payload) if state is None else state  # a restart keeps every point and line computed

    @staticmethod
    def reusable(state: Lines) -> bool:
        return state.summary is not None

    @staticmethod
    def plan(state: Lines) -> list[str]:
        return [str(c) for c in range(len(state.points)) if c not in state.outcomes]

    @staticmethod
    def stored(state: Lines, unit: str) -> int:
        with state.lock:
            return len(state.points[int(unit)])

    def run(self, run: LocalRun, seconds: float, memory_bytes: int | None) -> dict[str, Any]:
        state, line = run.state, int(run.unit)
        with state.lock:
            stored = {i: json.loads(t) for i, t in state.points[line].items()}
            state.log.append({"time": time.time(), "line": line, "event": "started", "stored": len(stored)})
        if self.settings.solve_processes > 0:
            outcome = run_child(line_in_child, (run.payload, line, stored), seconds=seconds, memory_bytes=memory_bytes,
                                on_message=lambda m: self._take(run, m), should_stop=run.stopped)
        else:
            out = run_line(run.payload, fixed=fixed_for_row(run.payload, line), stored=stored,
                           on_point=lambda i, pt: self._take(run, [(i, point_text(tag_point(run.payload, line, pt)))]),
                           should_stop=run.should_stop)
            outcome = line_outcome(out)
        with state.lock:
            state.log.append({"time": time.time(), "line": line, "event": "completed",
                              "stored": len(state.points[line])})
        return outcome

    @staticmethod
    def _take(run: LocalRun, points: list[tuple[int, str]]) -> None:
        """Store a line's points (once each), each checked against the contract here, while the line computes the
        next ones (a response then splices them in unchecked), and counted against the job's byte limit."""
        state, failure = run.state, None
        limit, total = float(run.payload.get("stored_bytes_limit") or 0), line_total(run.payload)
        for index, text in points:
            failure = failure or _unlike_contract(_POINT, f"point {index}", text)
        with state.lock:
            if run.cancelled():
                return  # computed after the computation was stopped: not part of it
            line = state.points[int(run.unit)]
            try:
                for index, text in points:
                    if failure is not None or int(index) in line:
                        continue
                    line[int(index)] = text
                    state.count += 1
                    state.bytes += len(text)
                    stored_bytes.check(limit, state.bytes, len(text) if state.bytes == len(text) else None, total)
            except stored_bytes.StoredBytesExceeded as exc:
                failure = str(exc)
            if failure is not None:
                state.drop_points()
        if failure is not None:
            run.fail(failure)  # outside the state's lock: a status read takes the executor's lock, then this one

    @staticmethod
    def done(state: Lines, unit: str, outcome: dict[str, Any]) -> None:
        with state.lock:
            state.outcomes[int(unit)] = outcome

    @staticmethod
    def assemble(state: Lines) -> str | None:
        payload = state.payload
        expected = expected_points(payload)
        with state.lock:
            for line, pts in enumerate(state.points):
                if sorted(pts) != list(range(expected)):
                    return f"line {line} completed with {len(pts)} of {expected} points stored"
            outcomes = [state.outcomes[c] for c in range(len(state.points))]
            curves = job_curves(payload, outcomes)
            curve_texts = None if curves is None else [dumps(c) for c in curves]
            for k, c in enumerate(curve_texts or []):  # checked before anything is kept: a failed result has none
                failure = _unlike_contract(_CURVE, f"curve {k}", c)
                if failure is not None:
                    return failure
            state.summary = dumps(job_summary(payload, outcomes))
            state.result_points = [pts[i] for pts in state.points for i in range(expected)]
            state.result_curves = curve_texts
            for outcome in outcomes:
                outcome.pop("curves", None)  # the result holds them now
            state.drop_points()  # the result holds them now
        return None

    @staticmethod
    def forget(state: Lines) -> None:
        return None

    @staticmethod
    def describe(state: Lines, status: str, detail: bool, pages: Pages) -> dict[str, Any]:
        payload, page, curve_page = state.payload, pages.points, pages.curves
        total = line_total(payload)
        out: dict[str, Any] = {"kind": job_kind(payload), "parameters": list(payload["parameters"]),
                               "method": payload["method"]}
        with state.lock:
            out["chunks"] = {"done": len(state.outcomes), "total": len(state.points)}
            if status == "finished" and state.summary is not None and state.result_points is not None:
                points = page.take(state.result_points)
                curves = None
                if state.result_curves is not None:
                    curves = curve_page.take(state.result_curves)
                    out["curve_page"] = curve_page.describe(len(state.result_curves), len(curves), "result.curves")
                out["result"] = with_points(state.summary, points, curves, checked=True)
                out["page"] = page.describe(len(state.result_points), len(points), "result.points")
                out["progress"] = {"done": total, "total": total}
                return out
            out["progress"] = {"done": state.count, "total": total}
            if detail:
                texts = [pts[i] for pts in state.points for i in sorted(pts)]
                chosen = page.take(texts)
                out["partial"] = partial_points(chosen, checked=True)
                out["page"] = page.describe(len(texts), len(chosen), "partial.points")
        return out

    @staticmethod
    def record(state: Lines, entry: dict[str, Any]) -> None:
        with state.lock:
            state.log.append(entry)

    @staticmethod
    def executions(state: Lines) -> list[dict[str, Any]]:
        with state.lock:
            return [dict(e) for e in state.log]


def _unlike_contract(adapter: TypeAdapter[Any], what: str, text: str) -> str | None:
    """Why a stored text is not the contract's model (a bug, which fails its job), or None."""
    try:
        adapter.validate_json(text)
    except ValidationError as exc:
        log.error("%s does not match the contract: %s", what, exc)
        return f"{what} of the result does not match the contract (a bug in SaddleLab): {exc}"
    return None
