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
from service.kernel.pages import read_list, read_points
from service.kernel.records import RecordKeys, RedisRecord, read_hash, text
from service.kernel.stored_bytes import check
from service.redis_link import is_full
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
# Append points first .. first + count - 1 of a line's hash to a list, in order; the first missing index, or -1.
# KEYS: the line's points, the list. ARGV: first, count, ttl of the list.
_COPY = """
for i = tonumber(ARGV[1]), tonumber(ARGV[1]) + tonumber(ARGV[2]) - 1 do
  local v = redis.call('HGET', KEYS[1], tostring(i))
  if not v then return i end
  redis.call('RPUSH', KEYS[2], v)
end
redis.call('EXPIRE', KEYS[2], ARGV[3])
return -1
"""
# Store a point once, counting it and its bytes. KEYS: the line's points, the computation's byte count, its point
# count. ARGV: index, text, ttl. Returns the computation's bytes after it, or -1 when the point was stored already.
_ADD_POINT = """
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return -1 end
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('INCR', KEYS[3])
redis.call('EXPIRE', KEYS[3], ARGV[3])
local total = redis.call('INCRBY', KEYS[2], string.len(ARGV[2]))
redis.call('EXPIRE', KEYS[2], ARGV[3])
return total
"""
#: Points one call of the copy script appends (a script blocks Redis while it runs: a few MB at a time).
COPY_CHUNK = 32
#: Seconds a staged result lives if its assembly is abandoned.
STAGED_TTL = 3600
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
        #: How many points are stored (one counter for the whole computation: progress in O(1)).
        self.stored = self.part("stored")

    def points(self, line: int) -> str:
        return self.part("points", line)

    def line(self, line: int) -> str:
        return self.part("line", line)

    handle = staticmethod(HOLDINGS.handle)
    owner = staticmethod(HOLDINGS.owner)


