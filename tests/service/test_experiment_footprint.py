"""An experiment's bytes are limited, not only its draws: what it stores (Redis) and what the worker assembling a
point holds are estimated before anything runs, checked against measured sizes, and a request above either limit
is a 422 naming the field and the limit.

Regression: the limit counted stored draws only; a mean_field_ard request at the limits (P = P_test = 50 000,
64 chains × 31 250 draws, every draw storing P + P_test predictions) was accepted — about 2.3 TiB projected
against a 2 GiB Redis.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from service.app import create_app
from service.experiments.footprint import PointSizes, footprint
from service.experiments.plan import FOOTPRINT_LIMITS
from service.schemas import ModelSpec
from service.settings import Settings
from solvers.experiments.options import SamplerOptions
from solvers.theories import get as get_theory
from tests.redis_server import RedisServer
from tests.service.conftest import settings

ROOT = Path(__file__).resolve().parents[2]
SPEC = TypeAdapter(ModelSpec)

#: Networks of every theory, with the variants that change their estimators (depth, discrete readouts, a test set
#: larger than what a draw keeps, a population-limit spec).
NETWORKS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 1.0, "Delta": 0.1}, {"d": 6, "n_test": 5}),
    ({"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 1.0, "Delta": 0.1, "readout": "four_point"},
     {"d": 8, "n_test": 5}),
    ({"theory": "hciz_mlp", "depth": 2, "activation": [{"name": "tanh2", "unit_variance": True},
                                                       {"hermite": [0.0, 0.4, 0.0, 1.0]}],
      "gamma": [0.5, 1.0], "readout": "ones", "alpha": 1.0, "Delta": 0.1},
     {"d": 6, "n_test": 5}),
    ({"theory": "kernel_renormalization", "activation": "erf", "N1": 4, "T": 0.1,
      "data": {"kind": "arrays", "X": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], "y": [1.0, -1.0, 1.0],
               "X_test": [[0.5, 0.5], [1.0, -1.0]], "y_test": [1.0, -1.0]}}, {"test_points": 1}),
    ({"theory": "kernel_renormalization", "activation": "erf", "N1": 4, "T": 0.1, "depth": 2,
      "data": {"kind": "teacher", "P": 6, "P_test": 3, "N0": 3, "seed": 0}}, {}),
    ({"theory": "matrix_denoising", "gamma": 0.5, "snr": 1.0}, {"d": 6}),
    ({"theory": "mean_field_ard", "d": 6, "N": 3, "P": 30, "kappa": 0.3, "target": {"kind": "parity", "k": 2},
      "data": {"seed": 0, "P_test": 50}}, {"prediction_points": 20}),
    ({"theory": "mean_field_ard", "d": 6, "N": 3, "kappa": 0.3, "target": {"kind": "parity", "k": 2},
      "data": {"seed": 0, "P_test": 10}}, {"P": 12}),
    ({"theory": "rubin_cavity", "mode": "finite_sample", "D": 5, "N": 3, "P": 7, "P_test": 40, "T": 0.4},
     {"test_points": 25, "rho_bins": 7}),
    ({"theory": "rubin_cavity", "mode": "self_consistent", "D": 5, "N": 3, "P": 7, "T": 0.4}, {"P_test": 9}),
]


@pytest.mark.parametrize(("body", "sizes"), NETWORKS, ids=lambda v: json.dumps(v)[:60] if isinstance(v, dict) else "")
def test_each_theory_declares_the_estimators_its_network_reports(body: dict[str, Any], sizes: dict[str, Any]):
    """The declared components (no JAX; what the plan sizes bytes with) are those of the built network."""
    import jax

    spec = SPEC.validate_python(body)
    theory = get_theory(spec.theory)  # type: ignore[attr-defined]
    size_model = theory.experiment_sizes_for(spec).model_validate(sizes)
    target = theory.experiment(spec, size_model, 0)
    position = jax.eval_shape(target.init["prior"], jax.random.key(0))
    built = {name: math.prod(s.shape) for name, s in jax.eval_shape(target.estimators, position).items()}
    assert dict(theory.experiment_estimator_sizes(spec, size_model)) == built
    declared = theory.check_experiment(spec, size_model)["experiment_draw_values"][1]
    assert declared == sum(built.values())


#: A point whose draws each store about 2 000 numbers: what dominates is what the estimate must get right.
HEAVY = {"model": {"theory": "rubin_cavity", "mode": "self_consistent", "D": 5, "N": 3, "P": 50, "T": 0.4},
         "sizes": {"P_test": 2000, "test_points": 2000},
         "sampler": {"method": "mala", "chains": 2, "warmup": 20, "draws": 400, "block_size": 100, "seed": 1}}


def _estimate(request: dict[str, Any], s: Settings) -> Any:
    spec = SPEC.validate_python(request["model"])
    theory = get_theory(spec.theory)  # type: ignore[attr-defined]
    sizes = theory.experiment_sizes_for(spec).model_validate(request["sizes"])
    declared = theory.check_experiment(spec, sizes)
    point = PointSizes(theory.experiment_estimator_sizes(spec, sizes), declared["experiment_parameters"][1],
                       declared["experiment_data"][1])
    return footprint(SamplerOptions.model_validate(request["sampler"]), [point], s.experiment_precision,
                     s.experiment_series_draws, s.experiment_series_components)


@pytest.mark.redis
@pytest.mark.slow
def test_the_estimates_hold_against_redis_and_the_workers_peak_memory(fresh_redis: RedisServer) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-m", "tests.service.footprint_probe", fresh_redis.url, json.dumps(HEAVY)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    measured = json.loads(out.stdout.strip().splitlines()[-1])
    fp = _estimate(HEAVY, Settings(redis_url=None))
    stored = measured["sampled"] + measured["assembled"]  # at least the peak: chains, then the point
    assert stored <= fp.stored <= 2 * stored, (measured, fp)
    assert measured["assembly_peak"] <= fp.worker <= 3 * measured["assembly_peak"], (measured, fp)


ISSUE = {"model": {"theory": "mean_field_ard", "d": 20, "N": 64, "P": 50_000, "kappa": 0.3,
                   "target": {"kind": "parity", "k": 2}, "data": {"seed": 0, "P_test": 50_000}},
         "sampler": {"method": "mala", "chains": 64, "draws": 31_250, "warmup": 100}}


@pytest.fixture()
def api(fresh_redis: RedisServer) -> Any:
    with TestClient(create_app(settings(redis_url=fresh_redis.url))) as c:
        yield c


@pytest.mark.redis
def test_a_request_that_would_fill_redis_is_refused_before_it_runs(api: TestClient, fresh_redis: RedisServer,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    r = api.post("/v1/experiments", json=ISSUE)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"][0]
    assert detail["loc"] == ["body", "sampler", "draws"]
    assert "experiment_stored_bytes=" in detail["msg"] and "sizes.prediction_points" in detail["msg"]
    assert not fresh_redis.client().keys("saddlelab:experiment:*")  # nothing was queued
    # a dense mass matrix of a large network: its checkpoints are what would fill Redis
    dense = {"model": {"theory": "hciz_mlp", "activation": "tanh", "gamma": 1.0, "alpha": 0.01, "Delta": 0.1},
             "sizes": {"d": 160, "n_test": 10}, "sampler": {"method": "nuts", "mass_matrix": "dense", "chains": 4,
                                                            "draws": 10, "warmup": 10}}
    r = api.post("/v1/experiments", json=dense)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "sampler", "mass_matrix"], r.text


def test_the_byte_limits_follow_the_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    from service.experiments.plan import plan
    from service.experiments.schemas import ExperimentRequest

    small = {**HEAVY, "sampler": {**HEAVY["sampler"], "draws": 2000}}
    request = ExperimentRequest.model_validate(small)
    fp = _estimate(small, Settings(redis_url=None))
    assert fp.stored < FOOTPRINT_LIMITS["experiment_stored_bytes"]
    plan(request, Settings(redis_url=None))  # admitted by default
    monkeypatch.setenv("SADDLELAB_LIMIT_EXPERIMENT_STORED_BYTES", str(int(fp.stored / 2)))
    with pytest.raises(Exception) as refused:
        plan(request, Settings(redis_url=None))
    error = refused.value.errors()[0]  # type: ignore[attr-defined]
    assert error["loc"] == ["body", "sampler", "draws"] and "experiment_stored_bytes=" in error["msg"]
    monkeypatch.delenv("SADDLELAB_LIMIT_EXPERIMENT_STORED_BYTES")
    # the worker that assembles a point is held to max_solve_memory_bytes
    with pytest.raises(Exception) as refused:
        plan(request, Settings(redis_url=None, max_solve_memory_bytes=int(fp.worker / 2)))
    error = refused.value.errors()[0]  # type: ignore[attr-defined]
    assert error["loc"] == ["body", "sampler", "draws"] and "max_solve_memory_bytes=" in error["msg"]
