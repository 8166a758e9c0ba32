"""Cancelling a job on the RQ backend stops it; a resubmission reuses what was already computed."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from service.jobs.store import JobStore
from tests.integration.conftest import events, job_of, sweep_request, wait_finished, wait_until

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def _rq_status(redis_client, job_id: str) -> JobStatus:
    store = JobStore(redis_client, 60)
    meta = store.meta(store.computation_of(job_id))  # the computation behind the key's job
    assert meta is not None
    return Job.fetch(meta["rq:0"], connection=redis_client, serializer=JSONSerializer).get_status()


def test_cancelling_a_running_sweep_stops_it_and_frees_the_worker(api: TestClient, start_worker, fresh_redis) -> None:
    start_worker("w1")
    req = sweep_request(600, D=150)
    job_id = api.post("/v1/sweeps", json=req).json()["job_id"]
    wait_until(api, job_id, lambda b: b["progress"]["done"] >= 20)

    r = api.delete(f"/v1/jobs/{job_id}")
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    # The work horse is stopped: no more points arrive.
    deadline = time.monotonic() + 15
    while _rq_status(fresh_redis.client(), job_id) == JobStatus.STARTED and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _rq_status(fresh_redis.client(), job_id) != JobStatus.STARTED
    stopped_at = job_of(api, job_id)["progress"]["done"]
    time.sleep(1.0)
    after = job_of(api, job_id)
    assert after["status"] == "cancelled" and after["progress"]["done"] == stopped_at < 600

    # The worker is free for the next job.
    small = api.post("/v1/sweeps", json=sweep_request(5)).json()["job_id"]
    assert wait_finished(api, small, timeout=180)["status"] == "finished"

    # Submitting the cancelled sweep again starts a new run that reuses the points already stored.
    again = api.post("/v1/sweeps", json=req).json()
    assert again["job_id"] == job_id and again["deduplicated"] is False
    job = wait_finished(api, job_id)
    assert job["status"] == "finished" and job["progress"]["done"] == 600
    last = events(api, job_id, "started")[-1]
    assert last["stored"] == stopped_at
    assert events(api, job_id, "completed")[-1]["computed"] == 600 - stopped_at


def test_cancelling_a_queued_sweep_keeps_it_off_the_workers(api: TestClient, start_worker, fresh_redis) -> None:
    job_id = api.post("/v1/sweeps", json=sweep_request(31)).json()["job_id"]
    assert job_of(api, job_id)["status"] == "queued"
    assert api.delete(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"
    assert _rq_status(fresh_redis.client(), job_id) == JobStatus.CANCELED

    start_worker("late")
    marker = api.post("/v1/sweeps", json=sweep_request(3)).json()["job_id"]
    assert wait_finished(api, marker, timeout=180)["status"] == "finished"  # the worker has drained the queue
    job = job_of(api, job_id, detail=True)
    assert job["status"] == "cancelled" and job["progress"]["done"] == 0
    assert [e["event"] for e in job["executions"]] == ["cancel_requested"]


def test_cancel_of_an_unknown_job_is_404_and_of_a_finished_job_changes_nothing(api: TestClient, start_worker) -> None:
    assert api.delete("/v1/jobs/nope").status_code == 404
    start_worker("w1")
    job_id = api.post("/v1/sweeps", json=sweep_request(5)).json()["job_id"]
    assert wait_finished(api, job_id)["status"] == "finished"
    r = api.delete(f"/v1/jobs/{job_id}")
    assert r.status_code == 200 and r.json()["status"] == "finished"
