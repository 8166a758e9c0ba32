"""Identical concurrent cold solves are computed once: within one API process, and across processes sharing Redis."""

from __future__ import annotations

import threading

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.service.conftest import POTENTIAL, settings

N = 20


def _hammer(clients: list[TestClient], spec: dict) -> list[dict]:
    out: list[dict] = []
    lock = threading.Lock()
    start = threading.Barrier(N)

    def go(c: TestClient) -> None:
        start.wait()
        r = c.post("/v1/solve", json={"model": spec})
        assert r.status_code == 200, r.text
        with lock:
            out.append(r.json())

    threads = [threading.Thread(target=go, args=(clients[i % len(clients)],)) for i in range(N)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return out


def test_twenty_identical_cold_solves_are_computed_once() -> None:
    with TestClient(create_app(settings())) as c:
        results = _hammer([c], {**POTENTIAL, "u": 27.5})
        assert c.app.state.saddlelab.solver.computations == 1  # type: ignore[attr-defined]
    assert len(results) == N and sum(not r["cached"] for r in results) == 1
    assert len({r["spec_hash"] for r in results}) == 1
    assert all(r["order_parameters"] == results[0]["order_parameters"] for r in results)


@pytest.mark.redis
def test_identical_cold_solves_on_two_api_processes_sharing_redis_are_computed_once(fresh_redis) -> None:
    s = settings(redis_url=fresh_redis.url)
    with TestClient(create_app(s)) as one, TestClient(create_app(s)) as two:
        results = _hammer([one, two], {**POTENTIAL, "u": 28.5})
        computed = sum(c.app.state.saddlelab.solver.computations for c in (one, two))  # type: ignore[attr-defined]
    assert computed == 1 and sum(not r["cached"] for r in results) == 1
