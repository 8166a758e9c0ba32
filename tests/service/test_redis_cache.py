"""The solve cache on a real redis-server: hits, TTL, corruption, outages and recovery."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.redis_server import start_redis
from tests.service.conftest import POTENTIAL, settings

pytestmark = pytest.mark.redis


def test_repeated_solve_is_cached_in_redis(redis_client: TestClient, fresh_redis) -> None:
    health = redis_client.get("/healthz").json()
    assert health["cache"] == "redis" and health["redis"] == "ok"
    first = redis_client.post("/v1/solve", json={"model": POTENTIAL}).json()
    second = redis_client.post("/v1/solve", json={"model": POTENTIAL}).json()
    assert (first["cached"], second["cached"]) == (False, True)
    r = fresh_redis.client()
    key = f"saddlelab:solve:{first['spec_hash']}"
    assert r.exists(key) and r.ttl(key) > 0


def test_a_second_instance_sees_the_first_ones_results(fresh_redis) -> None:
    with TestClient(create_app(settings(redis_url=fresh_redis.url))) as a:
        a.post("/v1/solve", json={"model": {**POTENTIAL, "u": 25.0}})
    with TestClient(create_app(settings(redis_url=fresh_redis.url))) as b:
        assert b.post("/v1/solve", json={"model": {**POTENTIAL, "u": 25.0}}).json()["cached"] is True


def test_corrupted_entry_is_detected_and_recomputed(redis_client: TestClient, fresh_redis) -> None:
    first = redis_client.post("/v1/solve", json={"model": POTENTIAL}).json()
    key = f"saddlelab:solve:{first['spec_hash']}"
    r = fresh_redis.client()
    for garbage in (b"{not json", b'{"theory": "rubin_cavity"}', b"[1, 2]"):
        r.set(key, garbage)
        again = redis_client.post("/v1/solve", json={"model": POTENTIAL}).json()
        assert again["cached"] is False
        assert again["order_parameters"] == first["order_parameters"]
        assert redis_client.post("/v1/solve", json={"model": POTENTIAL}).json()["cached"] is True


def test_redis_unreachable_at_start_still_solves() -> None:
    with TestClient(create_app(settings(redis_url="redis://127.0.0.1:1/0"))) as c:
        assert c.get("/healthz").json()["redis"] == "down"
        for _ in range(2):
            r = c.post("/v1/solve", json={"model": POTENTIAL})
            assert r.status_code == 200 and r.json()["converged"] is True
            assert r.json()["cached"] is False


def test_redis_lost_mid_run_and_caching_resumes_when_it_returns() -> None:
    server = start_redis()
    try:
        with TestClient(create_app(settings(redis_url=server.url, redis_retry_seconds=0.1))) as c:
            assert c.post("/v1/solve", json={"model": POTENTIAL}).json()["cached"] is False
            server.stop()
            r = c.post("/v1/solve", json={"model": {**POTENTIAL, "u": 27.0}})
            assert r.status_code == 200 and r.json()["converged"] is True
            assert c.get("/healthz").json()["redis"] == "down"
            server.restart()
            # /healthz keeps Redis's state for half a second (it never waits on Redis): the recovery shows soon.
            deadline = time.monotonic() + 5
            while c.get("/healthz").json()["redis"] != "ok":
                assert time.monotonic() < deadline, "the recovered Redis was not reported"
                time.sleep(0.1)
            c.post("/v1/solve", json={"model": {**POTENTIAL, "u": 27.0}})
            assert c.post("/v1/solve", json={"model": {**POTENTIAL, "u": 27.0}}).json()["cached"] is True
    finally:
        server.stop()
