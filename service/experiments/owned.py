"""Experiments as jobs owned by the key that submitted them, apart from the computation they share.

Two things are kept apart, as for every kind of job (:mod:`service.kernel.ownership`):

- the **computation**, keyed by the experiment's hash (``payload["key"]``): identical submissions by any keys
  share it (its chains run once, its result is cached); the executors (:mod:`.local`, :mod:`.rq_backend`)
  know only computations;
- the **job** a key holds: its id is a keyed hash (HMAC under the instance secret) of the owner and the
  experiment's hash, so nobody can derive another key's job id from a spec. Only the key that submitted a job
  sees it (status, progress, executions, draws) and cancels it; any other key gets 404. Cancelling withdraws
  that key's interest (its job reads ``cancelled``); the computation stops only when no key wants it any more.

A holding is a small record ``job id -> (owner tag, experiment hash, withdrawn)`` plus the set of job ids
interested in each computation: in memory beside the in-process executor, in Redis beside the RQ one.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Protocol

from service.kernel.ownership import ACTIVE, HoldingKeys, JobLimitExceeded, owner_tag, public_id
from service.kernel.records import read_hash, text
from service.secrets import InstanceSecret


@dataclass(frozen=True)
class Holding:
    owner: str
    key: str
    withdrawn: bool


class Holdings(Protocol):
    def hold(self, job_id: str, owner: str, key: str) -> None:
        """Record (or renew) the owner's interest in the computation ``key``."""
        ...

    def get(self, job_id: str) -> Holding | None: ...

    def withdraw(self, job_id: str) -> int:
        """Withdraw the job's interest; how many jobs still want its computation."""
        ...

    def of_owner(self, owner: str) -> list[Holding]: ...


class MemoryHoldings:
    def __init__(self) -> None:
        self._jobs: dict[str, Holding] = {}
        self._interest: dict[str, set[str]] = {}
        self._owned: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def hold(self, job_id: str, owner: str, key: str) -> None:
        with self._lock:
            self._jobs[job_id] = Holding(owner, key, False)
            self._interest.setdefault(key, set()).add(job_id)
            self._owned.setdefault(owner, set()).add(job_id)

    def get(self, job_id: str) -> Holding | None:
        return self._jobs.get(job_id)

    def withdraw(self, job_id: str) -> int:
        with self._lock:
            h = self._jobs[job_id]
            self._jobs[job_id] = Holding(h.owner, h.key, True)
            interested = self._interest.setdefault(h.key, set())
            interested.discard(job_id)
            return len(interested)

    def of_owner(self, owner: str) -> list[Holding]:
        return [self._jobs[j] for j in self._owned.get(owner, ())]


class RedisHoldings:
    """``saddlelab:experiment-job:<job id>`` (hash: owner, key, withdrawn), ``saddlelab:experiment:<key>:holders``
    (set of job ids), ``saddlelab:owner:<tag>:experiment-jobs`` (set of job ids); all with the result TTL."""

    def __init__(self, client: Any, ttl: int):
        self.client = client
        self.ttl = ttl

    KEYS = HoldingKeys("saddlelab:experiment-job", "experiment-jobs")

    @staticmethod
    def _holders(key: str) -> str:
        return f"saddlelab:experiment:{key}:holders"

    def hold(self, job_id: str, owner: str, key: str) -> None:
        with self.client.pipeline() as p:
            p.hset(self.KEYS.handle(job_id), mapping={"owner": owner, "key": key, "withdrawn": 0})
            p.sadd(self._holders(key), job_id)
            p.sadd(self.KEYS.owner(owner), job_id)
            for name in (self.KEYS.handle(job_id), self._holders(key), self.KEYS.owner(owner)):
                p.expire(name, self.ttl)
            p.execute()

    def get(self, job_id: str) -> Holding | None:
        h = read_hash(self.client, self.KEYS.handle(job_id))
        return None if h is None else Holding(h["owner"], h["key"], h["withdrawn"] == "1")

    def withdraw(self, job_id: str) -> int:
        h = self.get(job_id)
        if h is None:
            return 0
        with self.client.pipeline() as p:  # MULTI: the count is the one after this withdrawal
            p.hset(self.KEYS.handle(job_id), "withdrawn", 1)
            p.srem(self._holders(h.key), job_id)
            p.scard(self._holders(h.key))
            return int(p.execute()[-1])

    def of_owner(self, owner: str) -> list[Holding]:
        members = [text(m) for m in self.client.smembers(self.KEYS.owner(owner))]
        found = [(m, self.get(m)) for m in members]
        gone = [m for m, h in found if h is None]
        if gone:
            self.client.srem(self.KEYS.owner(owner), *gone)
        return [h for _, h in found if h is not None]


