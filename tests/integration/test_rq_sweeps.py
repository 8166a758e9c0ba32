"""Sweeps on a real RQ worker process: every point, the seed's transitions, dedupe, results in SaddleLab's keys."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.jobs.store import JobKeys, JobStore
from service.schemas import JobStatus
from tests.integration.conftest import (
    U_FIRST_ORDER,
    app_settings,
    events,
    sweep_request,
    wait_finished,
)

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def test_u_sweep_of_the_potential_finishes_on_the_worker(api: TestClient, start_worker, fresh_redis) -> None:
    start_worker("w1")
    r = api.post("/v1/sweeps", json=sweep_request(41))
    assert r.status_code == 202, r.text
    job_id = r.json()["job_id"]
    job = wait_finished(api, job_id)
    assert job["status"] == "finished", job
    assert job["backend"] == "rq"
    JobStatus.model_validate(job)  # the stored result, passed through as text, still has the contract's shape
    assert job["progress"] == {"done": 41, "total": 41}
    points = job["result"]["points"]
    # Every requested value, in order, each with its own point.
    np.testing.assert_allclose([p["parameter"] for p in points], np.linspace(20, 40, 41), rtol=0, atol=1e-12)
    first = [t for t in job["result"]["transitions"] if t["kind"] == "first_order"]
    spinodals = sorted(t["parameter"] for t in job["result"]["transitions"] if t["kind"] == "spinodal")
    assert len(first) == 1
    # The seed quotes 29.45; the equal-depth point of the potential is exactly 75 pi / 8.
    assert first[0]["parameter"] == pytest.approx(29.45, abs=5e-3)
    assert first[0]["parameter"] == pytest.approx(U_FIRST_ORDER, abs=1e-6)
    assert len(spinodals) == 2 and spinodals[0] < first[0]["parameter"] < spinodals[1]
    # Below the first-order point the uninformed centre is the equilibrium, above it the aligned well.
    for p in points:
        assert p["equilibrium"] == ("center" if p["parameter"] < first[0]["parameter"] else "aligned")
    # It ran on the worker process, once.
    ran = events(api, job_id, "completed")
    assert [(e["worker"], e["computed"], e["reused"]) for e in ran] == [("w1", 41, 0)]


def test_identical_submissions_share_one_job_and_one_computation(api: TestClient, start_worker) -> None:
    start_worker("w1")
    req = sweep_request(11, method="grid")
    first = api.post("/v1/sweeps", json=req).json()
    # The same sweep spelled differently: a default stated explicitly, the values listed one by one.
    same = {**req, "model": {**req["model"], "D": None}, "values": np.linspace(20, 40, 11).tolist()}
    again = api.post("/v1/sweeps", json=same).json()
    assert again["job_id"] == first["job_id"] and again["deduplicated"] is True
    assert wait_finished(api, first["job_id"])["status"] == "finished"
    after = api.post("/v1/sweeps", json=req).json()
    assert after["job_id"] == first["job_id"] and after["deduplicated"] is True
    assert len(events(api, first["job_id"], "started")) == 1


def test_results_live_in_saddlelab_keys_with_the_result_ttl(fresh_redis, start_worker) -> None:
    ttl = 5000
    with TestClient(create_app(app_settings(fresh_redis.url, result_ttl=ttl))) as api:
        start_worker("w1")
        job_id = api.post("/v1/sweeps", json=sweep_request(21)).json()["job_id"]
        job = wait_finished(api, job_id)
        assert job["status"] == "finished"
        r = fresh_redis.client()
        keys = JobKeys(JobStore(r, ttl).computation_of(job_id))  # the computation behind the key's job
        for name in (keys.result, keys.result_points, keys.meta, keys.owners, JobKeys.handle(job_id)):
            assert 0 < r.ttl(name) <= ttl, name
        # RQ's records are transport only: with every rq:* key gone the result is still served.
        rq_keys = list(r.scan_iter("rq:*"))
        assert rq_keys
        r.delete(*rq_keys)
        again = api.get(f"/v1/jobs/{job_id}").json()
        assert again["status"] == "finished" and again["result"] == job["result"]


def test_a_repeated_solve_is_served_from_redis(fresh_redis) -> None:
    body = {"model": sweep_request(1)["model"]}
    with TestClient(create_app(app_settings(fresh_redis.url))) as one:
        a = one.post("/v1/solve", json=body).json()
        b = one.post("/v1/solve", json=body).json()
    assert a["cached"] is False and b["cached"] is True
    assert fresh_redis.client().exists(f"saddlelab:solve:{a['spec_hash']}")
    # A second API process on the same Redis (a fresh in-process state) gets the cached answer.
    with TestClient(create_app(app_settings(fresh_redis.url))) as two:
        c = two.post("/v1/solve", json=body).json()
    assert c["cached"] is True and c["order_parameters"] == a["order_parameters"]


def test_grid_sweep_on_the_worker_matches_the_continuation(api: TestClient, start_worker) -> None:
    start_worker("w1")
    grid = wait_finished(api, api.post("/v1/sweeps", json=sweep_request(21, method="grid")).json()["job_id"])
    assert grid["status"] == "finished" and grid["progress"]["done"] == 21
    first = [t for t in grid["result"]["transitions"] if t["kind"] == "first_order"]
    assert len(first) == 1 and first[0]["parameter"] == pytest.approx(U_FIRST_ORDER, abs=1e-6)


def test_a_line_that_raises_fails_its_job_with_the_reason(api: TestClient, start_worker, fresh_redis) -> None:
    job_id = api.post("/v1/sweeps", json=sweep_request(5)).json()["job_id"]
    # Corrupt the stored job before a worker sees it: its spec no longer validates.
    r = fresh_redis.client()
    meta = JobKeys(JobStore(r, 60).computation_of(job_id)).meta
    payload = json.loads(r.hget(meta, "payload"))
    payload["model"]["u"] = -5.0
    r.hset(meta, "payload", json.dumps(payload))
    start_worker("w1")
    job = wait_finished(api, job_id)
    assert job["status"] == "failed" and job["error"].startswith("line 0: ValidationError")
    assert [e["event"] for e in events(api, job_id)] == ["started", "failed"]
