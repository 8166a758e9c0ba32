"""Where an experiment's chains keep their state between blocks, and where its points and result are stored.

A chain stores, after its warmup and after every block of draws, its checkpoint (sampler state, adapted
parameters, RNG key, counters: :class:`~solvers.experiments.checkpoint.Checkpoint`) together with the
block's draws, in one atomic write, and only if it is ahead of what is stored (a chain run twice, by a worker
presumed dead that was not, draws the same blocks: storing one is enough). A chain that resumes reads them
back and continues after the last block: an interrupted chain loses at most the block it was drawing.

:class:`ExperimentStore` is what the runner needs; :class:`MemoryStore` keeps it in the process (the embedded
default), :class:`~service.experiments.redis_store.RedisStore` in Redis.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Protocol

ACTIVE = ("queued", "running")


class ExperimentStore(Protocol):
    def status(self, job_id: str) -> str | None: ...

    def set_status(self, job_id: str, status: str, allowed: tuple[str, ...]) -> bool:
        """Compare-and-set: change the status only from one of ``allowed``."""
        ...

    def fail(self, job_id: str, error: str) -> None: ...

    def load_chain(self, job_id: str, point: int, chain: int) -> tuple[bytes | None, dict[int, bytes]]:
        """The chain's last checkpoint and its stored blocks by first draw index (nothing stored: None, {})."""
        ...

    def save_chain(self, job_id: str, point: int, chain: int, checkpoint: bytes, draws_done: int,
                   block: tuple[int, bytes] | None) -> bool:
        """Store the checkpoint and the block it follows, unless the stored chain is further along."""
        ...

    def complete_chain(self, job_id: str, point: int, chain: int, outcome: dict[str, Any]) -> None: ...

    def chains_done(self, job_id: str, point: int) -> dict[int, dict[str, Any]]: ...

    def put_point(self, job_id: str, point: int, point_json: str, series_json: str) -> bool:
        """Store an assembled point once (False when it was already stored) and drop its chains' data."""
        ...

    def points_done(self, job_id: str) -> set[int]: ...

    def point_text(self, job_id: str, point: int) -> str | None: ...

    def series_text(self, job_id: str, point: int) -> str | None: ...

    def finish(self, job_id: str, result_json: str) -> bool:
        """Store the result and mark the job finished, if it is still active."""
        ...

    def result_text(self, job_id: str) -> str | None: ...

    def progress(self, job_id: str, points: int, chains: int) -> int:
        """Kept draws stored over every chain."""
        ...

    def record(self, job_id: str, entry: dict[str, Any]) -> None:
        """Append to the job's execution log."""
        ...


class MemoryStore:
    """:class:`ExperimentStore` in the process's memory (thread-safe); nothing survives a restart."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._status: dict[str, str] = {}
        self._errors: dict[str, str] = {}
        self._chains: dict[tuple[str, int, int], dict[str, Any]] = {}
        self._done: dict[tuple[str, int], dict[int, dict[str, Any]]] = {}
        self._points: dict[tuple[str, int], tuple[str, str]] = {}
        self._results: dict[str, str] = {}
        self._log: dict[str, list[dict[str, Any]]] = {}

    def create(self, job_id: str) -> None:
        with self._lock:
            self._status[job_id] = "queued"
            self._errors.pop(job_id, None)
            self._results.pop(job_id, None)

    def status(self, job_id: str) -> str | None:
        with self._lock:
            return self._status.get(job_id)

    def error(self, job_id: str) -> str | None:
        with self._lock:
            return self._errors.get(job_id)

    def set_status(self, job_id: str, status: str, allowed: tuple[str, ...]) -> bool:
        with self._lock:
            if self._status.get(job_id) not in allowed:
                return False
            self._status[job_id] = status
            return True

    def fail(self, job_id: str, error: str) -> None:
        if self.set_status(job_id, "failed", ACTIVE):
            with self._lock:
                self._errors[job_id] = error

    def load_chain(self, job_id: str, point: int, chain: int) -> tuple[bytes | None, dict[int, bytes]]:
        with self._lock:
            c = self._chains.get((job_id, point, chain))
            return (None, {}) if c is None else (c["checkpoint"], dict(c["blocks"]))

    def save_chain(self, job_id: str, point: int, chain: int, checkpoint: bytes, draws_done: int,
                   block: tuple[int, bytes] | None) -> bool:
        with self._lock:
            c = self._chains.setdefault((job_id, point, chain), {"checkpoint": None, "draws": -1, "blocks": {}})
            if c["draws"] > draws_done:
                return False
            c.update(checkpoint=checkpoint, draws=draws_done)
            if block is not None:
                c["blocks"].setdefault(block[0], block[1])
            return True

    def complete_chain(self, job_id: str, point: int, chain: int, outcome: dict[str, Any]) -> None:
        with self._lock:
            self._done.setdefault((job_id, point), {}).setdefault(chain, outcome)

    def chains_done(self, job_id: str, point: int) -> dict[int, dict[str, Any]]:
        with self._lock:
            return dict(self._done.get((job_id, point), {}))

    def put_point(self, job_id: str, point: int, point_json: str, series_json: str) -> bool:
        with self._lock:
            if (job_id, point) in self._points:
                return False
            self._points[(job_id, point)] = (point_json, series_json)
            for key in [k for k in self._chains if k[:2] == (job_id, point)]:
                del self._chains[key]
            return True

    def points_done(self, job_id: str) -> set[int]:
        with self._lock:
            return {p for j, p in self._points if j == job_id}

    def point_text(self, job_id: str, point: int) -> str | None:
        with self._lock:
            hit = self._points.get((job_id, point))
            return None if hit is None else hit[0]

    def series_text(self, job_id: str, point: int) -> str | None:
        with self._lock:
            hit = self._points.get((job_id, point))
            return None if hit is None else hit[1]

    def finish(self, job_id: str, result_json: str) -> bool:
        with self._lock:
            if self._status.get(job_id) not in ACTIVE:
                return False
            self._results[job_id] = result_json
            self._status[job_id] = "finished"
            return True

    def result_text(self, job_id: str) -> str | None:
        with self._lock:
            return self._results.get(job_id)

    def progress(self, job_id: str, points: int, chains: int) -> int:
        with self._lock:
            done = sum(o.get("draws", 0) for (j, _), outcomes in self._done.items() if j == job_id
                       for o in outcomes.values())
            running = sum(max(c["draws"], 0) for (j, p, ch), c in self._chains.items()
                          if j == job_id and ch not in self._done.get((j, p), {}))
            return done + running

    def record(self, job_id: str, entry: dict[str, Any]) -> None:
        with self._lock:
            self._log.setdefault(job_id, []).append({"time": time.time(), **entry})

    def executions(self, job_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._log.get(job_id, []))
