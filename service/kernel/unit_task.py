"""One unit of work in an RQ work horse, for every kind: how it stops, hands itself back, and fails.

- **Cancellation** and the **SIGTERM hand-back**: the unit asks :func:`service.kernel.stops.stop_poll` at every
  step; a :class:`~service.kernel.stops.HandedOff` unit is put back on the queue (:func:`hand_back`), to resume
  from what it stored.
- **Hard clock**: RQ's job timeout ends a unit that outlives ``job_timeout``; the computation fails with that.
- **Failures**: any other exception fails the computation with its reason (:func:`run_unit`).

:func:`run_task` is the RQ task of every kind: it reads the computation's record, then runs the kind's unit
through :func:`run_unit`.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from typing import Any

import redis
from rq import Queue, get_current_job
from rq.serializers import JSONSerializer
from rq.timeouts import JobTimeoutException

from service.kernel.kind import RedisKind
from service.kernel.ownership import ACTIVE
from service.kernel.records import RedisRecord
from service.kernel.rq_backend import enqueue
from service.kernel.rq_units import QUEUE
from service.kernel.stops import Cancelled, HandedOff, stop_poll
from service.redis_link import RedisUnavailable, retrying
from service.settings import get_settings

log = logging.getLogger("saddlelab.jobs")

#: Socket timeouts of the work horse's own connection (a black-holed Redis must not hang a write forever).
SOCKET_TIMEOUT = 10.0

def worker_client() -> redis.Redis:
    """A connection like the worker's, with socket timeouts (the worker's has none: it blocks on the queue)."""
    current = get_current_job()
    if current is None:
        return redis.Redis.from_url(os.environ["REDIS_URL"], socket_timeout=SOCKET_TIMEOUT,
                                    socket_connect_timeout=SOCKET_TIMEOUT)
    pool = current.connection.connection_pool
    kwargs = {**pool.connection_kwargs, "socket_timeout": SOCKET_TIMEOUT, "socket_connect_timeout": SOCKET_TIMEOUT}
    return redis.Redis(connection_pool=redis.ConnectionPool(connection_class=pool.connection_class, **kwargs))


def hand_back(client: redis.Redis, store: RedisRecord, key: str, unit: str,
              enqueue: Callable[[Queue, Any], str], outage_seconds: float) -> str:
    """Put the unit back on the queue (``enqueue(queue, pipeline)`` returns the new RQ job id) and record that
    the computation's field ``rq:<unit>`` names it now; retried while Redis is away. The new RQ job id."""
    queue = Queue(QUEUE, connection=client, serializer=JSONSerializer)

    def put() -> str:
        with client.pipeline() as p:
            rid = enqueue(queue, p)
            p.hset(store.record_key(key), f"rq:{unit}", rid)
            p.execute()
        return rid

    return retrying(put, outage_seconds) if outage_seconds > 0 else put()


def run_unit(store: RedisRecord, key: str, label: str, where: dict[str, Any], job_timeout: Any,
             body: Callable[[], dict[str, Any]], requeue: Callable[[], dict[str, Any]],
             on_full: Callable[[RedisUnavailable], None] | None = None) -> dict[str, Any]:
    """``body()`` (the unit's work; its outcome), with every way it can end recorded on the computation:
    cancelled, handed back (``requeue()``: what to record of it, e.g. the new RQ job id), past its job timeout,
    failed with its reason. Redis unreachable throughout propagates (RQ retries the unit when it is back); Redis
    staying full calls ``on_full`` (which frees room and records the failure), or propagates without one."""
    try:
        return body()
    except Cancelled:
        store.record(key, {**where, "event": "cancelled"})
        return {"outcome": "cancelled"}
    except HandedOff:
        store.record(key, {**where, "event": "handed_off", **requeue()})
        return {"outcome": "handed off"}
    except JobTimeoutException:
        store.fail(key, f"{label} exceeded the job timeout of {job_timeout} s")
        store.record(key, {**where, "event": "failed", "error": "job timeout"})
        return {"outcome": "timeout"}
    except RedisUnavailable as exc:
        if not exc.full or on_full is None:
            raise  # Redis stayed unreachable: nothing can be recorded; RQ retries the unit when it is back
        log.error("%s of %s: %s", label, key, exc)
        on_full(exc)
        return {"outcome": "failed"}
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
        raise  # Redis itself is gone: RQ retries the unit when it is back
    except Exception as exc:  # a failing unit fails its computation, with the reason
        log.exception("%s of %s failed", label, key)
        store.fail(key, f"{label}: {type(exc).__name__}: {exc}")
        store.record(key, {**where, "event": "failed", "error": f"{type(exc).__name__}: {exc}"})
        return {"outcome": "failed"}


def run_task(kind: RedisKind, key: str, unit: str) -> dict[str, Any]:
    """Run (or finish) one unit of a computation of ``kind`` in this work horse (the RQ task of every kind)."""
    current = get_current_job()
    client = worker_client()
    settings = get_settings()
    outage = settings.redis_outage_seconds if kind.rides_outages else 0.0
    store = kind.store(client, 0, outage)
    meta = store.write(lambda: store.meta(key))
    if meta is None:
        return {"outcome": "expired"}
    store.ttl = int(meta["ttl"])  # the API's result_ttl, recorded with the computation
    if meta["status"] not in ACTIVE:
        return {"outcome": meta["status"]}
    payload = store.payload(meta)
    who = {**kind.where(unit), "rq_job": current.id if current is not None else None,
           "worker": os.environ.get("RQ_WORKER_ID") or socket.gethostname(), "pid": os.getpid()}
    should_stop = stop_poll(client, store.record_key(key), tolerate_outage=kind.rides_outages)
    timeout = int(meta.get("job_timeout", 3600))

    def requeue() -> dict[str, Any]:
        rid = hand_back(client, store, key, unit, lambda queue, pipe: enqueue(kind, queue, key, unit, timeout, pipe),
                        outage)
        return {**kind.handed_back(store, key, unit), "next_rq_job": rid}

    return run_unit(store, key, kind.label(unit), who, meta.get("job_timeout"),
                    lambda: kind.run(store, client, key, unit, payload, meta, should_stop, who), requeue,
                    on_full=kind.on_full(store, key, unit, meta))
