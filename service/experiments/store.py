"""Where an experiment's chains keep their state between blocks, and where its points and result are stored.

A chain stores, after every chunk of its warmup and every block of draws, its checkpoint (sampler state, adapted
parameters, RNG key, counters: :class:`~solvers.experiments.checkpoint.Checkpoint`) together with the
block's draws, in one atomic write, and only if it is ahead of what is stored (a chain run twice, by a worker
presumed dead that was not, draws the same blocks: storing one is enough). A chain that resumes reads them
back and continues after the last block: an interrupted chain loses at most the call it was making.

Only a complete experiment is final. A point whose chains stopped early (their time limit) is stored with its
chains kept; the experiment finishes as ``complete: false``, and a later submission of it reopens those points
(:meth:`ExperimentStore.reopen`) and resumes their chains from their checkpoints to the requested draws.

:class:`ExperimentStore` is what the runner needs; :class:`MemoryStore` keeps it in the process (the embedded
default), :class:`~service.experiments.redis_store.RedisStore` in Redis.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Protocol

from service.kernel.ownership import ACTIVE


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
                   block: tuple[int, bytes] | None, progress: int) -> bool:
        """Store the checkpoint and the block it follows, unless the stored chain is further along (``progress``:
        warmup steps plus kept draws done, which only grows)."""
        ...

    def run_base(self, job_id: str, point: int, chain: int, run: str, spent: float) -> float:
        """The chain's sampling seconds when run ``run`` (one submission) first executed it: ``spent`` unless an
        earlier execution of the same run recorded its own. A chain's time limit counts from there."""
        ...

    def complete_chain(self, job_id: str, point: int, chain: int, outcome: dict[str, Any]) -> None: ...

    def chains_done(self, job_id: str, point: int) -> dict[int, dict[str, Any]]: ...

    def put_point(self, job_id: str, point: int, point_json: str, series_json: str, complete: bool = True) -> bool:
        """Store an assembled point once (False when it was already stored); a complete one drops its chains'
        data, an incomplete one (chains stopped by their time limit) keeps it, to be resumed."""
        ...

    def reopen(self, job_id: str, points: int) -> set[int]:
        """Unstore the incomplete points (and the outcomes of their chains that stopped early), so that a new
        submission resumes them; the points that stay assembled."""
        ...

    def points_done(self, job_id: str) -> set[int]: ...

    def point_text(self, job_id: str, point: int) -> str | None: ...

    def series_text(self, job_id: str, point: int) -> str | None: ...

    def finish(self, job_id: str, result_json: str, complete: bool = True) -> bool:
        """Store the result and mark the job finished, if it is still active; an incomplete result is served, never
        taken as final (:meth:`complete` is False)."""
        ...

    def complete(self, job_id: str) -> bool:
        """A finished experiment had every draw it asked for (no chain stopped early)."""
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
        self._complete: dict[str, bool] = {}
        self._log: dict[str, list[dict[str, Any]]] = {}

    def create(self, job_id: str) -> None:
        with self._lock:
            self._status[job_id] = "queued"
            self._errors.pop(job_id, None)
            self._results.pop(job_id, None)
            self._complete.pop(job_id, None)

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

    def _chain(self, job_id: str, point: int, chain: int) -> dict[str, Any]:
        return self._chains.setdefault((job_id, point, chain),
                                       {"checkpoint": None, "draws": -1, "progress": -1, "blocks": {}, "runs": {}})

    def save_chain(self, job_id: str, point: int, chain: int, checkpoint: bytes, draws_done: int,
                   block: tuple[int, bytes] | None, progress: int) -> bool:
        with self._lock:
            c = self._chain(job_id, point, chain)
            if c["progress"] > progress:
                return False
            c.update(checkpoint=checkpoint, draws=draws_done, progress=progress)
            if block is not None:
                c["blocks"].setdefault(block[0], block[1])
            return True

    def run_base(self, job_id: str, point: int, chain: int, run: str, spent: float) -> float:
        with self._lock:
            return float(self._chain(job_id, point, chain)["runs"].setdefault(run, spent))

    def complete_chain(self, job_id: str, point: int, chain: int, outcome: dict[str, Any]) -> None:
        with self._lock:
            self._done.setdefault((job_id, point), {}).setdefault(chain, outcome)

    def chains_done(self, job_id: str, point: int) -> dict[int, dict[str, Any]]:
        with self._lock:
            return dict(self._done.get((job_id, point), {}))

    def put_point(self, job_id: str, point: int, point_json: str, series_json: str, complete: bool = True) -> bool:
        with self._lock:
            if (job_id, point) in self._points:
                return False
            self._points[(job_id, point)] = (point_json, series_json)
            if complete:
                for key in [k for k in self._chains if k[:2] == (job_id, point)]:
                    del self._chains[key]
            return True

    def reopen(self, job_id: str, points: int) -> set[int]:
        with self._lock:
            for point in range(points):
                outcomes = self._done.get((job_id, point), {})
                stopped = [c for c, o in outcomes.items() if o.get("time_limited")]
                if stopped:
                    self._points.pop((job_id, point), None)
                    for c in stopped:
                        del outcomes[c]
            return {p for j, p in self._points if j == job_id}

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

    def finish(self, job_id: str, result_json: str, complete: bool = True) -> bool:
        with self._lock:
            if self._status.get(job_id) not in ACTIVE:
                return False
            self._results[job_id] = result_json
            self._complete[job_id] = complete
            self._status[job_id] = "finished"
            return True

    def complete(self, job_id: str) -> bool:
        with self._lock:
            return self._complete.get(job_id, False)

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
