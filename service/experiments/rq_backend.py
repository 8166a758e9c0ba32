"""Experiments on RQ workers: the API side (submit, status, series, cancel).

The computations here are keyed by the experiment's hash (spec, sizes, network seed, sampler and solver options,
points and precision), so identical submissions share one; who holds them is :mod:`service.experiments.owned`'s
business. Every chain of every point is one RQ job
(``service.experiments.task.run_chain_job``) on the sweeps' queue, so chains spread over every worker of the
lab. A chain stores its checkpoint and the block just drawn after every block (:mod:`.redis_store`); a chain
whose worker dies is found by RQ's abandoned-job detection (the worker's short heartbeat) and retried, and
the retry resumes after the last stored block. A failed or cancelled experiment submitted again resumes every
chain where it stopped.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import redis
from rq import Queue
from rq.serializers import JSONSerializer

from service.experiments.redis_store import ExperimentKeys, RedisStore
from service.experiments.runner import finalize, n_chains, n_points
from service.kernel.ownership import ACTIVE
from service.kernel.records import text
from service.kernel.rq_units import QUEUE, Reconciler, enqueue_unit, redis_guard, stop_rq_job
from service.redis_link import RedisLink
from service.serialize import dumps as _dumps
from service.settings import Settings

log = logging.getLogger("saddlelab.experiments")

TASK = "service.experiments.task.run_chain_job"


def enqueue_chain(queue: Queue, job_id: str, point: int, chain: int, timeout: int, pipeline: Any = None) -> str:
    """Put one chain on the queue; returns the RQ job id."""
    return enqueue_unit(queue, TASK, (job_id, point, chain),
                        f"saddlelab-exp-{job_id[:16]}-{point}-{chain}-{uuid.uuid4().hex[:8]}", timeout,
                        f"saddlelab experiment {job_id[:12]} point {point} chain {chain}", pipeline)


class RQExperiments:
    kind = "rq"

    def __init__(self, link: RedisLink, settings: Settings):
        self.link = link
        self.settings = settings
        self.store = RedisStore(link.client, settings.result_ttl)
        self.queue = Queue(QUEUE, connection=link.client, serializer=JSONSerializer)
        self._reconciled = Reconciler()

    def guard(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` with Redis unreachable or full as :class:`QueueUnavailable` (503); the API's holdings of
        experiments live in the same Redis and go through it too."""
        return redis_guard(self.link, fn)

    # ---- submit -----------------------------------------------------------------------------
    def submit(self, payload: dict[str, Any]) -> bool:
        """Start the computation, or resume a failed or cancelled one; True when it was already there."""
        return self.guard(lambda: self._submit(payload))

    def _submit(self, payload: dict[str, Any]) -> bool:
        job_id = payload["key"]
        keys = ExperimentKeys(job_id)
        points, chains = n_points(payload), n_chains(payload)
        r = self.link.client
        with r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(keys.meta)
                    status = pipe.hget(keys.meta, "status")
                    status = text(status) if status is not None else None
                    if status in ACTIVE or (status == "finished" and pipe.exists(keys.result)
                                            and self.store.complete(job_id)):
                        return True
                    # chains and points of an earlier run of the same key (failed, cancelled, stopped by its time
                    # limit) are kept: incomplete points are reopened, their chains resume
                    assembled = self.store.reopen(job_id, points)
                    done = {p: self.store.chains_done(job_id, p) for p in range(points) if p not in assembled}
                    pipe.multi()
                    pipe.delete(keys.meta, keys.result)
                    meta: dict[str, Any] = {
                        "payload": _dumps(payload),
                        "status": "queued",
                        "kind": "experiment" if payload["values"] is None else "learning_curve",
                        "points": points,
                        "chains": chains,
                        "total": points * chains * int(payload["sampler"]["draws"]),
                        "created": time.time(),
                        "updated": time.time(),
                        "run": uuid.uuid4().hex,  # this submission: its chains' time limits count from it
                        "job_timeout": self.settings.job_timeout,
                        "ttl": self.store.ttl,
                    }
                    for p, finished in done.items():
                        # a point whose chains all finished but which was not assembled: one job assembles it
                        missing = [c for c in range(chains) if c not in finished] or [0]
                        for c in missing:
                                meta[f"rq:{p}:{c}"] = enqueue_chain(self.queue, job_id, p, c,
                                                                    self.settings.job_timeout, pipe)
                    pipe.hset(keys.meta, mapping=meta)
                    pipe.expire(keys.meta, self.store.ttl)
                    pipe.execute()
                    break
                except redis.WatchError:
                    continue
        if len(assembled) == points:
            finalize(payload, self.store)
        return False

    def computation_status(self, job_id: str) -> str | None:
        """The computation's status, reconciled with RQ when active (a chain lost for good fails it)."""

        def read() -> str | None:
            meta = self.store.meta(job_id)
            if meta is None:
                return None
            if meta["status"] in ACTIVE:
                return self._reconcile(job_id, meta)
            if meta["status"] == "finished" and self.store.result_text(job_id) is None:
                return "failed"  # the result expired before the record did
            if meta["status"] == "finished" and not self.store.complete(job_id):
                return "incomplete"  # served, but never final: a submission resumes it
            return meta["status"]

        return self.guard(read)

    # ---- status -----------------------------------------------------------------------------
    def status(self, job_id: str, detail: bool = False) -> dict[str, Any] | None:
        return self.guard(lambda: self._status(job_id, detail))

    def _status(self, job_id: str, detail: bool) -> dict[str, Any] | None:
        meta = self.store.meta(job_id)
        if meta is None:
            return None
        if meta["status"] in ACTIVE and self._reconciled.due(job_id):
            self._reconcile(job_id, meta)
            meta = self.store.meta(job_id) or meta
        points, chains, total, status = int(meta["points"]), int(meta["chains"]), int(meta["total"]), meta["status"]
        out: dict[str, Any] = {
            "job_id": job_id,
            "status": status,
            "kind": meta.get("kind"),
            "backend": self.kind,
            "created": float(meta["created"]),
            "result": None,
            "error": meta.get("error"),
        }
        chains_done = sum(len(self.store.chains_done(job_id, p)) for p in range(points))
        if status == "finished":
            raw = self.store.result_text(job_id)
            if raw is None:  # the result expired before the record did
                out.update(status="failed", error="the result has expired (result_ttl); submit the experiment again")
                done = 0
            else:
                out["result"] = json.loads(raw)
                done = total
        else:
            done = min(total, self.store.progress(job_id, points, chains))
        out["progress"] = {"done": done, "total": total}
        out["chains"] = {"done": chains_done, "total": points * chains}
        out["points"] = {"done": len(self.store.points_done(job_id)), "total": points}
        if detail:
            out["executions"] = self.store.executions(job_id)
        return out

    def series(self, job_id: str, point: int) -> str | None:
        return self.guard(lambda: self.store.series_text(job_id, point))

    def _reconcile(self, job_id: str, meta: dict[str, str] | None = None) -> str | None:
        """An active experiment whose chain failed for good in RQ (retries used up, lost) is marked failed."""

        def pending(meta: dict[str, str]) -> list[tuple[tuple[int, int], str | None]]:
            assembled = self.store.points_done(job_id)
            return [((p, c), meta.get(f"rq:{p}:{c}")) for p in range(int(meta["points"])) if p not in assembled
                    for c in range(int(meta["chains"])) if c not in self.store.chains_done(job_id, p)]

        def moved_on(unit: tuple[int, int], rid: str | None) -> bool:
            p, c = unit
            return c in self.store.chains_done(job_id, p) or (self.store.meta(job_id) or {}).get(f"rq:{p}:{c}") != rid

        return self._reconciled.check(self.store, job_id, meta, self.link, pending,
                                      lambda u: f"point {u[0]} chain {u[1]}", moved_on)

    # ---- cancel -----------------------------------------------------------------------------
    def cancel(self, job_id: str) -> bool:
        return self.guard(lambda: self._cancel(job_id))

    def _cancel(self, job_id: str) -> bool:
        meta = self.store.meta(job_id)
        if meta is None:
            return False
        if not self.store.set_status(job_id, "cancelled", ACTIVE):
            return True
        self.store.record(job_id, {"event": "cancel_requested"})
        r = self.link.client
        for field, rid in meta.items():
            if not field.startswith("rq:"):
                continue
            stop_rq_job(r, rid)
        return True

    def shutdown(self) -> None:
        return None
