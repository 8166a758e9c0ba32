"""A held status request (``?wait=``) costs the same whatever the size of its job, and a key holds only so many.

Regression: each held request re-read the whole status every 20–250 ms (a count per line, queue positions line by
line, a reconciliation of every line's RQ job every 2 s): on a 2 000 × 20 phase diagram, 20 long-polls used a whole
core. Here no worker runs, so both jobs stay queued for the whole test; the Redis commands a request costs are
counted by the server itself (``total_commands_processed``), for a short and a long wait: the difference is what
the extra looks cost.
"""

from __future__ import annotations

import threading
import time

import pytest
import redis
from fastapi.testclient import TestClient

from service.app import create_app
from service.kernel import rq_units
from tests.integration.conftest import POTENTIAL, app_settings
from tests.redis_server import RedisServer

SMALL = {"model": POTENTIAL, "parameter": "u", "values": {"start": 20, "stop": 40, "num": 5}, "method": "grid"}
#: 400 lines of 5 points.
LARGE = {"model": POTENTIAL, "parameter": ["b", "u"], "method": "grid",
         "values": [{"start": 0.1, "stop": 0.5, "num": 400}, {"start": 20, "stop": 40, "num": 5}]}
#: Two seconds apart; both longer than the interval of the status's reconciliation with RQ (shortened to
#: ``RECONCILE_AFTER`` here, from its 2 s, so that the waits need not outlast it): each answer makes one.
SHORT, LONG = 1.0, 3.0
RECONCILE_AFTER = 0.05


def _commands(r: redis.Redis) -> int:
    return int(r.info("stats")["total_commands_processed"])


def _cost(c: TestClient, r: redis.Redis, job_id: str, wait: float) -> int:
    before = _commands(r)
    body = c.get(f"/v1/jobs/{job_id}", params={"wait": wait}).json()
    assert body["status"] == "queued", body
    return _commands(r) - before - 1  # less the INFO of the first count


def test_a_held_request_costs_the_same_for_a_job_of_one_line_and_one_of_400(
        fresh_redis: RedisServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rq_units, "RECONCILE_EVERY", RECONCILE_AFTER)
    r = fresh_redis.client()
    with TestClient(create_app(app_settings(fresh_redis.url))) as c:
        small = c.post("/v1/sweeps", json=SMALL).json()["job_id"]
        large = c.post("/v1/sweeps", json=LARGE).json()["job_id"]
        looks = {}
        for name, job_id in (("small", small), ("large", large)):
            looks[name] = _cost(c, r, job_id, LONG) - _cost(c, r, job_id, SHORT)
    # Two seconds of looks (about ten, a few commands each) besides the one full status read of each request.
    assert 0 < looks["small"] < 80, looks
    assert looks["large"] < looks["small"] + 20, looks


def test_an_answered_status_read_costs_the_same_for_a_job_of_one_line_and_one_of_400(
        fresh_redis: RedisServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The answer itself reads progress from the computation's counters, not a count per line (a 400-line job
    cost 400 more commands). The reconciliation with RQ, at most once per job in ``RECONCILE_EVERY``, is kept out
    by making that interval long: only each job's first read makes one."""
    monkeypatch.setattr(rq_units, "RECONCILE_EVERY", 1e9)
    r = fresh_redis.client()
    with TestClient(create_app(app_settings(fresh_redis.url))) as c:
        costs = {}
        for name, body in (("small", SMALL), ("large", LARGE)):
            job_id = c.post("/v1/sweeps", json=body).json()["job_id"]
            _cost(c, r, job_id, 0)  # the reconciliation
            costs[name] = _cost(c, r, job_id, 0)
    assert costs["large"] <= costs["small"] + 2, costs


def test_a_key_holds_at_most_max_waits_per_key_requests(fresh_redis: RedisServer) -> None:
    with TestClient(create_app(app_settings(fresh_redis.url, max_waits_per_key=2, api_keys=("a", "b")))) as c:
        job_a = c.post("/v1/sweeps", json=SMALL, headers={"X-API-Key": "a"}).json()["job_id"]
        job_b = c.post("/v1/sweeps", json=LARGE, headers={"X-API-Key": "b"}).json()["job_id"]
        held = [threading.Thread(target=c.get, args=(f"/v1/jobs/{job_a}",),
                                 kwargs={"params": {"wait": 5}, "headers": {"X-API-Key": "a"}}) for _ in range(2)]
        for t in held:
            t.start()
        state = c.app.state.saddlelab  # type: ignore[attr-defined]
        deadline = time.monotonic() + 5
        while state.held.count("a") < 2:
            assert time.monotonic() < deadline, "the two requests were not held"
            time.sleep(0.01)
        t0 = time.monotonic()
        assert c.get(f"/v1/jobs/{job_a}", params={"wait": 5}, headers={"X-API-Key": "a"}).json()["status"] == "queued"
        third = time.monotonic() - t0
        t0 = time.monotonic()
        c.get(f"/v1/jobs/{job_b}", params={"wait": 1}, headers={"X-API-Key": "b"})
        other_key = time.monotonic() - t0
        for t in held:
            t.join()
    assert third < 2.5, third  # answered at once (the cap of key a), not held for 5 s
    assert other_key >= 0.9, other_key  # key b still holds its own