class JobStore(RedisRecord):
    """Reads and writes one instance's job state; used by the API and inside the workers."""

    KEYS = JobKeys
    SCRIPTS = (("_finish", _FINISH), ("_copy", _COPY), ("_add_point", _ADD_POINT))

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

    def count(self, key: str, line: int) -> int:
        """Points stored of one line."""
        return int(self.r.hlen(JobKeys(key).points(line)))

    def stored_count(self, key: str) -> int:
        """Points stored over every line, from the computation's counter (one read, whatever its lines)."""
        return int(self.r.get(JobKeys(key).stored) or 0)

    def lines_done_count(self, key: str) -> int:
        return int(self.r.scard(JobKeys(key).done))

    def result_page(self, key: str, offset: int, limit: int, curve_offset: int = 0, curve_limit: int = 0,
                    max_bytes: int = 0) -> tuple[str, list[str], int, list[str], int] | None:
        """(result without points and curves, the page's point texts, number of points, the curve page's texts,
        number of curves), None when the result is gone. Each page holds at most ``max_bytes`` of text (0: no
        bound) beyond its first item, read a few items at a time (:mod:`service.kernel.pages`)."""
        keys = JobKeys(key)
        with self.r.pipeline(transaction=False) as p:
            p.get(keys.result)
            p.llen(keys.result_points)
            p.llen(keys.result_curves)
            summary, total, n_curves = p.execute()
        if summary is None:
            return None
        page = read_list(self.r, keys.result_points, offset, limit, max_bytes)
        curves = read_list(self.r, keys.result_curves, curve_offset, curve_limit, max_bytes)
        return text(summary), page, int(total), curves, int(n_curves)

    def partial_page(self, key: str, counts: list[int], offset: int, limit: int, max_bytes: int = 0) -> list[str]:
        """The stored points of a page of the partial points (line after line, each in index order), read only
        for the lines the page covers, by index (``HKEYS``, then the chosen points), within ``max_bytes``."""
        out: list[str] = []
        skip = offset
        for line, count in enumerate(counts):
            if len(out) >= limit:
                break
            if skip >= count:
                skip -= count
                continue
            name = JobKeys(key).points(line)
            chosen = sorted(int(i) for i in self.r.hkeys(name))[skip:skip + limit - len(out)]
            skip = 0
            budget = max_bytes - sum(len(t) for t in out) if max_bytes else 0
            if max_bytes and out and budget <= 0:
                break
            taken = read_points(self.r, name, chosen, budget, first=not out)
            out.extend(taken)
            if len(taken) < len(chosen):
                break
        return out

    # ---- writing ----------------------------------------------------------------------------
    def free_points(self, key: str, lines: int, keep_log: bool = False) -> None:
        """Drop every stored point of a computation (DEL works even when Redis is full), and its execution log
        unless ``keep_log``."""
        keys = JobKeys(key)
        self.r.delete(*(keys.points(c) for c in range(lines)), keys.part("bytes"), keys.stored,
                      *(() if keep_log else (keys.log,)))

    def add_point(self, key: str, line: int, index: int, point: dict[str, Any], limit: float = 0,
                  points: int = 0) -> None:
        """Store a point once (a resumed line's points are counted once); :class:`StoredBytesExceeded` when the
        computation's ``points`` would pass ``limit`` bytes (:mod:`service.kernel.stored_bytes`)."""
        keys, stored = JobKeys(key), point_text(point)
        total = int(self.write(lambda: self._add_point(keys=[keys.points(line), keys.part("bytes"), keys.stored],
                                                        args=[index, stored, self.ttl])))
        if total >= 0:
            check(limit, total, len(stored) if total == len(stored) else None, points)

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
        """Assemble and store the result if every line is complete and the computation is still active.

        The points never leave Redis: a script appends each line's stored texts, in index order and
        ``COPY_CHUNK`` at a time, to a staged list, which becomes the result's (memory of the assembling
        process is independent of the result's size). An assembly that cannot complete fails the computation
        with its reason and drops its points, so the owner's job slot is released and nothing is left behind."""
        meta = self.meta(key)
        if meta is None or meta["status"] not in ACTIVE:
            return False
        keys = JobKeys(key)
        n = int(meta["lines"])
        if len(self.lines_done(key)) < n:
            return False
        payload = self.payload(meta)
        expected = expected_points(payload)
        tag = uuid.uuid4().hex[:8]
        staged, staged_curves = f"{keys.result_points}:staged:{tag}", f"{keys.result_curves}:staged:{tag}"
        try:
            reason = self._stage(key, n, expected, staged)
            if reason is None:
                outcomes = [json.loads(raw) for raw in self.r.mget([keys.line(c) for c in range(n)])]
                summary = job_summary(payload, outcomes)
                traced = job_curves(payload, outcomes)
                curves = [dumps(c) for c in traced or []]
                with self.r.pipeline(transaction=False) as p:
                    for i in range(0, len(curves), 1000):
                        p.rpush(staged_curves, *curves[i:i + 1000])
                    p.expire(staged_curves, STAGED_TTL)
                    p.execute()
        except (MemoryError, redis.exceptions.ResponseError) as exc:
            if isinstance(exc, redis.exceptions.ResponseError) and is_full(exc):
                raise  # Redis is full: the worker waits for room, then frees the points (task.py)
            reason = f"the result could not be assembled: {type(exc).__name__}: {exc}"
        if reason is not None:
            self.r.delete(staged, staged_curves)
            self.fail(key, reason)
            self.free_points(key, n, keep_log=True)
            return False
        done = bool(self._finish(keys=[keys.meta, keys.result, keys.result_points, staged, keys.result_curves,
                                       staged_curves],
                                 args=[dumps(summary), self.ttl, time.time(), "0" if traced is None else "1"]))
        if done:
            # The result holds every point now; the per-point hashes are no longer needed.
            self.r.delete(*(keys.points(c) for c in range(n)), keys.part("bytes"), keys.stored)
        else:
            self.r.delete(staged, staged_curves)
        return done

    def _stage(self, key: str, lines: int, expected: int, staged: str) -> str | None:
        """Append every line's points, in order, to the list ``staged`` (in Redis); why not, when a line's outcome
        or one of its points is missing."""
        keys = JobKeys(key)
        with self.r.pipeline(transaction=False) as p:
            for c in range(lines):
                p.exists(keys.line(c))
                p.hlen(keys.points(c))
            found = p.execute()
        for c in range(lines):
            if not found[2 * c]:
                return f"the stored outcome of line {c} has expired; submit the sweep again"
            if int(found[2 * c + 1]) != expected:
                return f"line {c} completed with {found[2 * c + 1]} of {expected} points stored"
        for c in range(lines):
            for first in range(0, expected, COPY_CHUNK):
                missing = int(self._copy(keys=[keys.points(c), staged],
                                         args=[first, min(COPY_CHUNK, expected - first), STAGED_TTL]))
                if missing >= 0:
                    return f"line {c} completed without its point {missing}"
        return None
