"""SaddleLab's own job state in Redis: the keys, the Lua scripts that change it atomically, and one store object.

RQ's keys are only the transport; everything that matters lives here, with the instance's
``result_ttl``. A *computation* is keyed by the sweep's hash; a *job* is one owner's handle on it.

- ``saddlelab:job:<key>`` (hash): the computation — payload, status, sizes, timestamps, error, and
  ``rq:<line>`` = the RQ job currently carrying each line;
- ``saddlelab:job:<key>:owners`` (set): the owner tags (HMAC of API keys) that want the computation;
- ``saddlelab:handle:<job id>`` (hash): one owner's job — the computation's key, the owner's tag,
  whether the owner cancelled it;
- ``saddlelab:owner:<tag>:jobs`` (set): the owner's job ids, for the concurrent-job limit;
- ``saddlelab:job:<key>:points:<line>`` (hash index -> point JSON): every point, written as it is
  computed. Keyed by index, so a line run twice (a worker presumed dead that was not) stores
  each point once; progress is the number of stored points;
- ``saddlelab:job:<key>:line:<line>`` (string): the line's transitions and diagnostics, written once
  when the line completes (``SET NX``), and ``saddlelab:job:<key>:done`` (set): the completed lines;
- ``saddlelab:job:<key>:result`` (string): the result without its points and curves,
  ``saddlelab:job:<key>:result:points`` (list): the points' JSON in order, and
  ``saddlelab:job:<key>:result:curves`` (list): each traced curve's JSON, written when every line is
  complete (the per-point hashes are then dropped). A page of the result is one ``LRANGE`` of each list,
  sent on as stored text;
- ``saddlelab:job:<key>:log`` (list): one record per start and end of a line's execution.

Writes made by workers go through :meth:`JobStore.write`: retried with bounded backoff while Redis is
unreachable or full (``redis_outage_seconds``), so a worker carries on across a Redis restart.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import redis

from service.jobs.lines import expected_points, job_curves, job_summary
from service.kernel.ownership import ACTIVE, HoldingKeys
from service.kernel.records import RecordKeys, RedisRecord, read_hash, text
from service.serialize import dumps, point_text

# Store the assembled result only while the computation is still active (not cancelled or failed meanwhile).
# KEYS: meta, result, result points, the staged points list, result curves, the staged curves list.
# ARGV: summary, ttl, time, whether the result keeps curves apart ('1') or has none ('0').
_FINISH = """
local cur = redis.call('HGET', KEYS[1], 'status')
if cur ~= 'queued' and cur ~= 'running' then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[2])
for i = 3, 5, 2 do
  redis.call('DEL', KEYS[i])
  if redis.call('EXISTS', KEYS[i + 1]) == 1 then
    redis.call('RENAME', KEYS[i + 1], KEYS[i])
    redis.call('EXPIRE', KEYS[i], ARGV[2])
  end
