"""An experiment run in this process, as the API's embedded executor would run it: for scripts and notebooks
without a server (the showcases use it)."""

from __future__ import annotations

import time
from typing import Any

from service.cache import MemoryCache
from service.experiments.local_kind import LocalChains
from service.experiments.plan import plan
from service.experiments.schemas import ExperimentRequest
from service.kernel.local import LocalBackend
from service.settings import Settings
from service.singleflight import SingleFlight
from service.solving import SolveService


def run_experiment(request: dict[str, Any], *, workers: int = 2, settings: Any = None, poll: float = 0.5,
                   on_status: Any = None) -> dict[str, Any]:
    """Plan and run one experiment request in this process, as the API's embedded executor would; its result.

    For scripts and notebooks without a server (the showcases use it): the same validation, chains, cached
    solve and JSON as ``POST /v1/experiments``. ``on_status`` is called with each polled status.
    """
    settings = settings or Settings(redis_url=None)
    backend = LocalBackend(LocalChains(SolveService(MemoryCache(64), SingleFlight(), settings)), workers,
                           settings=settings)
    try:
        job_id, _ = backend.submit(plan(ExperimentRequest.model_validate(request), settings))
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
