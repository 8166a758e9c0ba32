"""The task an RQ worker runs for an experiment: one chain of one point, stored block by block.

A chain whose worker dies is found by RQ's abandoned-job detection (the worker's short heartbeat TTL, see
:mod:`service.worker`) and retried; the retry reads the stored checkpoint and continues after the last block.
A worker asked to stop (SIGTERM) hands its chain back to the queue after the current block. The execution
that completes a point's last chain assembles the point (solving the same spec through the cached solve path
in Redis), and the one that assembles the last point stores the result.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
from typing import Any

import redis
from rq import get_current_job

from service.cache import RedisCache
from service.experiments.redis_store import ExperimentKeys, RedisStore
from service.experiments.rq_backend import enqueue_chain
from service.experiments.runner import assemble_point, finalize, run_chain
from service.kernel.ownership import ACTIVE
from service.kernel.stops import stop_poll
from service.kernel.unit_task import hand_back, run_unit, worker_client
from service.redis_link import RedisLink
from service.settings import get_settings
from service.singleflight import SingleFlight
from service.solving import SolveService

log = logging.getLogger("saddlelab.experiments")


def _solver(client: redis.Redis, payload: dict[str, Any]) -> SolveService:
    """The API's cached solve path, on the worker's Redis, with the per-solve cap that travelled with the job."""
    settings = dataclasses.replace(get_settings(), solve_time_limit=float(payload["solve_time_limit"]))
    link = RedisLink(None, client=client)
    return SolveService(RedisCache(link, settings.cache_ttl), SingleFlight(link), settings)


def run_chain_job(job_id: str, point: int, chain: int) -> dict[str, Any]:
    """Run (or finish) one chain of an experiment; every block is stored as soon as it exists."""
    current = get_current_job()
    client = worker_client()
    store = RedisStore(client, ttl=0)
    meta = store.meta(job_id)
    if meta is None:
        return {"outcome": "expired"}
    store.ttl = int(meta["ttl"])
    if meta["status"] not in ACTIVE:
        return {"outcome": meta["status"]}
    payload = store.payload(meta)
    started = store.mark_started(job_id)
    who = {"rq_job": current.id if current is not None else None,
           "worker": os.environ.get("RQ_WORKER_ID") or socket.gethostname(), "pid": os.getpid()}
    should_stop = stop_poll(client, ExperimentKeys(job_id).meta, tolerate_outage=False)
    timeout = int(meta.get("job_timeout", 3600))

    def body() -> dict[str, Any]:
        out = run_chain(payload, point, chain, store, run=meta.get("run", ""), should_stop=should_stop, who=who)
        if assemble_point(payload, point, store, _solver(client, payload)):
            finalize(payload, store, started)
        return out

    def requeue() -> dict[str, Any]:
        rid = hand_back(client, store, job_id, f"{point}:{chain}",
                        lambda queue, pipe: enqueue_chain(queue, job_id, point, chain, timeout, pipe), 0.0)
        return {"next_rq_job": rid}

    return run_unit(store, job_id, f"point {point} chain {chain}", {"point": point, "chain": chain, **who},
                    meta.get("job_timeout"), body, requeue)
