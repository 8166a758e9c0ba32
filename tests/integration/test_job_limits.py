"""The per-key limit on unfinished jobs, on both backends (in-process and RQ)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from service.app import create_app
from service.jobs.store import JobStore
from tests.integration.conftest import app_settings, sweep_request

K1, K2 = {"X-API-Key": "key-one"}, {"X-API-Key": "key-two"}


def _long(num: int) -> dict:
    # Long enough to stay unfinished for the whole test on the in-process backend.
    return sweep_request(num, D=150)


@pytest.mark.parametrize("backend", ["local", pytest.param("rq", marks=pytest.mark.redis)])
def test_unfinished_jobs_per_key_are_limited(backend: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("fresh_redis").url if backend == "rq" else None
    settings = app_settings(url, api_keys=("key-one", "key-two"), max_jobs_per_key=2)
    with TestClient(create_app(settings)) as c:
        ids = []
        for num in (1500, 1501):
            r = c.post("/v1/sweeps", json=_long(num), headers=K1)
            assert r.status_code == 202, r.text
            ids.append(r.json()["job_id"])
        try:
            r = c.post("/v1/sweeps", json=_long(1502), headers=K1)
            assert r.status_code == 429
            assert "max_jobs_per_key=2" in r.json()["detail"]
            # Asking again for a job one already has is not a new job.
            again = c.post("/v1/sweeps", json=_long(1500), headers=K1)
            assert again.status_code == 202 and again.json()["deduplicated"] is True
            # Other keys have their own allowance.
            other = c.post("/v1/sweeps", json=_long(1503), headers=K2)
            assert other.status_code == 202
            ids.append(other.json()["job_id"])
            # A cancelled job no longer counts.
            assert c.delete(f"/v1/jobs/{ids[0]}", headers=K1).json()["status"] == "cancelled"
            r = c.post("/v1/sweeps", json=_long(1502), headers=K1)
            assert r.status_code == 202, r.text
            ids.append(r.json()["job_id"])
        finally:
            for job_id in ids:
                c.delete(f"/v1/jobs/{job_id}", headers=K1)


@pytest.mark.redis
def test_a_job_whose_queue_job_failed_for_good_is_failed_and_frees_its_slot(fresh_redis) -> None:
    settings = app_settings(fresh_redis.url, api_keys=("key-one",), max_jobs_per_key=1)
    with TestClient(create_app(settings)) as c:
        job_id = c.post("/v1/sweeps", json=sweep_request(7), headers=K1).json()["job_id"]
        assert c.post("/v1/sweeps", json=sweep_request(8), headers=K1).status_code == 429
        # RQ gave up on the line (retries used up): SaddleLab reports the job failed, with the reason.
        r = fresh_redis.client()
        store = JobStore(r, 60)
        rq_job = Job.fetch(store.meta(store.computation_of(job_id))["rq:0"], connection=r, serializer=JSONSerializer)
        rq_job.set_status(JobStatus.FAILED)
        assert c.post("/v1/sweeps", json=sweep_request(8), headers=K1).status_code == 202
        body = c.get(f"/v1/jobs/{job_id}", headers=K1).json()
        assert body["status"] == "failed" and "line 0 failed on its worker" in body["error"]
