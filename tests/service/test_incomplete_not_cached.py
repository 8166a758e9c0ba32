"""Only a complete answer is cached: a catalogue cut short by the time limit is returned, never stored.

Regression: statuses were free strings, the cache skipped ``"time_limit"`` and ``"error"`` but the
catalogue reported only its equilibrium's status, so a catalogue in which one start converged and
another hit the limit was reported converged and cached, and a second instance served it.
"""

from __future__ import annotations

import dataclasses

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from tests.redis_server import RedisServer
from tests.service.conftest import settings

#: hciz_mlp tanh at alpha = 3.8: two branches (universal and specialised), the specialised one the equilibrium.
HCIZ = {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 3.8, "Delta": 0.1}
#: Damped iteration so slow that the instance's time limit cuts the catalogue short.
SLOW = {"method": "picard", "mixing": 0.01, "max_iterations": 1_000_000}


def _solve(c: TestClient) -> dict:
    r = c.post("/v1/solve", json={"model": HCIZ, "solver": SLOW})
    assert r.status_code == 200, r.text
    return r.json()


def _from_environment(monkeypatch: pytest.MonkeyPatch, redis_url: str, limit: str | None) -> Settings:
    """An instance configured as an operator would: REDIS_URL and SADDLELAB_SOLVE_TIME_LIMIT (or its default)."""
    monkeypatch.setenv("REDIS_URL", redis_url)
    if limit is None:
        monkeypatch.delenv("SADDLELAB_SOLVE_TIME_LIMIT", raising=False)
    else:
        monkeypatch.setenv("SADDLELAB_SOLVE_TIME_LIMIT", limit)
    return dataclasses.replace(Settings(), api_keys=(), rate_limit_per_minute=0)


def _check_two_instances(hurried_settings: Settings, patient_settings: Settings) -> None:
    with TestClient(create_app(hurried_settings)) as hurried:
        cut = _solve(hurried)
    assert cut["diagnostics"]["complete"] is False
    assert cut["diagnostics"]["status"] == "time_limit" and cut["converged"] is False
    with TestClient(create_app(patient_settings)) as patient:
        full = _solve(patient)
        again = _solve(patient)
    assert full["cached"] is False, "the cut-short catalogue must not have been cached"
    assert full["diagnostics"]["complete"] is True
    assert full["equilibrium"] == "specialized"
    assert {b["name"] for b in full["branches"]} >= {"universal", "specialized"}
    assert again["cached"] is True


@pytest.mark.slow
def test_a_time_limited_catalogue_is_not_cached_in_memory() -> None:
    # One in-process cache shared by both "instances" is the memory backend's analogue of one Redis.
    with TestClient(create_app(settings(solve_time_limit=0.05))) as hurried:
        cut = _solve(hurried)
        assert not cut["diagnostics"]["complete"]
        assert len(hurried.app.state.saddlelab.cache) == 0  # type: ignore[attr-defined]


@pytest.mark.slow
@pytest.mark.redis
def test_a_time_limited_catalogue_is_not_served_by_another_instance(
    fresh_redis: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One API with SADDLELAB_SOLVE_TIME_LIMIT=0.05, then one with the default, both on one Redis.
    hurried = _from_environment(monkeypatch, fresh_redis.url, "0.05")
    patient = _from_environment(monkeypatch, fresh_redis.url, None)
    assert hurried.solve_time_limit == 0.05 and patient.solve_time_limit == 120.0
    _check_two_instances(hurried, patient)
