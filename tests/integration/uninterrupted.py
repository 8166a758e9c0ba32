"""An experiment run here, chain after chain, without interruption: what a resumed run on workers must equal."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from service.cache import MemoryCache
from service.experiments.plan import plan
from service.experiments.runner import assemble_point, run_chain
from service.experiments.schemas import ExperimentRequest
from service.experiments.store import MemoryStore
from service.settings import Settings
from service.singleflight import SingleFlight
from service.solving import SolveService


def uninterrupted(request: dict[str, Any]) -> dict[str, Any]:
    """The request's (one-point) experiment, as the point's JSON."""
    payload = plan(ExperimentRequest.model_validate(request), Settings(redis_url=None))
    store = MemoryStore()
    store.create(payload["key"])
    for chain in range(payload["sampler"]["chains"]):
        run_chain(payload, 0, chain, store)
    assert assemble_point(payload, 0, store, SolveService(MemoryCache(8), SingleFlight(), Settings(redis_url=None)))
    return json.loads(store.point_text(payload["key"], 0))  # type: ignore[arg-type]


def assert_same_experiment(result: dict[str, Any], request: dict[str, Any]) -> None:
    """Every figure of every observable of ``result`` is the uninterrupted run's, draw for draw (to 1e-12)."""
    reference = uninterrupted(request)
    assert result["observables"].keys() == reference["observables"].keys()
    for name, est in result["observables"].items():
        for figure in ("mean", "stderr", "ess", "rhat"):
            np.testing.assert_allclose(np.asarray(est[figure], dtype=float),
                                       np.asarray(reference["observables"][name][figure], dtype=float),
                                       rtol=1e-12, err_msg=f"{name}.{figure}")
    assert result["theory"]["comparison"].keys() == reference["theory"]["comparison"].keys()