class OwnedExperiments:
    """The API's view of experiments: jobs held by keys over an executor of computations.

    Every call goes through the executor's ``guard``: the holdings of the RQ executor live in its Redis, so
    Redis unreachable or full is a :class:`~service.kernel.ownership.QueueUnavailable` (503) there too.
    """

    def __init__(self, executor: Any, holdings: Holdings, secret: InstanceSecret):
        self.executor = executor
        self.holdings = holdings
        self.secret = secret
        self.kind = executor.kind
        self._lock = threading.Lock()  # one submission at a time per process: the per-key limit is exact here

    def _held(self, job_id: str, owner: str | None) -> Holding | None:
        h = self.holdings.get(job_id)
        return h if h is not None and h.owner == owner_tag(owner, self.secret) else None

    def submit(self, payload: dict[str, Any], owner: str | None = None, limit: int = 0) -> tuple[str, bool]:
        """The owner's job for the experiment (started, joined or found again): (job id, deduplicated)."""
        return self.executor.guard(lambda: self._submit(payload, owner, limit))

    def _submit(self, payload: dict[str, Any], owner: str | None, limit: int) -> tuple[str, bool]:
        tag = owner_tag(owner, self.secret)
        key = payload["key"]
        job_id = public_id(tag, key, self.secret)
        with self._lock:
            mine = self.holdings.get(job_id)
            if mine is not None and not mine.withdrawn and self.executor.computation_status(key) in (*ACTIVE,
                                                                                                     "finished"):
                return job_id, True
            if limit and self._active(tag) >= limit:
                raise JobLimitExceeded(limit)
            self.holdings.hold(job_id, tag, key)
            shared = self.executor.submit(payload)
        return job_id, shared

    def _active(self, tag: str) -> int:
        return sum(1 for h in self.holdings.of_owner(tag)
                   if not h.withdrawn and self.executor.computation_status(h.key) in ACTIVE)

    def active_for(self, owner: str | None) -> int:
        return self.executor.guard(lambda: self._active(owner_tag(owner, self.secret)))

    def status(self, job_id: str, owner: str | None = None, detail: bool = False) -> dict[str, Any] | None:
        return self.executor.guard(lambda: self._status(job_id, owner, detail))

    def _status(self, job_id: str, owner: str | None, detail: bool) -> dict[str, Any] | None:
        h = self._held(job_id, owner)
        if h is None:
            return None
        body = self.executor.status(h.key, detail=detail)
        if body is None:
            return None
        body["job_id"] = job_id
        body["experiment_hash"] = h.key
        if h.withdrawn:  # this key cancelled; the computation may go on for others
            body.update(status="cancelled", result=None)
        return body

    def series(self, job_id: str, point: int, owner: str | None = None) -> str | None:
        def read() -> str | None:
            h = self._held(job_id, owner)
            return None if h is None or h.withdrawn else self.executor.series(h.key, point)

        return self.executor.guard(read)

    def cancel(self, job_id: str, owner: str | None = None) -> bool:
        """Withdraw the owner's interest; the computation is cancelled when nobody else wants it."""
        return self.executor.guard(lambda: self._cancel(job_id, owner))

    def _cancel(self, job_id: str, owner: str | None) -> bool:
        h = self._held(job_id, owner)
        if h is None:
            return False
        if not h.withdrawn and self.holdings.withdraw(job_id) == 0:
            self.executor.cancel(h.key)
        return True

    def shutdown(self) -> None:
        self.executor.shutdown()