end
redis.call('HSET', KEYS[1], 'status', 'finished', 'updated', ARGV[3], 'finished', ARGV[3], 'curves', ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
"""
# One owner withdraws from an active computation; it is cancelled when no owner is left.
# KEYS: meta, owners, handle. ARGV: owner tag, time. Returns -1 (not active: nothing changes), 0 (others
# still want it), 1 (cancelled).
_WITHDRAW = """
local cur = redis.call('HGET', KEYS[1], 'status')
if cur ~= 'queued' and cur ~= 'running' then return -1 end
redis.call('HSET', KEYS[3], 'cancelled', '1')
redis.call('SREM', KEYS[2], ARGV[1])
if redis.call('SCARD', KEYS[2]) > 0 then return 0 end
redis.call('HSET', KEYS[1], 'status', 'cancelled', 'updated', ARGV[2])
return 1
"""


# ---------------------------------------------------------------------------------------------
# keys
# ---------------------------------------------------------------------------------------------


class JobKeys(RecordKeys):
    """The keys of one computation (by the sweep's key)."""

    KIND = "job"
    #: Where each owner's job handles are kept.
    HOLDINGS = HoldingKeys("saddlelab:handle", "jobs")

    def __init__(self, key: str):
        super().__init__(key)
        self.owners = self.part("owners")
        self.result_points = self.part("result", "points")
        self.result_curves = self.part("result", "curves")
        self.done = self.part("done")

    def points(self, line: int) -> str:
        return self.part("points", line)

    def line(self, line: int) -> str:
        return self.part("line", line)

    handle = staticmethod(HOLDINGS.handle)
    owner = staticmethod(HOLDINGS.owner)


class JobStore(RedisRecord):
    """Reads and writes one instance's job state; used by the API and inside the workers."""

    def __init__(self, client: redis.Redis, ttl: int, retry_seconds: float = 0.0):
        super().__init__(client, ttl, retry_seconds)
        self._finish = client.register_script(_FINISH)
        self._withdraw = client.register_script(_WITHDRAW)

    def record_key(self, key: str) -> str:
        return JobKeys(key).meta

    def log_key(self, key: str) -> str:
        return JobKeys(key).log

    # ---- reading ----------------------------------------------------------------------------
    def handle(self, job_id: str) -> dict[str, str] | None:
        return read_hash(self.r, JobKeys.handle(job_id))

    def computation_of(self, job_id: str) -> str | None:
        """The key of the computation behind the job ``job_id`` (whoever owns it)."""
        h = self.handle(job_id)
        return h["key"] if h else None

    def points(self, key: str, line: int) -> dict[int, dict[str, Any]]:
        raw = self.r.hgetall(JobKeys(key).points(line))
        return {int(k): json.loads(v) for k, v in raw.items()}

    def point_texts(self, key: str, line: int) -> dict[int, str]:
        return {int(k): text(v) for k, v in self.r.hgetall(JobKeys(key).points(line)).items()}

    def lines_done(self, key: str) -> set[int]:
        return {int(x) for x in self.r.smembers(JobKeys(key).done)}

    def line_counts(self, key: str, lines: int) -> list[int]:
        keys = JobKeys(key)
        with self.r.pipeline(transaction=False) as p:
            for c in range(lines):
                p.hlen(keys.points(c))
            return [int(n) for n in p.execute()]

    def stored_count(self, key: str, lines: int) -> int:
        return sum(self.line_counts(key, lines))

    def result_page(self, key: str, offset: int, limit: int, curve_offset: int = 0,
                    curve_limit: int = 0) -> tuple[str, list[str], int, list[str], int] | None:
        """(result without points and curves, the page's point texts, number of points, the curve page's texts,
        number of curves), None when the result is gone."""
        keys = JobKeys(key)
        with self.r.pipeline(transaction=False) as p:
            p.get(keys.result)
            p.lrange(keys.result_points, offset, offset + limit - 1)
            p.llen(keys.result_points)
            p.lrange(keys.result_curves, curve_offset, curve_offset + curve_limit - 1)
            p.llen(keys.result_curves)
            summary, page, total, curves, n_curves = p.execute()
        if summary is None:
            return None
        return text(summary), [text(x) for x in page], int(total), [text(x) for x in curves], int(n_curves)

    # ---- writing ----------------------------------------------------------------------------
    def withdraw(self, key: str, job_id: str, tag: str) -> int:
        """One owner cancels: -1 nothing to cancel, 0 others still want it, 1 the computation is cancelled."""
        keys = JobKeys(key)
        return int(self._withdraw(keys=[keys.meta, keys.owners, JobKeys.handle(job_id)], args=[tag, time.time()]))

    def free_points(self, key: str, lines: int) -> None:
        """Drop every stored point of a computation (DEL works even when Redis is full)."""
        keys = JobKeys(key)
        self.r.delete(*(keys.points(c) for c in range(lines)), keys.log)

    def add_point(self, key: str, line: int, index: int, point: dict[str, Any]) -> None:
        name, stored = JobKeys(key).points(line), point_text(point)

        def put() -> None:
            with self.r.pipeline(transaction=False) as p:
                p.hsetnx(name, str(index), stored)
                p.expire(name, self.ttl)
                p.execute()

        self.write(put)

    def complete_line(self, key: str, line: int, outcome: dict[str, Any]) -> None:
        """Store a line's transitions once; assemble the result when it was the last line."""
        keys, outcome_text = JobKeys(key), dumps(outcome)

        def put() -> None:
            with self.r.pipeline() as p:  # MULTI: the line's outcome and its completion mark go together
                p.set(keys.line(line), outcome_text, nx=True, ex=self.ttl)
                p.sadd(keys.done, line)
                p.expire(keys.done, self.ttl)
                p.execute()

        self.write(put)
        self.write(lambda: self.finalize(key))

    def finalize(self, key: str) -> bool:
        """Assemble and store the result if every line is complete and the computation is still active."""
        meta = self.meta(key)
        if meta is None or meta["status"] not in ACTIVE:
            return False
        keys = JobKeys(key)
        n = int(meta["lines"])
        if len(self.lines_done(key)) < n:
            return False
        payload = self.payload(meta)
        expected = expected_points(payload)
        outcomes, points = [], []
        for c in range(n):
            raw = self.r.get(keys.line(c))
            if raw is None:
                self.fail(key, f"the stored outcome of line {c} has expired; submit the sweep again")
                return False
            outcomes.append(json.loads(raw))
            pts = self.point_texts(key, c)
            if sorted(pts) != list(range(expected)):
                self.fail(key, f"line {c} completed with {len(pts)} of {expected} points stored")
                return False
            points.extend(pts[i] for i in range(expected))
        summary = job_summary(payload, outcomes)
        traced = job_curves(payload, outcomes)
        curves = [dumps(c) for c in traced or []]
        # The points are stored as JSON already (tagged with their coordinates): staged as a list, never re-parsed.
        tag = uuid.uuid4().hex[:8]
        staged, staged_curves = f"{keys.result_points}:staged:{tag}", f"{keys.result_curves}:staged:{tag}"
        with self.r.pipeline(transaction=False) as p:
            for name, texts in ((staged, points), (staged_curves, curves)):
                for i in range(0, len(texts), 1000):
                    p.rpush(name, *texts[i:i + 1000])
                p.expire(name, 3600)
            p.execute()
        done = bool(self._finish(keys=[keys.meta, keys.result, keys.result_points, staged, keys.result_curves,
                                       staged_curves],
                                 args=[dumps(summary), self.ttl, time.time(), "0" if traced is None else "1"]))
        if done:
            # The result holds every point now; the per-point hashes are no longer needed.
            self.r.delete(*(keys.points(c) for c in range(n)))
        else:
            self.r.delete(staged, staged_curves)
        return done
