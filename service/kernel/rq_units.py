"""Units of work on RQ, for every kind: enqueueing one, stopping one, and finding those RQ failed or lost.

RQ is only the transport: a kind's record says which RQ job carries each unit now (field ``rq:<unit>``), and a
unit's own task stores its progress in SaddleLab's keys. A unit whose worker dies is found by RQ's abandoned-job
detection (the worker's short heartbeat) and retried (``ABANDON_RETRIES``); the retry resumes from what the unit
stored. A unit RQ gave up on, or lost, fails its computation with the reason (:func:`lost_unit`), checked by
status reads at most every ``RECONCILE_EVERY`` seconds per computation (:class:`Reconciler`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any, TypeVar

import redis
from rq import Queue, Retry
from rq.command import send_stop_job_command
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from service.kernel.ownership import ACTIVE, QueueUnavailable
from service.redis_link import UNREACHABLE, RedisLink, describe, is_full

U = TypeVar("U")

#: The one queue every kind's units go on: every worker of the lab takes any of them.
QUEUE = "saddlelab"
#: How often RQ may retry a unit whose worker died (each retry resumes from what the unit stored).
ABANDON_RETRIES = 5
#: RQ keeps its own record of a finished unit this long; SaddleLab's keys carry the results.
RQ_RESULT_TTL = 3600
#: Seconds between two checks, by status reads, that a computation's RQ jobs are still alive.
RECONCILE_EVERY = 2.0


def redis_guard(link: RedisLink, fn: Callable[[], Any]) -> Any:
    """``fn()``, with Redis unreachable or full turned into :class:`QueueUnavailable` (a 503 naming the cause,
    never a 500)."""
    try:
        return fn()
    except UNREACHABLE as exc:
        raise QueueUnavailable(describe(exc)) from exc
    except redis.exceptions.ResponseError as exc:
        if not is_full(exc):
            raise
        link.saw_full(exc)
        raise QueueUnavailable(describe(exc)) from exc


def enqueue_unit(queue: Queue, task: str, args: tuple[Any, ...], rid: str, timeout: int, description: str,
                 pipeline: Any = None) -> str:
    """Put one unit on the queue as RQ job ``rid`` (retried when its worker dies); returns ``rid``."""
    queue.enqueue_call(
        task,
        args=args,
        job_id=rid,
        timeout=int(timeout),
        result_ttl=RQ_RESULT_TTL,
        failure_ttl=RQ_RESULT_TTL * 24,
        retry=Retry(max=ABANDON_RETRIES),
        description=description,
        pipeline=pipeline,
    )
    return rid


def stop_rq_job(client: Any, rid: str) -> None:
    """Cancel RQ job ``rid`` if it waits, stop its work horse if it runs; nothing if it is gone or ended."""
    try:
        job = Job.fetch(rid, connection=client, serializer=JSONSerializer)
    except NoSuchJobError:
        return
    st = job.get_status(refresh=False)
    if st in (JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.DEFERRED):
        job.cancel()
    elif st == JobStatus.STARTED:
        with contextlib.suppress(InvalidJobOperation):
            send_stop_job_command(client, rid, serializer=JSONSerializer)


def fetch_jobs(client: Any, ids: list[str]) -> dict[str, Job | None]:
    """RQ's jobs by id, read in a plain pipeline: a full Redis refuses a MULTI (as ``Job.fetch_many`` sends) even
    when it holds only reads, but still serves the reads themselves."""
    if not ids:
        return {}
    with client.pipeline(transaction=False) as pipe:
        for rid in ids:
            pipe.hgetall(Job.key_for(rid))
        rows = pipe.execute()
    jobs: dict[str, Job | None] = {}
    for rid, row in zip(ids, rows, strict=True):
        job = None
        if row:
            job = Job(rid, connection=client, serializer=JSONSerializer)
            job.restore(row)
        jobs[rid] = job
    return jobs


def failure_reason(job: Job) -> str:
    try:
        res = job.latest_result()
        text = (res.exc_string or "") if res is not None else ""
    except Exception:  # the reason is a courtesy; the failure stands without it
        text = ""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "no reason recorded"


def lost_unit(client: Any, pending: list[tuple[U, str | None]], label: Callable[[U], str],
              moved_on: Callable[[U, str | None], bool]) -> str | None:
    """Why the computation fails, if one of its ``pending`` units (unit, RQ job id) failed for good in RQ or was
    lost from the queue; None when every one is still alive. ``moved_on(unit, rid)``: the unit completed, or went
    to another RQ job, since ``pending`` was read (re-read before a missing RQ job is called lost)."""
    jobs = fetch_jobs(client, [rid for _, rid in pending if rid])
    for unit, rid in pending:
        job = jobs.get(rid) if rid else None
        if job is None:
            if moved_on(unit, rid):
                continue
            return f"{label(unit)} was lost from the queue"
        st = job.get_status(refresh=False)
        if st == JobStatus.FAILED:
            return f"{label(unit)} failed on its worker: {failure_reason(job)}"
        if st in (JobStatus.STOPPED, JobStatus.CANCELED):
            return f"{label(unit)} was stopped outside SaddleLab"
    return None


class Reconciler:
    """When each computation was last checked against RQ (bounded: forgotten past 10 000)."""

    def __init__(self) -> None:
        self._at: dict[str, float] = {}

    def due(self, key: str) -> bool:
        return time.monotonic() - self._at.get(key, -1e9) > RECONCILE_EVERY

    def mark(self, key: str) -> None:
        if len(self._at) > 10_000:
            self._at.clear()
        self._at[key] = time.monotonic()

    def check(self, store: Any, key: str, meta: dict[str, str] | None, link: RedisLink,
              pending: Callable[[dict[str, str]], list[tuple[U, str | None]]], label: Callable[[U], str],
              moved_on: Callable[[U, str | None], bool]) -> str | None:
        """Mark an active computation failed when one of its ``pending(meta)`` units failed for good in RQ or was
        lost (:func:`lost_unit`); its status now (None: gone). A full Redis that cannot take the verdict leaves the
        status as it is (it is still read)."""
        meta = meta or store.meta(key)
        if meta is None:
            return None
        self.mark(key)
        if meta["status"] not in ACTIVE:
            return meta["status"]
        try:
            reason = lost_unit(link.client, pending(meta), label, moved_on)
            if reason is not None:
                store.fail(key, reason)
        except redis.exceptions.ResponseError as exc:
            if not is_full(exc):
                raise
            link.saw_full(exc)
        fresh = store.meta(key)
        return fresh["status"] if fresh else None
