"""An experiment's state in Redis: its record, each chain's checkpoint and blocks, its points and result.

Keys, all with the instance's ``result_ttl``:

- ``saddlelab:experiment:<id>`` (hash): payload, status, points, chains, timestamps, error,
  job timeout, TTL, and ``rq:<point>:<chain>`` = the RQ job carrying each chain now;
- ``…:chain:<point>:<chain>`` (hash): ``checkpoint`` (the last one), ``draws`` (kept draws it has),
  ``progress`` (warmup steps and draws done) and ``block:<first draw>`` = each block's draws, written together
  by one script, only forwards; ``run:<run>`` = the chain's sampling seconds when that submission first ran it;
- ``…:done:<point>`` (hash chain -> outcome JSON): the completed chains;
- ``…:point:<point>``, ``…:series:<point>`` (strings): the assembled point and its per-draw series, written
  once (``SET NX``), after which the point's chain hashes are dropped — unless a chain stopped early (its time
  limit), which keeps them for a later submission to resume; ``…:points`` (set): the assembled points;
- ``…:result`` (string): the result (``complete`` in the record says whether every draw was made);
  ``…:log`` (list): one record per start and end of a chain's execution;
- who holds the experiment (jobs of API keys): the kernel's (:mod:`service.kernel.rq_backend`).
"""

from __future__ import annotations

import json
import time
from typing import Any

from service.kernel.records import RecordKeys, RedisRecord, text
from service.serialize import dumps as _dumps

# Store the assembled result only while the experiment is still active (not cancelled or failed meanwhile).
_FINISH = """
local cur = redis.call('HGET', KEYS[1], 'status')
if cur ~= 'queued' and cur ~= 'running' then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[2])
redis.call('HSET', KEYS[1], 'status', 'finished', 'updated', ARGV[3], 'finished', ARGV[3], 'complete', ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
"""

# The checkpoint and the block it follows go together, and never backwards (a chain run twice draws the same).
_SAVE_CHAIN = """
local cur = redis.call('HGET', KEYS[1], 'progress')
if cur and tonumber(cur) > tonumber(ARGV[6]) then return 0 end
redis.call('HSET', KEYS[1], 'checkpoint', ARGV[2], 'draws', ARGV[1], 'progress', ARGV[6])
if ARGV[3] ~= '' then redis.call('HSETNX', KEYS[1], 'block:' .. ARGV[3], ARGV[4]) end
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""
# A point is stored once; then its chains' checkpoints and blocks are no longer needed.
_PUT_POINT = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[4]) == false then return 0 end
redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[4])
redis.call('SADD', KEYS[3], ARGV[3])
redis.call('EXPIRE', KEYS[3], ARGV[4])
for i = 4, #KEYS do redis.call('DEL', KEYS[i]) end
return 1
"""


class ExperimentKeys(RecordKeys):
    KIND = "experiment"

    def __init__(self, job_id: str):
        super().__init__(job_id)
        self.points = self.part("points")

    def chain(self, point: int, chain: int) -> str:
        return self.part("chain", point, chain)

    def done(self, point: int) -> str:
        return self.part("done", point)

    def point(self, point: int) -> str:
        return self.part("point", point)

    def series(self, point: int) -> str:
        return self.part("series", point)


