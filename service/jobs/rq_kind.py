"""Sweep lines as a kind of job on RQ: sweeps, phase-diagram rows and boundary lines in Redis.

The unit is a *line* (``"3"``): a one-parameter sweep is one line, a phase diagram one line per value of its first
parameter, a boundary job one traced line of its own kind. A line stores every point as it is computed
(:mod:`service.jobs.store`), so a line whose worker dies is resumed by another from its last stored point; the
worker that completes the last line assembles the result inside Redis. Everything else — ownership, queueing,
cancellation, hand-back, hard clocks — is the kernel's (:mod:`service.kernel.rq_backend`).

Every write is retried while Redis is unreachable or full (``redis_outage_seconds``, bounded backoff), so a line
carries on across a Redis restart. If Redis stays full, the computation is failed visibly: its stored points are
dropped first (a delete is allowed at ``maxmemory``) so that the failure itself can be written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import redis

from service.jobs.lines import expected_points, fixed_for_row, line_outcome, run_line, tag_point
from service.jobs.shape import LineUnits, job_kind, line_count, line_total
from service.jobs.store import JobKeys, JobStore
from service.kernel.kind import Pages
from service.kernel.pages import partial_points, with_points
from service.kernel.stored_bytes import StoredBytesExceeded
from service.kernel.unit_task import run_task
from service.redis_link import UNREACHABLE, RedisUnavailable

log = logging.getLogger("saddlelab.jobs")

#: Times a line is run again for points that Redis lost (acknowledged writes of its last second before a crash,
#: with ``appendfsync everysec``); only the missing points are computed.
REFILL_ATTEMPTS = 3


class SweepLines(LineUnits):
    """The :class:`~service.kernel.kind.RedisKind` of sweeps, phase diagrams and boundary jobs."""

    name, task = "job", "service.jobs.rq_kind.run_line_job"
    holdings, store = JobKeys.HOLDINGS, JobStore
    rides_outages = shows_queue_position = True

    @staticmethod
    def record_fields(payload: dict[str, Any]) -> dict[str, Any]:
        return {"kind": job_kind(payload), "lines": line_count(payload), "total": line_total(payload)}

    @staticmethod
    def stale(key: str) -> tuple[str, ...]:
        keys = JobKeys(key)
        return keys.result, keys.result_points, keys.result_curves

    @staticmethod
    def reusable(store: JobStore, key: str) -> bool:
        keys = JobKeys(key)
        return int(store.r.exists(keys.result, keys.result_points)) == 2

    @staticmethod
    def plan(store: JobStore, key: str, payload: dict[str, Any]) -> list[str]:
        done = store.lines_done(key)  # lines completed by an earlier run (failed, cancelled) are kept
        return [str(c) for c in range(line_count(payload)) if c not in done]

    @staticmethod
    def pending(store: JobStore, key: str, meta: dict[str, str]) -> list[str]:
        done = store.lines_done(key)
        return [str(c) for c in range(int(meta["lines"])) if c not in done]

    @staticmethod
    def assemble(store: JobStore, key: str, payload: dict[str, Any]) -> None:
        store.finalize(key)

    @staticmethod
    def describe(store: JobStore, key: str, meta: dict[str, str], status: str, detail: bool,
                 pages: Pages) -> dict[str, Any]:
        """A finished result is one page of its stored JSON text (:class:`RawJSON`), sent on without parsing and
        re-serialising a large diagram; progress is read from the computation's counters, O(1) in its lines."""
        payload = store.payload(meta)
        n, total = int(meta["lines"]), int(meta["total"])
        out: dict[str, Any] = {"kind": meta.get("kind"), "parameters": payload["parameters"],
                               "method": payload["method"]}
        page, curve_page = pages.points, pages.curves
        if status == "finished":
            stored = store.result_page(key, page.offset, page.limit, curve_page.offset, curve_page.limit,
                                       page.max_bytes)
            if stored is None:  # the result expired before the job's record did
                out.update(status="failed", error="the result has expired (result_ttl); submit the sweep again")
                out["progress"] = {"done": 0, "total": total}
            else:
                summary, points, count, curves, n_curves = stored
                apart = meta.get("curves") == "1"
                out["result"] = with_points(summary, points, curves if apart else None)
                out["page"] = page.describe(count, len(points), "result.points")
                if apart:
                    out["curve_page"] = curve_page.describe(n_curves, len(curves), "result.curves")
                out["progress"] = {"done": total, "total": total}
            out["chunks"] = {"done": n, "total": n}
            return out
        out["progress"] = {"done": store.stored_count(key), "total": total}
        out["chunks"] = {"done": store.lines_done_count(key), "total": n}
        if detail:
            counts = store.line_counts(key, n)
            points = store.partial_page(key, counts, page.offset, page.limit, page.max_bytes)
            out["partial"] = partial_points(points)
            out["page"] = page.describe(sum(counts), len(points), "partial.points")
        return out

    @staticmethod
    def run(store: JobStore, client: Any, key: str, unit: str, payload: dict[str, Any], meta: dict[str, str],
            should_stop: Callable[[], bool], who: dict[str, Any]) -> dict[str, Any]:
        """Compute (or finish) one line; every point is stored as soon as it exists."""
        line, lines = int(unit), int(meta["lines"])
        if line in store.write(lambda: store.lines_done(key)):
            store.write(lambda: store.finalize(key))
            return {"outcome": "already complete"}
        store.set_status(key, "running", ("queued",))
        # A line run before (its worker died, or it was handed back) resumes from its points: the engine takes them.
        stored = store.write(lambda: store.points(key, line) if store.count(key, line) else {})
        store.record(key, {**who, "event": "started", "stored": len(stored)})
        expected = expected_points(payload)
        limit, total = float(payload.get("stored_bytes_limit") or 0), line_total(payload)
        try:
            for attempt in range(REFILL_ATTEMPTS + 1):
                out = run_line(payload, fixed=fixed_for_row(payload, line), stored=stored,
                               on_point=lambda i, pt: store.add_point(key, line, i, tag_point(payload, line, pt),
                                                                      limit, total),
                               should_stop=should_stop)
                count = store.write(lambda: store.count(key, line))  # never the line's points themselves
                if count >= expected or attempt == REFILL_ATTEMPTS:
                    break
                # Redis restarted and lost some acknowledged points: compute just those again.
                store.record(key, {**who, "event": "refilling", "missing": expected - count})
                stored = store.write(lambda: store.points(key, line))
        except StoredBytesExceeded as exc:
            store.fail(key, str(exc))
            store.free_points(key, lines, keep_log=True)
            store.record(key, {**who, "event": "failed", "error": str(exc)})
            return {"outcome": "failed"}
        store.record(key, {**who, "event": "completed", "reused": out["reused"], "computed": out["computed"]})
        store.complete_line(key, line, line_outcome(out))
        return {"outcome": "completed", "reused": out["reused"], "computed": out["computed"]}

    @staticmethod
    def handed_back(store: JobStore, key: str, unit: str) -> dict[str, Any]:
        return {"stored": store.count(key, int(unit))}

    @staticmethod
    def on_full(store: JobStore, key: str, unit: str, meta: dict[str, str]) -> Callable[[Any], None]:
        lines = int(meta["lines"])

        def fail_for_lack_of_memory(exc: RedisUnavailable) -> None:
            """Redis stayed full: drop the computation's points (so that there is room), then record the failure."""
            try:
                store.free_points(key, lines)
                store.fail(key, f"line {unit}: {exc.cause} — Redis is full (maxmemory) and refused the job's writes "
                                f"for {store.retry_seconds:.0f} s; its stored points were dropped so that this "
                                f"failure could be recorded. Free memory (or raise maxmemory) and submit the sweep "
                                f"again.")
            except (RedisUnavailable, *UNREACHABLE, redis.exceptions.ResponseError):
                log.error("line %s of %s: Redis is full and the failure could not be recorded either", unit, key)

        return fail_for_lack_of_memory


SWEEP_LINES = SweepLines()


def run_line_job(key: str, line: str) -> dict[str, Any]:
    """The RQ task of one line: compute (or finish) it, storing every point as it exists."""
    return run_task(SWEEP_LINES, key, str(line))
