"""The RQ backend of every kind of job: the API side (submit, status, cancel), written once.

A computation is keyed by the hash of what it computes (``payload["key"]``), so identical submissions — by any
API key — share one. Each key holds its own job on it (:mod:`service.kernel.ownership`): only that key sees or
cancels it; every other key gets 404. The computation is cut into units by its kind (:mod:`service.kernel.kind`):
each unit runs as one RQ job (:func:`service.kernel.unit_task.run_task`) on whichever worker takes it, storing
its progress as it goes, so a unit whose worker dies is resumed by another from what it stored.

Redis keys (all with the instance's ``result_ttl``), for a kind named ``<kind>``:

- ``saddlelab:<kind>:<key>`` (hash): the computation — payload, status, sizes, timestamps, error, and
  ``rq:<unit>`` = the RQ job carrying each unit now; ``…:owners`` (set): the owner tags that want it;
  ``…:log`` (list): one record per start and end of a unit's execution; the kind's own parts beside them;
- ``<holdings>:<job id>`` (hash): one owner's job — the computation's key, the owner's tag, whether the owner
  cancelled it, when it was created; ``saddlelab:owner:<tag>:<owned>`` (set): the owner's job ids, for the
  per-key limit (:class:`~service.kernel.ownership.HoldingKeys`).
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

from service.kernel.kind import Pages, RedisKind
from service.kernel.ownership import ACTIVE, JobLimitExceeded, owner_tag, public_id
from service.kernel.pages import Page
from service.kernel.records import read_hash, text
from service.kernel.rq_units import QUEUE, Reconciler, enqueue_unit, redis_guard, stop_rq_job
from service.redis_link import RedisLink
from service.secrets import InstanceSecret
from service.serialize import dumps
from service.settings import Settings

log = logging.getLogger("saddlelab.jobs")

# One owner withdraws from an active computation; it is cancelled when no owner is left.
# KEYS: record, owners, handle. ARGV: owner tag, time. Returns -1 (not active: nothing changes), 0 (others
# still want it), 1 (cancelled).
WITHDRAW = """
local cur = redis.call('HGET', KEYS[1], 'status')
if cur ~= 'queued' and cur ~= 'running' then return -1 end
redis.call('HSET', KEYS[3], 'cancelled', '1')
redis.call('SREM', KEYS[2], ARGV[1])
if redis.call('SCARD', KEYS[2]) > 0 then return 0 end
redis.call('HSET', KEYS[1], 'status', 'cancelled', 'updated', ARGV[2])
return 1
"""


def enqueue(kind: RedisKind, queue: Queue, key: str, unit: str, timeout: int, pipeline: Any = None) -> str:
    """Put one unit of a computation on the queue; returns the RQ job id."""
    rid = f"saddlelab-{kind.name}-{key[:16]}-{unit.replace(':', '-')}-{uuid.uuid4().hex[:8]}"
    return enqueue_unit(queue, kind.task, (key, unit), rid, timeout, f"saddlelab {kind.name} {key[:12]} "
                        f"{kind.label(unit)}", pipeline)


def owners_key(kind: RedisKind, key: str) -> str:
    return f"saddlelab:{kind.name}:{key}:owners"


class RQBackend:
    """Jobs of one kind on RQ workers; the backend of a lab instance (``REDIS_URL`` set)."""

    backend = "rq"

    def __init__(self, kind: RedisKind, link: RedisLink, settings: Settings, secret: InstanceSecret):
        self.kind = kind
        self.link = link
        self.settings = settings
        self.secret = secret
        self.store = kind.store(link.client, settings.result_ttl)
        self.queue = Queue(QUEUE, connection=link.client, serializer=JSONSerializer)
        self._withdraw = link.client.register_script(WITHDRAW)
        self._reconciled = Reconciler()

    def guard(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` with Redis unreachable or full as :class:`~service.kernel.ownership.QueueUnavailable` (503)."""
        return redis_guard(self.link, fn)

    def _handle(self, job_id: str, owner: str | None) -> dict[str, str] | None:
        """The owner's job ``job_id``; None when it does not exist or belongs to another owner."""
        h = read_hash(self.link.client, self.kind.holdings.handle(job_id))
        if h is None or h.get("owner") != owner_tag(owner, self.secret):
            return None
        return h

    # ---- submit -----------------------------------------------------------------------------
    def submit(self, payload: dict[str, Any], owner: str | None = None, limit: int = 0) -> tuple[str, bool]:
        """The owner's job for ``payload`` (started, joined or found again): (job id, deduplicated)."""
        return self.guard(lambda: self._submit(payload, owner, limit))

    def _submit(self, payload: dict[str, Any], owner: str | None, limit: int) -> tuple[str, bool]:
        kind, key = self.kind, payload["key"]
        record, owners = self.store.record_key(key), owners_key(kind, key)
        tag = owner_tag(owner, self.secret)
        job_id = public_id(tag, key, self.secret)
        handle_key, owner_key = kind.holdings.handle(job_id), kind.holdings.owner(tag)
        ttl, timeout = self.store.ttl, self.settings.job_timeout
        with self.link.client.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(record, owners, handle_key, owner_key)
                    status = pipe.hget(record, "status")
                    status = text(status) if status is not None else None
                    shared = status in ACTIVE or (status == "finished" and kind.reusable(self.store, key))
                    cancelled = text(pipe.hget(handle_key, "cancelled") or b"1") == "1"
                    if shared and not cancelled and pipe.sismember(owners, tag):
                        return job_id, True  # this owner's job already
                    # Joining a computation that exists starts nothing: never refused by the per-key limit.
                    if not shared and limit and self._active(owner_key) >= limit:
                        raise JobLimitExceeded(limit)
                    # What an earlier run of the computation stored (failed, cancelled, cut short) is kept.
                    units = [] if shared else kind.plan(self.store, key, payload)
                    pipe.multi()
                    pipe.hset(handle_key, mapping={"key": key, "owner": tag, "cancelled": "0"})
                    pipe.hsetnx(handle_key, "created", time.time())
                    pipe.sadd(owner_key, job_id)
                    pipe.sadd(owners, tag)
                    for name in (handle_key, owner_key, owners):
                        pipe.expire(name, ttl)
                    if not shared:
                        pipe.delete(record, *kind.stale(key))
                        now = time.time()
                        meta = {"payload": dumps(payload), "status": "queued", "created": now, "updated": now,
                                "job_timeout": timeout, "ttl": ttl, **kind.record_fields(payload)}
                        for unit in units:
                            meta[f"rq:{unit}"] = enqueue(kind, self.queue, key, unit, timeout, pipe)
                        pipe.hset(record, mapping=meta)
                        pipe.expire(record, ttl)
                    pipe.execute()
                    break
                except redis.WatchError:
                    continue
        if not shared and not units:
            kind.assemble(self.store, key, payload)
        return job_id, shared

    def _active(self, owner_key: str) -> int:
        """Unfinished jobs of an owner: its jobs not cancelled whose computation is queued or running."""
        r = self.link.client
        members = [text(m) for m in r.smembers(owner_key)]
        if not members:
            return 0
        with r.pipeline(transaction=False) as p:
            for m in members:
                p.hmget(self.kind.holdings.handle(m), "key", "cancelled")
            handles = p.execute()
        gone = [m for m, (k, _) in zip(members, handles, strict=True) if k is None]
        if gone:
            r.srem(owner_key, *gone)
        held = [text(k) for k, c in handles if k is not None and text(c or b"0") != "1"]
        if not held:
            return 0
        with r.pipeline(transaction=False) as p:
            for k in held:
                p.hget(self.store.record_key(k), "status")
            statuses = p.execute()
        active = [k for k, s in zip(held, statuses, strict=True) if s is not None and text(s) in ACTIVE]
        # A computation whose units all died in RQ is failed, not active: reconcile before counting.
        return sum(1 for k in active if self._reconcile(k) in ACTIVE)

    def active_for(self, owner: str | None) -> int:
        return self.guard(lambda: self._active(self.kind.holdings.owner(owner_tag(owner, self.secret))))

    # ---- status -----------------------------------------------------------------------------
    def status(self, job_id: str, owner: str | None = None, detail: bool = False,
               page: Page | None = None, curve_page: Page | None = None) -> dict[str, Any] | None:
        """The owner's job as its owner sees it; None when ``owner`` holds no job ``job_id``."""
        settings = self.settings
        pages = Pages(page or Page(0, settings.result_page_size, settings.result_page_bytes),
                      curve_page or Page(0, settings.result_page_curves, settings.result_page_bytes))
        return self.guard(lambda: self._status(job_id, owner, detail, pages))

    def _held(self, job_id: str, owner: str | None) -> tuple[dict[str, str], dict[str, str]] | None:
        """The owner's job ``job_id`` and its computation's record; None when either is gone."""
        handle = self._handle(job_id, owner)
        meta = None if handle is None else self.store.meta(handle["key"])
        return None if handle is None or meta is None else (handle, meta)

    def _status(self, job_id: str, owner: str | None, detail: bool, pages: Pages) -> dict[str, Any] | None:
        held = self._held(job_id, owner)
        if held is None:
            return None
        handle, meta = held
        key = handle["key"]
        if meta["status"] in ACTIVE and self._reconciled.due(key):
            self._reconcile(key, meta)
            meta = self.store.meta(key) or meta
        status = meta["status"]
        if handle.get("cancelled") == "1":
            status = "cancelled"  # this owner withdrew; others may still be computing it
        out: dict[str, Any] = {
            "job_id": job_id,
            "status": status,
            "backend": self.backend,
            "created": float(handle.get("created") or meta["created"]),
            "result": None,
            "error": meta.get("error"),
        }
        out.update(self.kind.describe(self.store, key, meta, status, detail, pages))
        if self.kind.shows_queue_position:
            out["queue_position"] = self._queue_position(key, meta) if status in ACTIVE else None
        if detail:
            out["executions"] = self.store.executions(key)
        return out

    def _queue_position(self, key: str, meta: dict[str, str]) -> int | None:
        """Units waiting ahead of this computation's next queued unit (0: it is next); None when none is queued."""
        for unit in self.kind.pending(self.store, key, meta):
            rid = meta.get(f"rq:{unit}")
            pos = self.queue.get_job_position(rid) if rid else None
            if pos is not None:
                return int(pos)
        return None

    def _reconcile(self, key: str, meta: dict[str, str] | None = None) -> str | None:
        """An active computation whose unit failed for good in RQ (retries used up, lost) is marked failed."""
        kind = self.kind

        def pending(meta: dict[str, str]) -> list[tuple[str, str | None]]:
            return [(u, meta.get(f"rq:{u}")) for u in kind.pending(self.store, key, meta)]

        def moved_on(unit: str, rid: str | None) -> bool:
            fresh = self.store.meta(key)
            return fresh is None or fresh.get(f"rq:{unit}") != rid or unit not in kind.pending(self.store, key, fresh)

        return self._reconciled.check(self.store, key, meta, self.link, pending, kind.label, moved_on)

    def ended(self, job_id: str, owner: str | None = None) -> bool:
        """Whether the owner's job has ended (or is not the owner's): its handle and its status field, O(1)
        whatever the job's size (:mod:`service.kernel.waiting`)."""
        return self.guard(lambda: self._ended(job_id, owner))

    def _ended(self, job_id: str, owner: str | None) -> bool:
        handle = self._handle(job_id, owner)
        if handle is None or handle.get("cancelled") == "1":
            return True
        return self.store.status(handle["key"]) not in ACTIVE

    def read(self, job_id: str, owner: str | None, part: Callable[[Any, str], Any]) -> Any:
        """``part(store, key)`` of the owner's job (one the owner has not cancelled); None when there is none."""

        def read() -> Any:
            handle = self._handle(job_id, owner)
            return None if handle is None or handle.get("cancelled") == "1" else part(self.store, handle["key"])

        return self.guard(read)

    # ---- cancel -----------------------------------------------------------------------------
    def cancel(self, job_id: str, owner: str | None = None) -> bool:
        """Withdraw the owner's interest (the computation stops when nobody else wants it); False: no such job."""
        return self.guard(lambda: self._cancel(job_id, owner))

    def _cancel(self, job_id: str, owner: str | None) -> bool:
        held = self._held(job_id, owner)
        if held is None:
            return False
        handle, meta = held
        key = handle["key"]
        withdrawn = int(self._withdraw(keys=[self.store.record_key(key), owners_key(self.kind, key),
                                             self.kind.holdings.handle(job_id)], args=[handle["owner"], time.time()]))
        if withdrawn != 1:
            return True  # finished, failed or cancelled (nothing to stop), or other owners still want it
        self.store.record(key, {"event": "cancel_requested"})
        for name, rid in meta.items():
            if name.startswith("rq:") and rid:
                # The unit also sees the status at its next step; stopping the horse is faster.
                stop_rq_job(self.link.client, rid)
        return True

    def shutdown(self) -> None:
        return None
