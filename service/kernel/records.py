"""A computation's record in Redis, whatever its kind: a hash (payload, status, timestamps, error) and a list of
execution records, all with the instance's ``result_ttl``.

Status changes are compare-and-set (a Lua script), so a cancel is never overwritten by a late worker, and a
failure is written with its reason in one step. (:mod:`service.kernel.waiting`). Writes made by workers go through
:meth:`RedisRecord.write`: retried with bounded backoff while Redis is unreachable or full
(``redis_outage_seconds``), so a worker carries on across a Redis restart.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

import redis

from service.kernel.ownership import ACTIVE
from service.redis_link import RedisUnavailable, retrying
from service.serialize import dumps

log = logging.getLogger("saddlelab.jobs")
T = TypeVar("T")

# KEYS: the record. ARGV: new status, time, error ('' for none), the statuses it may replace.
SET_STATUS = """
local cur = redis.call('HGET', KEYS[1], 'status')
if not cur then return 0 end
for i = 4, #ARGV do
  if cur == ARGV[i] then
    redis.call('HSET', KEYS[1], 'status', ARGV[1], 'updated', ARGV[2])
    if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'error', ARGV[3]) end
    return 1
  end
end
return 0
"""


class RecordKeys:
    """The keys of one computation of a kind (``KIND``): its record ``saddlelab:<kind>:<key>``, its result and its
    execution log; a kind adds its own parts below the record (:meth:`part`)."""

    KIND = ""

    def __init__(self, key: str):
        self.id = key
        self.meta = f"saddlelab:{self.KIND}:{key}"
        self.result = self.part("result")
        self.log = self.part("log")

    def part(self, *names: Any) -> str:
        return ":".join((self.meta, *(str(n) for n in names)))


def text(v: Any) -> str:
    """A Redis reply (bytes) as text."""
    return v.decode() if isinstance(v, bytes) else str(v)


def read_hash(client: redis.Redis, name: str) -> dict[str, str] | None:
    """A whole (small) hash as text; None when it does not exist."""
    raw = client.hgetall(name)
    return {text(k): text(v) for k, v in raw.items()} if raw else None


class RedisRecord:
    """Reads and writes the records of one kind of computation; a kind names its keys (``KEYS``).
    ``retry_seconds`` > 0 (workers): :meth:`write` retries while Redis is unreachable or full."""

    def __init__(self, client: redis.Redis, ttl: int, retry_seconds: float = 0.0):
        self.r = client
        self.ttl = int(ttl)
        self.retry_seconds = float(retry_seconds)
        self._set_status = client.register_script(SET_STATUS)
        for name, source in self.SCRIPTS:
            setattr(self, name, client.register_script(source))

    #: The kind's keys.
    KEYS: type[RecordKeys] = RecordKeys
    #: The kind's Lua scripts, each registered as an attribute of the store: (attribute, source) pairs.
    SCRIPTS: tuple[tuple[str, str], ...] = ()

    def record_key(self, key: str) -> str:
        return self.KEYS(key).meta

    def log_key(self, key: str) -> str:
        return self.KEYS(key).log

    def write(self, fn: Callable[[], T]) -> T:
        """``fn()``, retried with bounded backoff while Redis is away or full (workers); at once otherwise."""
        if self.retry_seconds <= 0:
            return fn()

        def note(exc: BaseException, delay: float) -> None:
            log.warning("job write failed (%s); retrying in %.2f s", exc, delay)

        return retrying(fn, self.retry_seconds, on_retry=note)

    # ---- reading ----------------------------------------------------------------------------
    def meta(self, key: str) -> dict[str, str] | None:
        return read_hash(self.r, self.record_key(key))

    @staticmethod
    def payload(meta: dict[str, str]) -> dict[str, Any]:
        return json.loads(meta["payload"])

    def status(self, key: str) -> str | None:
        raw = self.r.hget(self.record_key(key), "status")
        return None if raw is None else text(raw)

    def executions(self, key: str) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.r.lrange(self.log_key(key), 0, -1)]

    # ---- writing ----------------------------------------------------------------------------
    def set_status(self, key: str, status: str, allowed: tuple[str, ...], error: str = "") -> bool:
        """``status`` (with ``error``, in the same step) if the current status is one of ``allowed``."""
        return bool(self.write(lambda: self._set_status(keys=[self.record_key(key)],
                                                        args=[status, time.time(), error, *allowed])))

    def fail(self, key: str, error: str) -> None:
        # One script: a reader never sees "failed" without its reason.
        self.set_status(key, "failed", ACTIVE, error)

    def record(self, key: str, entry: dict[str, Any]) -> None:
        """Append to the execution log; a record that cannot be written is logged, never fatal."""
        name, line = self.log_key(key), dumps({"time": time.time(), **entry})

        def put() -> None:
            with self.r.pipeline(transaction=False) as p:
                p.rpush(name, line)
                p.expire(name, self.ttl)
                p.execute()

        try:
            self.write(put)
        except RedisUnavailable as exc:
            log.warning("execution record of %s not written: %s", key, exc)
