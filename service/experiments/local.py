"""The in-process executor of experiments, used when no Redis is configured.

The same API as the RQ backend (:mod:`service.experiments.rq_backend`), over computations keyed by the
experiment's hash (who holds them is :mod:`service.experiments.owned`'s business): submit (deduplicated), status
with progress in draws, the per-draw series, cancel. Each chain
of each point is one task of a thread pool; chains of one point share one network and its compiled samplers.
Checkpoints and blocks are kept in memory (:class:`~service.experiments.store.MemoryStore`), so a failed,
cancelled or time-limited experiment submitted again resumes its chains; nothing survives a restart of the process.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from service.experiments.runner import assemble_point, finalize, n_chains, n_points, run_chain
from service.experiments.store import MemoryStore
from service.kernel.ownership import ACTIVE
from service.kernel.stops import Cancelled
from service.solving import SolveService

log = logging.getLogger("saddlelab.experiments")


class LocalExperiments:
    kind = "local"

    def __init__(self, solver: SolveService, workers: int = 2):
        self.solver = solver
        self.store = MemoryStore()
        self._workers = max(1, workers)
        self._pool = self._new_pool()
        self._jobs: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def _new_pool(self) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="saddlelab-experiment")

    @staticmethod
    def guard(fn: Callable[[], Any]) -> Any:
        return fn()  # nothing here depends on Redis

    def submit(self, payload: dict[str, Any]) -> bool:
        """Start the computation, or resume a failed or cancelled one; True when it was already there."""
        job_id = payload["key"]
        with self._lock:
            status = self.store.status(job_id)
            if status in ACTIVE or (status == "finished" and self.store.complete(job_id)):
                return True
            # new, failed, cancelled, or finished without every draw (a time limit): run what is missing
            self.store.reopen(job_id, n_points(payload))
            self.store.create(job_id)
            self._jobs[job_id] = {"payload": payload, "created": time.time(), "started": None,
                                  "cancel": threading.Event(), "run": uuid.uuid4().hex}
            if self._closed:  # the app was shut down and serves again (an ASGI lifespan per client session)
                self._pool, self._closed = self._new_pool(), False
        for point in range(n_points(payload)):
            for chain in range(n_chains(payload)):
                self._pool.submit(self._run, job_id, point, chain)
        return False

    def computation_status(self, job_id: str) -> str | None:
        """The computation's status; "incomplete" for one that finished without every draw (never final)."""
        if job_id not in self._jobs:
            return None
        status = self.store.status(job_id)
        return "incomplete" if status == "finished" and not self.store.complete(job_id) else status

    def _run(self, job_id: str, point: int, chain: int) -> None:
        job = self._jobs[job_id]
        payload = job["payload"]
        if job["cancel"].is_set() or self.store.status(job_id) not in ACTIVE:
            return
        if self.store.set_status(job_id, "running", ("queued",)):
            job["started"] = time.time()
        try:
            run_chain(payload, point, chain, self.store, run=job["run"], should_stop=job["cancel"].is_set,
                      who={"worker": threading.current_thread().name})
            if assemble_point(payload, point, self.store, self.solver):
                finalize(payload, self.store, job["started"])
        except Cancelled:
            self.store.record(job_id, {"point": point, "chain": chain, "event": "cancelled"})
        except Exception as exc:  # a failed chain fails its experiment, with the reason
            log.exception("experiment %s point %s chain %s failed", job_id, point, chain)
            self.store.fail(job_id, f"point {point} chain {chain}: {type(exc).__name__}: {exc}")

    def status(self, job_id: str, detail: bool = False) -> dict[str, Any] | None:
        job = self._jobs.get(job_id)
        status = self.store.status(job_id)
        if job is None or status is None:
            return None
        payload = job["payload"]
        points, chains = n_points(payload), n_chains(payload)
        total = points * chains * int(payload["sampler"]["draws"])
        result = self.store.result_text(job_id) if status == "finished" else None
        chains_done = sum(len(self.store.chains_done(job_id, p)) for p in range(points))
        out: dict[str, Any] = {
            "job_id": job_id,
            "status": status,
            "kind": "experiment" if payload["values"] is None else "learning_curve",
            "backend": self.kind,
            "created": job["created"],
            "progress": {"done": total if result else min(total, self.store.progress(job_id, points, chains)),
                         "total": total},
            "chains": {"done": chains_done, "total": points * chains},
            "points": {"done": len(self.store.points_done(job_id)), "total": points},
            "result": None if result is None else json.loads(result),
            "error": self.store.error(job_id),
        }
        if detail:
            out["executions"] = self.store.executions(job_id)
        return out

    def series(self, job_id: str, point: int) -> str | None:
        return self.store.series_text(job_id, point) if job_id in self._jobs else None

    def cancel(self, job_id: str) -> bool:
        job = self._jobs.get(job_id)
        if job is None:
            return False
        job["cancel"].set()
        self.store.set_status(job_id, "cancelled", ACTIVE)
        return True

    def shutdown(self) -> None:
        with self._lock:
            self._closed = True
            for job_id, job in self._jobs.items():  # stopped: submitted again, they resume from their blocks
                job["cancel"].set()
                self.store.set_status(job_id, "cancelled", ACTIVE)
            self._pool.shutdown(wait=False, cancel_futures=True)


def run_experiment(request: dict[str, Any], *, workers: int = 2, settings: Any = None, poll: float = 0.5,
                   on_status: Any = None) -> dict[str, Any]:
    """Plan and run one experiment request in this process, as the API's embedded executor would; its result.

    For scripts and notebooks without a server (the showcases use it): the same validation, chains, cached
    solve and JSON as ``POST /v1/experiments``. ``on_status`` is called with each polled status.
    """
    from service.cache import MemoryCache
    from service.experiments.plan import plan
    from service.experiments.schemas import ExperimentRequest
    from service.settings import Settings
    from service.singleflight import SingleFlight

    settings = settings or Settings(redis_url=None)
    backend = LocalExperiments(SolveService(MemoryCache(64), SingleFlight(), settings), workers)
    try:
        payload = plan(ExperimentRequest.model_validate(request), settings)
        backend.submit(payload)
        job_id = payload["key"]
        while True:
            status = backend.status(job_id)
            assert status is not None
            if on_status is not None:
                on_status(status)
            if status["status"] == "finished":
                return status["result"]
            if status["status"] in ("failed", "cancelled"):
                raise RuntimeError(f"experiment {status['status']}: {status['error']}")
            time.sleep(poll)
    finally:
        backend.shutdown()
