"""API keys, body-size limit, rate limit, per-solve time limit."""

from __future__ import annotations

import time

import numpy as np
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.solve import solve_at
from tests.service.conftest import POTENTIAL, settings


def test_api_keys_guard_everything_but_health() -> None:
    with TestClient(create_app(settings(api_keys=("k-alpha", "k-beta")))) as c:
        assert c.get("/healthz").status_code == 200
        assert c.get("/healthz").json()["auth"] == "api_key"
        assert c.post("/v1/solve", json={"model": POTENTIAL}).status_code == 401
        assert c.post("/v1/solve", json={"model": POTENTIAL}, headers={"X-API-Key": "k-alph"}).status_code == 401
        assert c.get("/v1/theories", headers={"X-API-Key": "wrong"}).status_code == 401
        for key in ("k-alpha", "k-beta"):
            assert c.post("/v1/solve", json={"model": POTENTIAL}, headers={"X-API-Key": key}).status_code == 200


def test_open_instance_says_so() -> None:
    with TestClient(create_app(settings())) as c:
        assert c.get("/healthz").json()["auth"] == "open"
        assert c.get("/v1/theories").status_code == 200


def test_body_size_limit_is_413_by_header_and_by_stream() -> None:
    with TestClient(create_app(settings(max_body_bytes=2000))) as c:
        big = {"model": {**POTENTIAL}, "pad": "x" * 5000}
        r = c.post("/v1/solve", json=big)
        assert r.status_code == 413 and "max_body_bytes" in r.text

        def chunks():
            for _ in range(10):
                yield b" " * 500

        r = c.post("/v1/solve", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413


def test_rate_limit_per_key_in_memory() -> None:
    with TestClient(create_app(settings(api_keys=("a", "b"), rate_limit_per_minute=3))) as c:
        codes = [c.get("/v1/theories", headers={"X-API-Key": "a"}).status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        r = c.get("/v1/theories", headers={"X-API-Key": "a"})
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        assert c.get("/v1/theories", headers={"X-API-Key": "b"}).status_code == 200  # other keys unaffected
        assert c.get("/healthz").status_code == 200


@pytest.mark.redis
def test_rate_limit_is_shared_through_redis(fresh_redis) -> None:
    s = settings(redis_url=fresh_redis.url, api_keys=("a",), rate_limit_per_minute=4)
    with TestClient(create_app(s)) as one, TestClient(create_app(s)) as two:
        codes = [c.get("/v1/theories", headers={"X-API-Key": "a"}).status_code for c in (one, two, one, two, one)]
    assert codes == [200, 200, 200, 200, 429]


def test_time_limit_returns_a_diagnosed_non_convergence() -> None:
    # Contracting by 1e-7 per step, iteration would need ~1e8 steps: the time limit stops it honestly.
    prob = Problem(residual=None, dim=50, starts=lambda p: {}, fixed_point=lambda x, p: x + 1e-7 * (1.0 - x))
    t0 = time.perf_counter()
    opts = SolverOptions(method="picard", mixing=1.0, time_limit=0.2, max_iterations=10**6)
    res = solve_at(prob, 0.0, np.zeros(50), opts)
    assert time.perf_counter() - t0 < 5
    assert not res.converged and res.status == "time_limit"
    assert res.residual > 0


def test_problem_size_limits_come_from_settings_and_name_the_limit() -> None:
    spec = {"theory": "hciz_mlp", "activation": "he3", "gamma": 0.5, "alpha": 2.0, "Delta": 0.1, "depth": 3}
    with TestClient(create_app(settings(limits={"hciz_depth": 2.0}))) as c:
        r = c.post("/v1/solve", json={"model": spec})
        assert r.status_code == 422, r.text
        (err,) = r.json()["detail"]
        assert err["loc"] == ["body", "model", "depth"] and "hciz_depth=2" in err["msg"]
        r = c.post("/v1/solve", json={"model": {**spec, "depth": 2}})
        assert r.status_code == 200
        r = c.post("/v1/sweeps", json={"model": {**spec, "depth": 1}, "parameter": "depth", "values": [1, 3]})
        assert r.status_code == 422
    with TestClient(create_app(settings())) as c:  # default limit allows depth 3
        assert c.post("/v1/solve", json={"model": spec}).status_code == 200
