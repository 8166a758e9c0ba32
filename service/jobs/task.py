"""The task an RQ worker runs: compute (or finish) one line of a job, storing every point as it exists.

A line whose worker dies is found by RQ's abandoned-job detection (the worker's short heartbeat
TTL, see :mod:`service.worker`) and retried; the retry reads the stored points and resumes after
them (:func:`service.jobs.lines.run_line`). A worker asked to stop (SIGTERM) hands its line back
to the queue after the current point.

Every write is retried while Redis is unreachable or full (``redis_outage_seconds``, bounded
backoff), so a line carries on across a Redis restart. If Redis stays full, the computation is
failed visibly: its stored points are dropped first (a delete is allowed at ``maxmemory``) so that
the failure itself can be written.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import Any

import redis
from rq import get_current_job

from service.jobs.backend import line_total
from service.jobs.lines import expected_points, fixed_for_row, line_outcome, run_line, tag_point
from service.jobs.rq_backend import enqueue_line
from service.jobs.store import JobKeys, JobStore
from service.kernel.ownership import ACTIVE
from service.kernel.stops import stop_poll
from service.kernel.stored_bytes import StoredBytesExceeded
from service.kernel.unit_task import hand_back, run_unit, worker_client
from service.redis_link import UNREACHABLE, RedisUnavailable
from service.settings import get_settings

log = logging.getLogger("saddlelab.jobs")

#: Times a line is run again for points that Redis lost (acknowledged writes of its last second before a crash,
#: with ``appendfsync everysec``); only the missing points are computed.
REFILL_ATTEMPTS = 3


def fail_for_lack_of_memory(store: JobStore, key: str, lines: int, line: int, exc: RedisUnavailable) -> None:
    """Redis stayed full: drop the computation's points (so that there is room), then record the failure."""
    try:
        store.free_points(key, lines)
        store.fail(key, f"line {line}: {exc.cause} — Redis is full (maxmemory) and refused the job's writes for "
                        f"{store.retry_seconds:.0f} s; its stored points were dropped so that this failure could "
                        f"be recorded. Free memory (or raise maxmemory) and submit the sweep again.")
    except (RedisUnavailable, *UNREACHABLE, redis.exceptions.ResponseError):
        log.error("line %s of %s: Redis is full and the failure could not be recorded either", line, key)


def run_line_job(key: str, line: int) -> dict[str, Any]:
    """Compute (or finish) one line of a computation; every point is stored as soon as it exists."""
    current = get_current_job()
    client = worker_client()
    settings = get_settings()
    store = JobStore(client, ttl=0, retry_seconds=settings.redis_outage_seconds)
    meta = store.write(lambda: store.meta(key))
    if meta is None:
        return {"outcome": "expired"}
    store.ttl = int(meta["ttl"])  # the API's result_ttl, recorded with the job
    rq_id = current.id if current is not None else None
    if meta["status"] not in ACTIVE:
        return {"outcome": meta["status"]}
    if line in store.write(lambda: store.lines_done(key)):
        store.write(lambda: store.finalize(key))
        return {"outcome": "already complete"}
    store.set_status(key, "running", ("queued",))
    payload = store.payload(meta)
    # A line run before (its worker died, or it was handed back) resumes from its points: the engine takes them.
    stored = store.write(lambda: store.points(key, line) if store.count(key, line) else {})
    who = {"line": line, "rq_job": rq_id, "worker": os.environ.get("RQ_WORKER_ID") or socket.gethostname(),
           "pid": os.getpid()}
    store.record(key, {**who, "event": "started", "stored": len(stored)})
    should_stop = stop_poll(client, JobKeys(key).meta, tolerate_outage=True)
    lines = int(meta["lines"])
    expected = expected_points(payload)
    timeout = int(meta.get("job_timeout", 3600))

    limit, total = float(payload.get("stored_bytes_limit") or 0), line_total(payload)

    def body() -> dict[str, Any]:
        try:
            return compute()
        except StoredBytesExceeded as exc:
            store.fail(key, str(exc))
            store.free_points(key, lines, keep_log=True)
            store.record(key, {**who, "event": "failed", "error": str(exc)})
            return {"outcome": "failed"}

    def compute() -> dict[str, Any]:
        nonlocal stored
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
        store.record(key, {**who, "event": "completed", "reused": out["reused"], "computed": out["computed"]})
        store.complete_line(key, line, line_outcome(out))
        return {"outcome": "completed", "reused": out["reused"], "computed": out["computed"]}

    def requeue() -> dict[str, Any]:
        rid = hand_back(client, store, key, str(line),
                        lambda queue, pipe: enqueue_line(queue, key, line, timeout, pipe),
                        settings.redis_outage_seconds)
        return {"stored": int(client.hlen(JobKeys(key).points(line))), "next_rq_job": rid}

    return run_unit(store, key, f"line {line}", who, meta.get("job_timeout"), body, requeue,
                    on_full=lambda exc: fail_for_lack_of_memory(store, key, lines, line, exc))
