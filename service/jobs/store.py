"""SaddleLab's own job state in Redis: the keys, the Lua scripts that change it atomically, and one store object.

RQ's keys are only the transport; everything that matters lives here, with the instance's
``result_ttl``:

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
"""

from __future__ import annotations

import json
import time
from typing import Any

import redis

from service.jobs.backend import ACTIVE
from service.jobs.lines import diagram_summary, line_summary
from service.secrets import InstanceSecret

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



# ---------------------------------------------------------------------------------------------
# keys and the state of one job
# ---------------------------------------------------------------------------------------------


def owner_tag(owner: str | None, secret: InstanceSecret) -> str:
    """Owners are API keys: only a keyed hash (HMAC under the instance secret) of them is written to Redis."""
    return "open" if owner is None else secret.tag(f"key:{owner}")


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
        if payload["method"] == "boundary":  # one line, no points: its outcome is the result
            raw = self.r.get(keys.line(0))
            if raw is None:
                self.fail(job_id, "the stored outcome of the boundary job has expired; submit it again")
                return False
            return bool(self._finish(keys=[keys.meta, keys.result], args=[_text(raw), self.ttl, time.time()]))
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


