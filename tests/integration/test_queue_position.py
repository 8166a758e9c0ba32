"""The job status says how many lines wait ahead of the job's next line, on the RQ backend too."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.integration.conftest import POTENTIAL, job_of, sweep_request, wait_finished

pytestmark = pytest.mark.redis


def test_queued_jobs_report_their_place_in_the_queue(api: TestClient, start_worker) -> None:
    ids = [api.post("/v1/sweeps", json=sweep_request(n)).json()["job_id"] for n in (3, 4, 5)]
    diagram = {"model": POTENTIAL, "parameter": ["b", "u"], "values": [[0.25, 0.3], [20.0, 30.0]]}
    ids.append(api.post("/v1/sweeps", json=diagram).json()["job_id"])
    # No worker yet: every line waits, in submission order (the diagram's first row after the three sweeps).
    assert [job_of(api, j)["queue_position"] for j in ids] == [0, 1, 2, 3]
    start_worker("w1")
    for j in ids:
        assert wait_finished(api, j, timeout=180)["status"] == "finished"
        assert job_of(api, j)["queue_position"] is None