class RedisStore(RedisRecord):
    """:class:`~service.experiments.store.ExperimentStore` in Redis; used by the API and inside the workers."""

    KEYS = ExperimentKeys
    SCRIPTS = (("_finish", _FINISH), ("_save_chain", _SAVE_CHAIN), ("_put_point", _PUT_POINT))

    # ---- the record -------------------------------------------------------------------------
    def mark_started(self, job_id: str) -> float:
        """Running from now (once); the time the first chain started."""
        keys = ExperimentKeys(job_id)
        self.set_status(job_id, "running", ("queued",))
        self.r.hsetnx(keys.meta, "started", time.time())
        return float(text(self.r.hget(keys.meta, "started")))

    # ---- chains -----------------------------------------------------------------------------
    def load_chain(self, job_id: str, point: int, chain: int) -> tuple[bytes | None, dict[int, bytes]]:
        raw = self.r.hgetall(ExperimentKeys(job_id).chain(point, chain))
        fields = {text(k): v for k, v in raw.items()}
        blocks = {int(k.split(":", 1)[1]): v for k, v in fields.items() if k.startswith("block:")}
        return fields.get("checkpoint"), blocks

    def save_chain(self, job_id: str, point: int, chain: int, checkpoint: bytes, draws_done: int,
                   block: tuple[int, bytes] | None, progress: int) -> bool:
        start, data = ("", b"") if block is None else (str(block[0]), block[1])
        return bool(self._save_chain(keys=[ExperimentKeys(job_id).chain(point, chain)],
                                     args=[draws_done, checkpoint, start, data, self.ttl, progress]))

    def run_base(self, job_id: str, point: int, chain: int, run: str, spent: float) -> float:
        key = ExperimentKeys(job_id).chain(point, chain)
        with self.r.pipeline() as p:
            p.hsetnx(key, f"run:{run}", repr(float(spent)))
            p.hget(key, f"run:{run}")
            p.expire(key, self.ttl)
            return float(text(p.execute()[1]))

    def complete_chain(self, job_id: str, point: int, chain: int, outcome: dict[str, Any]) -> None:
        key = ExperimentKeys(job_id).done(point)
        with self.r.pipeline(transaction=False) as p:
            p.hsetnx(key, str(chain), _dumps(outcome))
            p.expire(key, self.ttl)
            p.execute()

    def chains_done(self, job_id: str, point: int) -> dict[int, dict[str, Any]]:
        raw = self.r.hgetall(ExperimentKeys(job_id).done(point))
        return {int(k): json.loads(v) for k, v in raw.items()}

    def progress(self, job_id: str, points: int, chains: int) -> int:
        keys = ExperimentKeys(job_id)
        with self.r.pipeline(transaction=False) as p:
            for point in range(points):
                p.hgetall(keys.done(point))
                for chain in range(chains):
                    p.hget(keys.chain(point, chain), "draws")
            out = p.execute()
        total = 0
        for point in range(points):
            done = {int(k): json.loads(v) for k, v in out[point * (chains + 1)].items()}
            drawing = out[point * (chains + 1) + 1:(point + 1) * (chains + 1)]
            for chain in range(chains):
                if chain in done:
                    total += int(done[chain].get("draws", 0))
                elif drawing[chain] is not None:
                    total += int(drawing[chain])
        return total

    # ---- points and result ------------------------------------------------------------------
    def put_point(self, job_id: str, point: int, point_json: str, series_json: str, complete: bool = True) -> bool:
        keys = ExperimentKeys(job_id)
        chains = int(self.r.hget(keys.meta, "chains") or 0) if complete else 0  # incomplete: its chains stay
        return bool(self._put_point(
            keys=[keys.point(point), keys.series(point), keys.points, *(keys.chain(point, c) for c in range(chains))],
            args=[point_json, series_json, point, self.ttl],
        ))

    def reopen(self, job_id: str, points: int) -> set[int]:
        keys = ExperimentKeys(job_id)
        assembled = self.points_done(job_id)
        for point in sorted(assembled):
            stopped = [c for c, o in self.chains_done(job_id, point).items() if o.get("time_limited")]
            if stopped:
                with self.r.pipeline() as p:
                    p.hdel(keys.done(point), *(str(c) for c in stopped))
                    p.delete(keys.point(point), keys.series(point))
                    p.srem(keys.points, point)
                    p.execute()
                assembled.discard(point)
        return assembled

    def points_done(self, job_id: str) -> set[int]:
        return {int(x) for x in self.r.smembers(ExperimentKeys(job_id).points)}

    def point_text(self, job_id: str, point: int) -> str | None:
        raw = self.r.get(ExperimentKeys(job_id).point(point))
        return None if raw is None else text(raw)

    def series_text(self, job_id: str, point: int) -> str | None:
        raw = self.r.get(ExperimentKeys(job_id).series(point))
        return None if raw is None else text(raw)

    def finish(self, job_id: str, result_json: str, complete: bool = True) -> bool:
        keys = ExperimentKeys(job_id)
        return bool(self._finish(keys=[keys.meta, keys.result],
                                 args=[result_json, self.ttl, time.time(), int(complete)]))

    def complete(self, job_id: str) -> bool:
        flag = self.r.hget(ExperimentKeys(job_id).meta, "complete")
        if flag is not None:
            return text(flag) == "1"
        # a record written before completeness was recorded: complete unless a chain stopped early
        return not any(o.get("time_limited") for p in self.points_done(job_id)
                       for o in self.chains_done(job_id, p).values())

    def result_text(self, job_id: str) -> str | None:
        raw = self.r.get(ExperimentKeys(job_id).result)
        return None if raw is None else text(raw)
