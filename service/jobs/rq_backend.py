"""Sweeps and phase diagrams as RQ jobs: the API side (submit, status, cancel).

A SaddleLab job's id is the sweep's key (the hash of spec, parameters, values, method, solver
options and solver version), so identical submissions share one job. The job is cut into
*lines*: a one-parameter sweep is one line, a phase diagram one line per value of its first
parameter. Each line runs as one RQ job (``run_line_job``) on whichever worker takes it, so a
phase diagram spreads over every worker of the lab.

The job's state lives in SaddleLab's own keys (:mod:`service.jobs.store`); each line runs the task
:func:`service.jobs.task.run_line_job`, which stores every point as it is computed, so a line
whose worker dies is resumed by another from its last stored point.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import redis
from rq import Queue, Retry
from rq.command import send_stop_job_command
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from service.jobs.backend import ACTIVE, JobLimitExceeded, QueueUnavailable, RawJSON, job_kind, line_count, line_total
from service.jobs.store import JobKeys, JobStore, _dumps, _text, owner_tag
from service.redis_link import RedisLink
from service.secrets import InstanceSecret
from service.settings import Settings

log = logging.getLogger("saddlelab.jobs")

QUEUE = "saddlelab"
TASK = "service.jobs.task.run_line_job"
#: How often RQ may retry a line whose worker died (each retry resumes from the stored points).
ABANDON_RETRIES = 5
#: RQ keeps its own record of a finished line this long; SaddleLab's keys carry the results.
RQ_RESULT_TTL = 3600
#: Seconds between two checks, by status polls, that a job's RQ jobs are still alive.
RECONCILE_EVERY = 2.0

_REDIS_ERRORS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)


# ---------------------------------------------------------------------------------------------
# the backend the API uses
# ---------------------------------------------------------------------------------------------


class RQJobs:
    """Jobs on RQ workers; the :class:`~service.jobs.backend.JobBackend` of a lab instance."""

    kind = "rq"

    def __init__(self, link: RedisLink, settings: Settings, secret: InstanceSecret):
        self.link = link
        self.settings = settings
        self.secret = secret
        self.store = JobStore(link.client, settings.result_ttl)
        self.queue = Queue(QUEUE, connection=link.client, serializer=JSONSerializer)
        self._reconciled: dict[str, float] = {}

    def _guard(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except _REDIS_ERRORS as exc:
            raise QueueUnavailable(f"{type(exc).__name__}: {exc}") from exc

    # ---- submit -----------------------------------------------------------------------------
    def submit(self, payload: dict[str, Any], owner: str | None = None, limit: int = 0) -> tuple[str, bool]:
        return self._guard(lambda: self._submit(payload, owner, limit))

    def _submit(self, payload: dict[str, Any], owner: str | None, limit: int) -> tuple[str, bool]:
        job_id = payload["key"]
        keys = JobKeys(job_id)
        tag = owner_tag(owner, self.secret)
        owner_key = JobKeys.owner(tag)
        n = line_count(payload)
        r = self.link.client
        with r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(keys.meta, owner_key)
                    status = pipe.hget(keys.meta, "status")
                    status = _text(status) if status is not None else None
                    if status in ACTIVE or (status == "finished" and pipe.exists(keys.result)):
                        return job_id, True
                    if limit and self._active(owner_key) >= limit:
                        raise JobLimitExceeded(limit)
                    # Lines completed by an earlier run of the same key (failed, cancelled) are kept.
                    done = self.store.lines_done(job_id)
                    pipe.multi()
                    pipe.delete(keys.meta, keys.result)
                    meta = {
                        "payload": _dumps(payload),
                        "status": "queued",
                        "owner": tag,
                        "kind": job_kind(payload),
                        "lines": n,
                        "total": line_total(payload),
                        "created": time.time(),
                        "updated": time.time(),
                        "job_timeout": self.settings.job_timeout,
                        "ttl": self.store.ttl,
                    }
                    for c in range(n):
                        if c not in done:
                            meta[f"rq:{c}"] = enqueue_line(self.queue, job_id, c, self.settings.job_timeout, pipe)
                    pipe.hset(keys.meta, mapping=meta)
                    pipe.expire(keys.meta, self.store.ttl)
                    pipe.sadd(owner_key, job_id)
                    pipe.expire(owner_key, self.store.ttl)
                    pipe.execute()
                    break
                except redis.WatchError:
                    continue
        if len(done) == n:
            self.store.finalize(job_id)
        return job_id, False

    def _active(self, owner_key: str) -> int:
        r = self.link.client
        members = [_text(m) for m in r.smembers(owner_key)]
        if not members:
            return 0
        with r.pipeline(transaction=False) as p:
            for m in members:
                p.hget(JobKeys(m).meta, "status")
            statuses = p.execute()
        gone = [m for m, s in zip(members, statuses, strict=True) if s is None]
        if gone:
            r.srem(owner_key, *gone)
        active = [m for m, s in zip(members, statuses, strict=True) if s is not None and _text(s) in ACTIVE]
        # A job whose lines all died in RQ is failed, not active: reconcile before counting.
        return sum(1 for m in active if self._reconcile(m) in ACTIVE)

    def active_for(self, owner: str | None) -> int:
        return self._guard(lambda: self._active(JobKeys.owner(owner_tag(owner, self.secret))))

    # ---- status -----------------------------------------------------------------------------
    def status(self, job_id: str, detail: bool = False, raw_result: bool = False) -> dict[str, Any] | None:
        """The job's state (JobStatus shape). ``raw_result``: a finished result is left as its stored JSON text
        (:class:`RawJSON`), for the API to send on without parsing and re-serialising a large diagram."""
        return self._guard(lambda: self._status(job_id, detail, raw_result))

    def _status(self, job_id: str, detail: bool, raw_result: bool = False) -> dict[str, Any] | None:
        meta = self.store.meta(job_id)
        if meta is None:
            return None
        if meta["status"] in ACTIVE and time.monotonic() - self._reconciled.get(job_id, -1e9) > RECONCILE_EVERY:
            self._reconcile(job_id, meta)
            meta = self.store.meta(job_id) or meta
        n, total, status = int(meta["lines"]), int(meta["total"]), meta["status"]
        keys = JobKeys(job_id)
        payload = self.store.payload(meta)
        out: dict[str, Any] = {
            "job_id": job_id,
            "status": status,
            "kind": meta.get("kind"),
            "parameters": payload["parameters"],
            "method": payload["method"],
            "backend": self.kind,
            "created": float(meta["created"]),
            "result": None,
            "error": meta.get("error"),
        }
        if status == "finished":
            raw = self.link.client.get(keys.result)
            if raw is None:  # the result expired before the job's record did
                out.update(status="failed", error="the result has expired (result_ttl); submit the sweep again")
                out["progress"] = {"done": 0, "total": total}
            else:
                out["result"] = RawJSON(_text(raw)) if raw_result else json.loads(raw)
                out["progress"] = {"done": total, "total": total}
            out["chunks"] = {"done": n, "total": n}
        else:
            out["progress"] = {"done": self.store.stored_count(job_id, n), "total": total}
            out["chunks"] = {"done": len(self.store.lines_done(job_id)), "total": n}
        if detail:
            out["executions"] = self.store.executions(job_id)
            if status != "finished":
                out["partial"] = {"points": self._partial(job_id, n)}
        return out

    def _partial(self, job_id: str, n: int) -> list[dict[str, Any]]:
        return [pt for c in range(n) for _, pt in sorted(self.store.points(job_id, c).items())]

    def _reconcile(self, job_id: str, meta: dict[str, str] | None = None) -> str | None:
        """An active job whose RQ job failed for good (retries used up, lost) is marked failed."""
        meta = meta or self.store.meta(job_id)
        if meta is None:
            return None
        if len(self._reconciled) > 10_000:
            self._reconciled.clear()
        self._reconciled[job_id] = time.monotonic()
        if meta["status"] not in ACTIVE:
            return meta["status"]
        n = int(meta["lines"])
        done = self.store.lines_done(job_id)
        pending = [(c, meta.get(f"rq:{c}")) for c in range(n) if c not in done]
        ids = [rid for _, rid in pending if rid]
        jobs = dict(zip(ids, Job.fetch_many(ids, connection=self.link.client, serializer=JSONSerializer),
                        strict=True)) if ids else {}
        for c, rid in pending:
            job = jobs.get(rid) if rid else None
            if job is None:
                # Re-read: the line may have completed, or been handed to a new RQ job, meanwhile.
                fresh = self.store.meta(job_id) or {}
                if c in self.store.lines_done(job_id) or fresh.get(f"rq:{c}") != rid:
                    continue
                self.store.fail(job_id, f"line {c} was lost from the queue")
                break
            st = job.get_status(refresh=False)
            if st == JobStatus.FAILED:
                reason = _failure_reason(job)
                self.store.fail(job_id, f"line {c} failed on its worker: {reason}")
                break
            if st in (JobStatus.STOPPED, JobStatus.CANCELED):
                self.store.fail(job_id, f"line {c} was stopped outside SaddleLab")
                break
        fresh = self.store.meta(job_id)
        return fresh["status"] if fresh else None

    # ---- cancel -----------------------------------------------------------------------------
    def cancel(self, job_id: str) -> bool:
        return self._guard(lambda: self._cancel(job_id))

    def _cancel(self, job_id: str) -> bool:
        meta = self.store.meta(job_id)
        if meta is None:
            return False
        if not self.store.set_status(job_id, "cancelled", ACTIVE):
            return True  # already finished, failed or cancelled: nothing to stop
        self.store.record(job_id, {"event": "cancel_requested"})
        r = self.link.client
        for c in range(int(meta["lines"])):
            rid = meta.get(f"rq:{c}")
            if not rid:
                continue
            try:
                job = Job.fetch(rid, connection=r, serializer=JSONSerializer)
            except NoSuchJobError:
                continue
            st = job.get_status(refresh=False)
            if st in (JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.DEFERRED):
                job.cancel()
            elif st == JobStatus.STARTED:
                # The line also sees the flag at its next point; stopping the horse is faster.
                with contextlib.suppress(InvalidJobOperation):
                    send_stop_job_command(r, rid, serializer=JSONSerializer)
        return True


def _failure_reason(job: Job) -> str:
    try:
        res = job.latest_result()
        text = (res.exc_string or "") if res is not None else ""
    except Exception:  # the reason is a courtesy; the failure stands without it
        text = ""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "no reason recorded"


def enqueue_line(queue: Queue, job_id: str, line: int, timeout: int, pipeline: Any = None) -> str:
    """Put one line on the queue; returns the RQ job id."""
    rid = f"saddlelab-{job_id[:20]}-{line}-{uuid.uuid4().hex[:8]}"
    queue.enqueue_call(
        TASK,
        args=(job_id, line),
        job_id=rid,
        timeout=int(timeout),
        result_ttl=RQ_RESULT_TTL,
        failure_ttl=RQ_RESULT_TTL * 24,
        retry=Retry(max=ABANDON_RETRIES),
        description=f"saddlelab line {line} of {job_id[:12]}",
        pipeline=pipeline,
    )
    return rid


