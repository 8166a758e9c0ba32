"""Sweeps and phase diagrams as RQ jobs, with SaddleLab's own state in Redis.

A SaddleLab job's id is the sweep's key (the hash of spec, parameters, values, method, solver
options and solver version), so identical submissions share one job. The job is cut into
*lines*: a one-parameter sweep is one line, a phase diagram one line per value of its first
parameter. Each line runs as one RQ job (``run_line_job``) on whichever worker takes it, so a
phase diagram spreads over every worker of the lab.

Everything that matters lives in SaddleLab's keys, with the instance's ``result_ttl`` (RQ's own
result TTL is minutes, and RQ's keys are only the transport):

- ``saddlelab:job:<id>`` (hash): payload, status, owner (hashed), sizes, timestamps, error, and
  ``rq:<line>`` = the RQ job currently carrying each line;
- ``saddlelab:job:<id>:points:<line>`` (hash index -> point JSON): every point, written as it is
  computed. Keyed by index, so a line run twice (a worker presumed dead that was not) stores
  each point once; progress is the number of stored points;
- ``saddlelab:job:<id>:line:<line>`` (string): the line's transitions and diagnostics, written once
  when the line completes (``SET NX``), and ``saddlelab:job:<id>:done`` (set): the completed lines;
- ``saddlelab:job:<id>:result`` (string): the assembled result, written when every line is complete
  (the per-point hashes are then dropped);
- ``saddlelab:job:<id>:log`` (list): one record per start and end of a line's execution;
- ``saddlelab:owner:<hash of the API key>:jobs`` (set): the owner's jobs, for the concurrent-job limit.

A line whose worker dies is found by RQ's abandoned-job detection (the worker's short heartbeat
TTL, see :mod:`service.worker`) and retried; the retry reads the stored points and resumes after
them (:func:`service.sweep_runner.run_line`). A worker asked to stop (SIGTERM) hands its line back
to the queue after the current point.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import redis
from rq import Queue, Retry, get_current_job
from rq.command import send_stop_job_command
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer
from rq.timeouts import JobTimeoutException

from service.jobs_local import JobLimitExceeded, QueueUnavailable, RawJSON, line_total
from service.redis_link import RedisLink
from service.settings import Settings
from service.sweep_runner import Cancelled, diagram_summary, fixed_for_row, line_summary, run_line, tag_point

log = logging.getLogger("saddlelab.jobs")

QUEUE = "saddlelab"
TASK = "service.jobs_rq.run_line_job"
ACTIVE = ("queued", "running")
#: How often RQ may retry a line whose worker died (each retry resumes from the stored points).
ABANDON_RETRIES = 5
#: RQ keeps its own record of a finished line this long; SaddleLab's keys carry the results.
RQ_RESULT_TTL = 3600
#: Seconds between two checks of the cancel flag while points stream in.
CANCEL_POLL = 0.25
#: Seconds between two checks, by status polls, that a job's RQ jobs are still alive.
RECONCILE_EVERY = 2.0

#: Set in a work horse when its worker was asked to stop: the line is handed back after this point.
HANDOFF = threading.Event()

_REDIS_ERRORS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)

# Status changes are compare-and-set, so a cancel is never overwritten by a late worker.
_SET_STATUS = """
local cur = redis.call('HGET', KEYS[1], 'status')
if not cur then return 0 end
for i = 3, #ARGV do
  if cur == ARGV[i] then
    redis.call('HSET', KEYS[1], 'status', ARGV[1], 'updated', ARGV[2])
    return 1
  end
