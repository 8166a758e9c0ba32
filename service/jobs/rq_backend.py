"""Sweeps and phase diagrams as RQ jobs: the API side (submit, status, cancel).

A computation is keyed by the sweep's key (the hash of spec, parameters, values, method, solver
options and solver version), so identical submissions — by any API key — share one computation.
Each key holds its own job on it (:mod:`service.jobs.backend`): only that key sees or cancels it.
The computation is cut into *lines*: a one-parameter sweep is one line, a phase diagram one line
per value of its first parameter. Each line runs as one RQ job (``run_line_job``) on whichever
worker takes it, so a phase diagram spreads over every worker of the lab.

The state lives in SaddleLab's own keys (:mod:`service.jobs.store`); each line runs the task
:func:`service.jobs.task.run_line_job`, which stores every point as it is computed, so a line
whose worker dies is resumed by another from its last stored point.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import redis
from rq import Queue
from rq.serializers import JSONSerializer

from service.jobs.backend import Page, RawJSON, job_kind, line_count, line_total, with_points
from service.jobs.store import JobKeys, JobStore
from service.kernel.ownership import ACTIVE, JobLimitExceeded, owner_tag, public_id
from service.kernel.records import text
from service.kernel.rq_units import QUEUE, Reconciler, enqueue_unit, redis_guard, stop_rq_job
from service.redis_link import RedisLink
from service.secrets import InstanceSecret
from service.serialize import dumps
from service.settings import Settings

log = logging.getLogger("saddlelab.jobs")

TASK = "service.jobs.task.run_line_job"


class RQJobs:
    """Jobs on RQ workers; the :class:`~service.jobs.backend.JobBackend` of a lab instance."""

    kind = "rq"

    def __init__(self, link: RedisLink, settings: Settings, secret: InstanceSecret):
        self.link = link
        self.settings = settings
        self.secret = secret
        self.store = JobStore(link.client, settings.result_ttl)
        self.queue = Queue(QUEUE, connection=link.client, serializer=JSONSerializer)
        self._reconciled = Reconciler()

    def _guard(self, fn: Callable[[], Any]) -> Any:
        return redis_guard(self.link, fn)

    def _handle(self, job_id: str, owner: str | None) -> dict[str, str] | None:
        """The owner's job ``job_id``; None when it does not exist or belongs to another owner."""
        h = self.store.handle(job_id)
        if h is None or h.get("owner") != owner_tag(owner, self.secret):
            return None
        return h

    # ---- submit -----------------------------------------------------------------------------
    def submit(self, payload: dict[str, Any], owner: str | None = None, limit: int = 0) -> tuple[str, bool]:
        return self._guard(lambda: self._submit(payload, owner, limit))

    def _submit(self, payload: dict[str, Any], owner: str | None, limit: int) -> tuple[str, bool]:
        key = payload["key"]
        keys = JobKeys(key)
        tag = owner_tag(owner, self.secret)
        job_id = public_id(tag, key, self.secret)
        handle_key, owner_key = JobKeys.handle(job_id), JobKeys.owner(tag)
        n = line_count(payload)
        ttl = self.store.ttl
        r = self.link.client
        with r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(keys.meta, keys.owners, handle_key, owner_key)
                    status = pipe.hget(keys.meta, "status")
                    status = text(status) if status is not None else None
                    finished = status == "finished" and pipe.exists(keys.result, keys.result_points) == 2
                    shared = status in ACTIVE or finished
                    cancelled = text(pipe.hget(handle_key, "cancelled") or b"1") == "1"
                    if shared and not cancelled and pipe.sismember(keys.owners, tag):
                        return job_id, True  # this owner's job already
                    # Joining a computation that exists starts nothing: never refused by the per-key limit.
                    if not shared and limit and self._active(owner_key) >= limit:
                        raise JobLimitExceeded(limit)
                    # Lines completed by an earlier run of the same key (failed, cancelled) are kept.
                    done = set() if shared else self.store.lines_done(key)
                    pipe.multi()
                    pipe.hset(handle_key, mapping={"key": key, "owner": tag, "cancelled": "0"})
                    pipe.hsetnx(handle_key, "created", time.time())
                    pipe.expire(handle_key, ttl)
                    pipe.sadd(owner_key, job_id)
                    pipe.expire(owner_key, ttl)
                    pipe.sadd(keys.owners, tag)
                    pipe.expire(keys.owners, ttl)
                    if not shared:
                        pipe.delete(keys.meta, keys.result, keys.result_points, keys.result_curves)
                        meta = {
                            "payload": dumps(payload),
                            "status": "queued",
                            "kind": job_kind(payload),
                            "lines": n,
                            "total": line_total(payload),
                            "created": time.time(),
                            "updated": time.time(),
                            "job_timeout": self.settings.job_timeout,
                            "ttl": ttl,
                        }
                        for c in range(n):
                            if c not in done:
                                meta[f"rq:{c}"] = enqueue_line(self.queue, key, c, self.settings.job_timeout, pipe)
                        pipe.hset(keys.meta, mapping=meta)
                        pipe.expire(keys.meta, ttl)
                    pipe.execute()
                    break
                except redis.WatchError:
                    continue
        if not shared and len(done) == n:
            self.store.finalize(key)
        return job_id, shared

    def _active(self, owner_key: str) -> int:
        """Unfinished jobs of an owner: its jobs not cancelled whose computation is queued or running."""
        r = self.link.client
        members = [text(m) for m in r.smembers(owner_key)]
        if not members:
            return 0
        with r.pipeline(transaction=False) as p:
            for m in members:
                p.hmget(JobKeys.handle(m), "key", "cancelled")
            handles = p.execute()
        gone = [m for m, (k, _) in zip(members, handles, strict=True) if k is None]
        if gone:
            r.srem(owner_key, *gone)
        held = [text(k) for k, c in handles if k is not None and text(c or b"0") != "1"]
        if not held:
            return 0
        with r.pipeline(transaction=False) as p:
            for k in held:
                p.hget(JobKeys(k).meta, "status")
            statuses = p.execute()
        active = [k for k, s in zip(held, statuses, strict=True) if s is not None and text(s) in ACTIVE]
        # A computation whose lines all died in RQ is failed, not active: reconcile before counting.
        return sum(1 for k in active if self._reconcile(k) in ACTIVE)

    def active_for(self, owner: str | None) -> int:
        return self._guard(lambda: self._active(JobKeys.owner(owner_tag(owner, self.secret))))

    # ---- status -----------------------------------------------------------------------------
    def status(self, job_id: str, owner: str | None = None, detail: bool = False,
               page: Page | None = None, curve_page: Page | None = None) -> dict[str, Any] | None:
        """The owner's job (JobStatus shape); a finished result is one page of its stored JSON text
        (:class:`RawJSON`), sent on without parsing and re-serialising a large diagram."""
        settings = self.settings
        page = page or Page(0, settings.result_page_size, settings.result_page_bytes)
        curve_page = curve_page or Page(0, settings.result_page_curves, settings.result_page_bytes)
        return self._guard(lambda: self._status(job_id, owner, detail, page, curve_page))

    def _status(self, job_id: str, owner: str | None, detail: bool, page: Page,
                curve_page: Page) -> dict[str, Any] | None:
        handle = self._handle(job_id, owner)
        if handle is None:
            return None
        key = handle["key"]
        meta = self.store.meta(key)
        if meta is None:
            return None
        if meta["status"] in ACTIVE and self._reconciled.due(key):
            self._reconcile(key, meta)
            meta = self.store.meta(key) or meta
        n, total = int(meta["lines"]), int(meta["total"])
        status = meta["status"]
        if handle.get("cancelled") == "1":
            status = "cancelled"  # this owner withdrew; others may still be computing it
        payload = self.store.payload(meta)
        out: dict[str, Any] = {
            "job_id": job_id,
            "status": status,
            "kind": meta.get("kind"),
            "parameters": payload["parameters"],
            "method": payload["method"],
            "backend": self.kind,
            "created": float(handle.get("created") or meta["created"]),
            "result": None,
            "error": meta.get("error"),
            "queue_position": None,
        }
        if status == "finished":
            stored = self.store.result_page(key, page.offset, page.limit, curve_page.offset, curve_page.limit,
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
        else:
            counts = self.store.line_counts(key, n)
            done = self.store.lines_done(key)
            out["progress"] = {"done": sum(counts), "total": total}
            out["chunks"] = {"done": len(done), "total": n}
            if status in ACTIVE:
                out["queue_position"] = self._queue_position(meta, done)
            if detail:
                points = self.store.partial_page(key, counts, page.offset, page.limit, page.max_bytes)
                out["partial"] = RawJSON('{"points":[' + ",".join(points) + "]}")
                out["page"] = page.describe(sum(counts), len(points), "partial.points")
        if detail:
            out["executions"] = self.store.executions(key)
        return out

    def _queue_position(self, meta: dict[str, str], done: set[int]) -> int | None:
        """Lines waiting ahead of this computation's next queued line (0: it is next); None when none is queued."""
        for c in range(int(meta["lines"])):
            rid = meta.get(f"rq:{c}")
            if c in done or not rid:
                continue
            pos = self.queue.get_job_position(rid)
            if pos is not None:
                return int(pos)
        return None

    def _reconcile(self, key: str, meta: dict[str, str] | None = None) -> str | None:
        """An active computation whose line failed for good in RQ (retries used up, lost) is marked failed."""

        def pending(meta: dict[str, str]) -> list[tuple[int, str | None]]:
            done = self.store.lines_done(key)
            return [(c, meta.get(f"rq:{c}")) for c in range(int(meta["lines"])) if c not in done]

        def moved_on(c: int, rid: str | None) -> bool:
            return c in self.store.lines_done(key) or (self.store.meta(key) or {}).get(f"rq:{c}") != rid

        return self._reconciled.check(self.store, key, meta, self.link, pending, lambda c: f"line {c}", moved_on)

    def ended(self, job_id: str, owner: str | None = None) -> bool:
        """Whether the owner's job has ended (or is not the owner's): its handle and its status field, O(1)
        whatever the job's size (:mod:`service.kernel.waiting`)."""
        return self._guard(lambda: self._ended(job_id, owner))

    def _ended(self, job_id: str, owner: str | None) -> bool:
        handle = self._handle(job_id, owner)
        if handle is None or handle.get("cancelled") == "1":
            return True
        return self.store.status(handle["key"]) not in ACTIVE

    # ---- cancel -----------------------------------------------------------------------------
    def cancel(self, job_id: str, owner: str | None = None) -> bool:
        return self._guard(lambda: self._cancel(job_id, owner))

    def _cancel(self, job_id: str, owner: str | None) -> bool:
        handle = self._handle(job_id, owner)
        if handle is None:
            return False
        key = handle["key"]
        meta = self.store.meta(key)
        if meta is None:
            return False
        if self.store.withdraw(key, job_id, handle["owner"]) != 1:
            return True  # finished, failed or cancelled (nothing to stop), or other owners still want it
        self.store.record(key, {"event": "cancel_requested"})
        r = self.link.client
        for c in range(int(meta["lines"])):
            rid = meta.get(f"rq:{c}")
            if not rid:
                continue
            # The line also sees the flag at its next point; stopping the horse is faster.
            stop_rq_job(r, rid)
        return True

    def shutdown(self) -> None:
        return None


def enqueue_line(queue: Queue, key: str, line: int, timeout: int, pipeline: Any = None) -> str:
    """Put one line on the queue; returns the RQ job id."""
    return enqueue_unit(queue, TASK, (key, line), f"saddlelab-{key[:20]}-{line}-{uuid.uuid4().hex[:8]}", timeout,
                        f"saddlelab line {line} of {key[:12]}", pipeline)
