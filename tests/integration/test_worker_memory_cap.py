"""A work horse's address space is capped at its size plus max_solve_memory_bytes: a line that allocates more
fails its job with a MemoryError, and the worker goes on."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.integration.conftest import WorkerProcess, events, sweep_request, wait_finished

pytestmark = [pytest.mark.redis, pytest.mark.slow]

#: About 1 GB of inputs: admitted by the API's (default, 4 GiB) estimate check, above the worker's cap below.
HUNGRY = {"theory": "kernel_renormalization", "N1": 200, "T": 0.1,
          "data": {"kind": "teacher", "P": 50, "P_test": 10000, "N0": 6000}}


def test_a_line_beyond_the_workers_memory_cap_fails_its_job(api: TestClient, fresh_redis, tmp_path) -> None:
    cap = {"SADDLELAB_MAX_SOLVE_MEMORY_BYTES": str(300 * 2**20)}
    worker = WorkerProcess(fresh_redis.url, "capped", tmp_path, env=cap)
    try:
        worker.wait_registered(fresh_redis.client())
        sweep = {"model": HUNGRY, "parameter": "T", "values": [0.1, 0.2]}
        job_id = api.post("/v1/sweeps", json=sweep).json()["job_id"]
        job = wait_finished(api, job_id, timeout=180)
        assert job["status"] == "failed" and "MemoryError" in job["error"], job
        small = api.post("/v1/sweeps", json=sweep_request(5)).json()["job_id"]
        assert wait_finished(api, small, timeout=180)["status"] == "finished"
        assert [e["worker"] for e in events(api, small, "completed")] == ["capped"]
    finally:
        worker.stop()
