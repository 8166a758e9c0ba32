"""Experiments while Redis is down or full: every route answers 503 naming the cause (or, for a read of a full
Redis, its answer), never 500, and works again when Redis is back.

Regression: the API's records of who holds an experiment (a module of their own then) were read and written
outside the guard that turns Redis errors into 503s: GET, DELETE and ``/draws`` of ``/v1/experiments/{id}`` and
POST ``/v1/experiments`` answered 500.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.integration.conftest import app_settings
from tests.integration.test_redis_full import NOEVICTION, fill, free, wait_health
from tests.redis_server import start_redis

pytestmark = [pytest.mark.redis, pytest.mark.slow]

KEY = {"X-API-Key": "key-one"}
EXPERIMENT = {"model": {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 1.0, "Delta": 0.1},
              "sizes": {"d": 6, "n_test": 10}, "sampler": {"method": "mala", "chains": 1, "warmup": 10, "draws": 10}}


def _routes(c: TestClient, job_id: str) -> dict[str, Any]:
    return {
        "POST": c.post("/v1/experiments", json={**EXPERIMENT, "network_seed": 7}, headers=KEY),
        "GET": c.get(f"/v1/experiments/{job_id}", headers=KEY),
        "GET detail": c.get(f"/v1/experiments/{job_id}", params={"detail": "true"}, headers=KEY),
        "draws": c.get(f"/v1/experiments/{job_id}/draws", headers=KEY),
        "DELETE": c.delete(f"/v1/experiments/{job_id}", headers=KEY),
    }


def test_experiments_answer_503_while_redis_is_down_or_full() -> None:
    server = start_redis(options=(*NOEVICTION, "--appendonly", "yes", "--appendfsync", "always"))
    try:
        settings = app_settings(server.url, api_keys=("key-one",), rate_limit_per_minute=1000,
                                redis_retry_seconds=0.2)
        with TestClient(create_app(settings), raise_server_exceptions=False) as c:
            accepted = c.post("/v1/experiments", json=EXPERIMENT, headers=KEY)  # queued: no worker here
            assert accepted.status_code == 202, accepted.text
            job_id = accepted.json()["job_id"]

            server.kill()
            wait_health(c, "down")
            for route, r in _routes(c, job_id).items():
                assert r.status_code == 503, (route, r.status_code, r.text)
                assert "Redis is unreachable" in r.json()["detail"], (route, r.text)

            server.restart()
            wait_health(c, "ok", timeout=15)
            assert c.get(f"/v1/experiments/{job_id}", headers=KEY).status_code == 200

            fill(server.client())
            wait_health(c, "full")
            answers = _routes(c, job_id)
            for route in ("POST", "DELETE"):  # writes are refused, naming the cause
                r = answers[route]
                assert r.status_code == 503 and "Redis is full" in r.json()["detail"], (route, r.text)
            for route in ("GET", "GET detail", "draws"):  # reads answer, or say why not: never a 500
                assert answers[route].status_code in (200, 404, 503), (route, answers[route].text)
            free(server.client())
            deadline = time.monotonic() + 15
            while c.post("/v1/experiments", json={**EXPERIMENT, "network_seed": 7}, headers=KEY).status_code != 202:
                assert time.monotonic() < deadline
                time.sleep(0.2)
    finally:
        server.stop()
