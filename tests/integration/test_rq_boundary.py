"""A boundary job runs through the RQ backend as one line on a real worker, and equals the in-process result."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from service.jobs.lines import run_line
from service.schemas import JobStatus, SweepRequest
from service.settings import Settings
from service.sweep_plan import plan
from tests.integration.conftest import POTENTIAL, events, wait_finished

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def test_a_boundary_job_is_one_line_on_a_worker(api: TestClient, start_worker) -> None:
    start_worker("a")
    req = {"model": POTENTIAL, "parameter": ["b", "u"], "method": "boundary",
           "values": [{"start": 0.25, "stop": 0.4, "num": 2}, {"start": 10.0, "stop": 60.0, "num": 2}]}
    r = api.post("/v1/sweeps", json=req)
    assert r.status_code == 202, r.text
    job = wait_finished(api, r.json()["job_id"], timeout=120)
    assert job["status"] == "finished", job
    JobStatus.model_validate(job)
    assert job["kind"] == "boundary" and job["chunks"] == {"done": 1, "total": 1}
    assert [e["line"] for e in events(api, job["job_id"], "completed")] == [0]
    result = job["result"]
    assert sorted(line["kind"] for line in result["lines"]) == ["first_order", "spinodal", "stability_loss"]
    direct = run_line(plan(SweepRequest.model_validate(req), Settings(redis_url=None)))
    assert [line["points"] for line in result["lines"]] == [line["points"] for line in direct["lines"]]