end
return 0
"""
# Store the assembled result only while the job is still active (not cancelled or failed meanwhile).
_FINISH = """
local cur = redis.call('HGET', KEYS[1], 'status')
if cur ~= 'queued' and cur ~= 'running' then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[2])
redis.call('HSET', KEYS[1], 'status', 'finished', 'updated', ARGV[3], 'finished', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
"""


class HandedOff(Exception):
    """Raised inside a line when its worker is stopping: the line goes back to the queue."""


# ---------------------------------------------------------------------------------------------
# keys and the state of one job
# ---------------------------------------------------------------------------------------------


def owner_tag(owner: str | None) -> str:
    """Owners are API keys: only a hash of them is written to Redis."""
    return "open" if owner is None else hashlib.sha256(owner.encode()).hexdigest()[:16]


class JobKeys:
    def __init__(self, job_id: str):
        self.id = job_id
        self.meta = f"saddlelab:job:{job_id}"
        self.result = f"{self.meta}:result"
        self.log = f"{self.meta}:log"
        self.done = f"{self.meta}:done"

    def points(self, line: int) -> str:
        return f"{self.meta}:points:{line}"

    def line(self, line: int) -> str:
        return f"{self.meta}:line:{line}"

    @staticmethod
    def owner(tag: str) -> str:
        return f"saddlelab:owner:{tag}:jobs"


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, allow_nan=False, separators=(",", ":"))


class JobStore:
    """Reads and writes one instance's job state; used by the API and inside the workers."""

    def __init__(self, client: redis.Redis, ttl: int):
        self.r = client
        self.ttl = int(ttl)
        self._set_status = client.register_script(_SET_STATUS)
        self._finish = client.register_script(_FINISH)

    # ---- reading ----------------------------------------------------------------------------
    def meta(self, job_id: str) -> dict[str, str] | None:
        raw = self.r.hgetall(JobKeys(job_id).meta)
        return {_text(k): _text(v) for k, v in raw.items()} if raw else None

    @staticmethod
    def payload(meta: dict[str, str]) -> dict[str, Any]:
        return json.loads(meta["payload"])

    def points(self, job_id: str, line: int) -> dict[int, dict[str, Any]]:
        raw = self.r.hgetall(JobKeys(job_id).points(line))
        return {int(k): json.loads(v) for k, v in raw.items()}

    def lines_done(self, job_id: str) -> set[int]:
        return {int(x) for x in self.r.smembers(JobKeys(job_id).done)}

    def stored_count(self, job_id: str, lines: int) -> int:
        keys = JobKeys(job_id)
        with self.r.pipeline(transaction=False) as p:
            for c in range(lines):
                p.hlen(keys.points(c))
            return int(sum(p.execute()))

    def executions(self, job_id: str) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.r.lrange(JobKeys(job_id).log, 0, -1)]

    # ---- writing ----------------------------------------------------------------------------
    def set_status(self, job_id: str, status: str, allowed: tuple[str, ...]) -> bool:
        return bool(self._set_status(keys=[JobKeys(job_id).meta], args=[status, time.time(), *allowed]))

    def fail(self, job_id: str, error: str) -> None:
        if self.set_status(job_id, "failed", ACTIVE):
            self.r.hset(JobKeys(job_id).meta, "error", error)

    def add_point(self, job_id: str, line: int, index: int, point: dict[str, Any]) -> None:
        key = JobKeys(job_id).points(line)
        with self.r.pipeline(transaction=False) as p:
            p.hsetnx(key, str(index), _dumps(point))
            p.expire(key, self.ttl)
            p.execute()

    def record(self, job_id: str, entry: dict[str, Any]) -> None:
        key = JobKeys(job_id).log
        with self.r.pipeline(transaction=False) as p:
            p.rpush(key, _dumps({"time": time.time(), **entry}))
            p.expire(key, self.ttl)
            p.execute()

    def complete_line(self, job_id: str, line: int, outcome: dict[str, Any]) -> None:
        """Store a line's transitions once; assemble the job when it was the last line."""
        keys = JobKeys(job_id)
        with self.r.pipeline() as p:  # MULTI: the line's outcome and its completion mark go together
            p.set(keys.line(line), _dumps(outcome), nx=True, ex=self.ttl)
            p.sadd(keys.done, line)
            p.expire(keys.done, self.ttl)
            p.execute()
        self.finalize(job_id)

    def finalize(self, job_id: str) -> bool:
        """Assemble and store the result if every line is complete and the job is still active."""
        meta = self.meta(job_id)
        if meta is None or meta["status"] not in ACTIVE:
            return False
        keys = JobKeys(job_id)
        n = int(meta["lines"])
        if len(self.lines_done(job_id)) < n:
            return False
        payload = self.payload(meta)
        expected = len(payload["axes"][-1])
        outcomes, points = [], []
        for c in range(n):
            raw = self.r.get(keys.line(c))
            if raw is None:
                self.fail(job_id, f"the stored outcome of line {c} has expired; submit the sweep again")
                return False
            outcomes.append(json.loads(raw))
            pts = {int(k): _text(v) for k, v in self.r.hgetall(keys.points(c)).items()}
            if sorted(pts) != list(range(expected)):
                self.fail(job_id, f"line {c} completed with {len(pts)} of {expected} points stored")
                return False
            points.extend(pts[i] for i in range(expected))
        if len(payload["parameters"]) == 2:
            summary = diagram_summary(payload, [o["transitions"] for o in outcomes])
        else:
            summary = line_summary(payload, outcomes[0])
        # The points are stored as JSON already (tagged with their coordinates): splice, do not re-parse.
        result = _dumps(summary)[:-1] + ',"points":[' + ",".join(points) + "]}"
        done = bool(self._finish(keys=[keys.meta, keys.result], args=[result, self.ttl, time.time()]))
        if done:
            # The result holds every point now; the per-point hashes are no longer needed.
            self.r.delete(*(keys.points(c) for c in range(n)))
        return done


# ---------------------------------------------------------------------------------------------
# the backend the API uses
# ---------------------------------------------------------------------------------------------


class RQJobs:
    """Jobs on RQ workers; same API as :class:`service.jobs_local.LocalJobs`."""

    kind = "rq"

    def __init__(self, link: RedisLink, settings: Settings):
        self.link = link
        self.settings = settings
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
        tag = owner_tag(owner)
        owner_key = JobKeys.owner(tag)
        two = len(payload["parameters"]) == 2
        n = len(payload["axes"][0]) if two else 1
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
                        "kind": "phase_diagram" if two else "sweep",
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
        return self._guard(lambda: self._active(JobKeys.owner(owner_tag(owner))))

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


# ---------------------------------------------------------------------------------------------
# the task a worker runs
# ---------------------------------------------------------------------------------------------


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
    outcome = {k: out[k] for k in ("transitions", "diagnostics")}
    store.record(job_id, {**who, "event": "completed", "reused": out["reused"], "computed": out["computed"]})
    store.complete_line(job_id, line, outcome)
    return {"outcome": "completed", "reused": out["reused"], "computed": out["computed"]}

