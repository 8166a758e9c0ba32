"""The task an RQ worker runs: compute (or finish) one line of a job, storing every point as it exists.

A line whose worker dies is found by RQ's abandoned-job detection (the worker's short heartbeat
TTL, see :mod:`service.worker`) and retried; the retry reads the stored points and resumes after
them (:func:`service.jobs.lines.run_line`). A worker asked to stop (SIGTERM) hands its line back
to the queue after the current point.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Any

import redis
from rq import Queue, get_current_job
from rq.serializers import JSONSerializer
from rq.timeouts import JobTimeoutException

from service.jobs.backend import ACTIVE
from service.jobs.lines import Cancelled, fixed_for_row, line_outcome, run_line, tag_point
from service.jobs.rq_backend import QUEUE, enqueue_line
from service.jobs.store import JobKeys, JobStore, _text

log = logging.getLogger("saddlelab.jobs")

#: Seconds between two checks of the cancel flag while points stream in.
CANCEL_POLL = 0.25

#: Set in a work horse when its worker was asked to stop: the line is handed back after this point.
HANDOFF = threading.Event()


class HandedOff(Exception):
    """Raised inside a line when its worker is stopping: the line goes back to the queue."""


def run_line_job(job_id: str, line: int) -> dict[str, Any]:
    """Compute (or finish) one line of a job; every point is stored as soon as it exists."""
    current = get_current_job()
    client = current.connection if current is not None else redis.Redis.from_url(os.environ["REDIS_URL"])
    store = JobStore(client, ttl=0)
    meta = store.meta(job_id)
    if meta is None:
        return {"outcome": "expired"}
    store.ttl = int(meta["ttl"])  # the API's result_ttl, recorded with the job
    rq_id = current.id if current is not None else None
    if meta["status"] not in ACTIVE:
        return {"outcome": meta["status"]}
    if line in store.lines_done(job_id):
        store.finalize(job_id)
        return {"outcome": "already complete"}
    store.set_status(job_id, "running", ("queued",))
    payload = store.payload(meta)
    stored = store.points(job_id, line)
    who = {"line": line, "rq_job": rq_id, "worker": os.environ.get("RQ_WORKER_ID") or socket.gethostname(),
           "pid": os.getpid()}
    store.record(job_id, {**who, "event": "started", "stored": len(stored)})
    last_check = [0.0]

    def should_stop() -> bool:
        if HANDOFF.is_set():
            raise HandedOff()
        now = time.monotonic()
        if now - last_check[0] < CANCEL_POLL:
            return False
        last_check[0] = now
        st = client.hget(JobKeys(job_id).meta, "status")
        return st is None or _text(st) == "cancelled"

    try:
        out = run_line(payload, fixed=fixed_for_row(payload, line), stored=stored,
                       on_point=lambda i, pt: store.add_point(job_id, line, i, tag_point(payload, line, pt)),
                       should_stop=should_stop)
    except Cancelled:
        store.record(job_id, {**who, "event": "cancelled"})
        return {"outcome": "cancelled"}
    except HandedOff:
        queue = Queue(QUEUE, connection=client, serializer=JSONSerializer)
        with client.pipeline() as p:
            rid = enqueue_line(queue, job_id, line, int(meta.get("job_timeout", 3600)), p)
            p.hset(JobKeys(job_id).meta, f"rq:{line}", rid)
            p.execute()
        store.record(job_id, {**who, "event": "handed_off", "stored": len(store.points(job_id, line)),
                              "next_rq_job": rid})
        return {"outcome": "handed off"}
    except JobTimeoutException:
        store.fail(job_id, f"line {line} exceeded the job timeout of {meta.get('job_timeout')} s")
        store.record(job_id, {**who, "event": "failed", "error": "job timeout"})
        return {"outcome": "timeout"}
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
        raise  # Redis itself is gone: let RQ retry the line when it is back
    except Exception as exc:  # a failing line fails its job, with the reason
        log.exception("line %s of job %s failed", line, job_id)
        store.fail(job_id, f"line {line}: {type(exc).__name__}: {exc}")
        store.record(job_id, {**who, "event": "failed", "error": f"{type(exc).__name__}: {exc}"})
        return {"outcome": "failed"}
    outcome = line_outcome(out)
    store.record(job_id, {**who, "event": "completed", "reused": out["reused"], "computed": out["computed"]})
    store.complete_line(job_id, line, outcome)
    return {"outcome": "completed", "reused": out["reused"], "computed": out["computed"]}

