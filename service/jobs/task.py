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
import threading
import time
from collections.abc import Callable
from typing import Any

import redis
from rq import Queue, get_current_job
from rq.serializers import JSONSerializer
from rq.timeouts import JobTimeoutException

from service.jobs.backend import ACTIVE
from service.jobs.lines import Cancelled, expected_points, fixed_for_row, line_outcome, run_line, tag_point
from service.jobs.rq_backend import QUEUE, enqueue_line
from service.jobs.store import JobKeys, JobStore, _text
from service.redis_link import UNREACHABLE, RedisUnavailable, retrying
from service.settings import get_settings

log = logging.getLogger("saddlelab.jobs")

#: Seconds between two checks of the cancel flag while points stream in.
CANCEL_POLL = 0.25
#: Socket timeouts of the work horse's own connection (a black-holed Redis must not hang a write forever).
SOCKET_TIMEOUT = 10.0
#: Times a line is run again for points that Redis lost (acknowledged writes of its last second before a crash,
#: with ``appendfsync everysec``); only the missing points are computed.
REFILL_ATTEMPTS = 3

#: Set in a work horse when its worker was asked to stop: the line is handed back after this point.
HANDOFF = threading.Event()


class HandedOff(Exception):
    """Raised inside a line when its worker is stopping: the line goes back to the queue."""


def stop_poll(client: redis.Redis, meta_key: str, *, tolerate_outage: bool) -> Callable[[], bool]:
    """``should_stop`` for a running task: raises :class:`HandedOff` when the worker is stopping, else True when
    the task's status (field ``status`` of ``meta_key``) is gone or ``cancelled``, read at most every
    ``CANCEL_POLL`` seconds. ``tolerate_outage``: an unreachable Redis reads as "keep computing" (the task's
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
            st = client.hget(meta_key, "status")
        except UNREACHABLE:
            if tolerate_outage:
                return False
            raise
        return st is None or _text(st) == "cancelled"

    return should_stop


def _client() -> redis.Redis:
    """A connection like the worker's, with socket timeouts (the worker's has none: it blocks on the queue)."""
    current = get_current_job()
    if current is None:
        return redis.Redis.from_url(os.environ["REDIS_URL"], socket_timeout=SOCKET_TIMEOUT,
                                    socket_connect_timeout=SOCKET_TIMEOUT)
    pool = current.connection.connection_pool
    kwargs = {**pool.connection_kwargs, "socket_timeout": SOCKET_TIMEOUT, "socket_connect_timeout": SOCKET_TIMEOUT}
    return redis.Redis(connection_pool=redis.ConnectionPool(connection_class=pool.connection_class, **kwargs))


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
    client = _client()
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
    stored = store.write(lambda: store.points(key, line))
    who = {"line": line, "rq_job": rq_id, "worker": os.environ.get("RQ_WORKER_ID") or socket.gethostname(),
           "pid": os.getpid()}
    store.record(key, {**who, "event": "started", "stored": len(stored)})
    should_stop = stop_poll(client, JobKeys(key).meta, tolerate_outage=True)

    lines = int(meta["lines"])
    expected = expected_points(payload)
    try:
        for attempt in range(REFILL_ATTEMPTS + 1):
            out = run_line(payload, fixed=fixed_for_row(payload, line), stored=stored,
                           on_point=lambda i, pt: store.add_point(key, line, i, tag_point(payload, line, pt)),
                           should_stop=should_stop)
            stored = store.write(lambda: store.points(key, line))
            if len(stored) >= expected or attempt == REFILL_ATTEMPTS:
                break
            # Redis restarted and lost some acknowledged points: compute just those again.
            store.record(key, {**who, "event": "refilling", "missing": expected - len(stored)})
        outcome = line_outcome(out)
        store.record(key, {**who, "event": "completed", "reused": out["reused"], "computed": out["computed"]})
        store.complete_line(key, line, outcome)
    except Cancelled:
        store.record(key, {**who, "event": "cancelled"})
        return {"outcome": "cancelled"}
    except HandedOff:
        queue = Queue(QUEUE, connection=client, serializer=JSONSerializer)

        def hand_off() -> str:
            with client.pipeline() as p:
                rid = enqueue_line(queue, key, line, int(meta.get("job_timeout", 3600)), p)
                p.hset(JobKeys(key).meta, f"rq:{line}", rid)
                p.execute()
            return rid

        rid = retrying(hand_off, settings.redis_outage_seconds)
        store.record(key, {**who, "event": "handed_off", "stored": len(store.points(key, line)), "next_rq_job": rid})
        return {"outcome": "handed off"}
    except JobTimeoutException:
        store.fail(key, f"line {line} exceeded the job timeout of {meta.get('job_timeout')} s")
        store.record(key, {**who, "event": "failed", "error": "job timeout"})
        return {"outcome": "timeout"}
    except RedisUnavailable as exc:
        if not exc.full:
            raise  # Redis stayed unreachable: nothing can be recorded; RQ retries the line when it is back
        log.error("line %s of %s: %s", line, key, exc)
        fail_for_lack_of_memory(store, key, lines, line, exc)
        return {"outcome": "failed"}
    except Exception as exc:  # a failing line fails its job, with the reason
        log.exception("line %s of job %s failed", line, key)
        store.fail(key, f"line {line}: {type(exc).__name__}: {exc}")
        store.record(key, {**who, "event": "failed", "error": f"{type(exc).__name__}: {exc}"})
        return {"outcome": "failed"}
    return {"outcome": "completed", "reused": out["reused"], "computed": out["computed"]}
