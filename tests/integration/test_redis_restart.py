"""Redis SIGKILLed in the middle of a sweep and restarted from its append-only file: the same worker process
carries on and the sweep finishes with every point.

Regression: the worker exited when Redis went away, and nothing moved until a worker was started by hand.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.integration.conftest import WorkerProcess, app_settings, events, sweep_request, wait_finished, wait_until
from tests.integration.test_rq_resume import _check_complete
from tests.redis_server import start_redis

pytestmark = [pytest.mark.redis, pytest.mark.slow]

#: Long enough that the line is still computing when Redis dies, also on a quiet machine.
NUM = 2000
#: As docker-compose.yml runs it: AOF, fsync once a second (a crash may lose the last second of writes).
AOF = ("--appendonly", "yes", "--appendfsync", "everysec")


def test_the_worker_outlives_a_redis_crash_and_the_sweep_finishes(tmp_path: Path) -> None:
    server = start_redis(options=AOF)
    worker = None
    try:
        worker = WorkerProcess(server.url, "survivor", tmp_path, env={"SADDLELAB_REDIS_OUTAGE_SECONDS": "120"})
        worker.wait_registered(server.client())
        with TestClient(create_app(app_settings(server.url, redis_retry_seconds=0.2))) as api:
            job_id = api.post("/v1/sweeps", json=sweep_request(NUM, D=150)).json()["job_id"]
            submitted = time.monotonic()
            wait_until(api, job_id, lambda b: b["progress"]["done"] >= 30)
            # The job's own record is older than the AOF's last fsync (once a second); its latest points may not be.
            time.sleep(max(0.0, 1.2 - (time.monotonic() - submitted)))
            before = api.get(f"/v1/jobs/{job_id}").json()
            assert before["status"] == "running" and before["progress"]["done"] < NUM, before["progress"]
            server.kill()
            assert api.get(f"/v1/jobs/{job_id}").status_code == 503
            deadline = time.monotonic() + 5
            while api.get("/healthz").json()["redis"] != "down":
                assert time.monotonic() < deadline
                time.sleep(0.1)
            time.sleep(2.0)  # the work horse's writes wait meanwhile; the worker must not give up
            assert worker.proc.poll() is None, worker.log()
            assert "job write failed" in worker.log()  # it was computing when Redis died, and waited
            server.restart()  # same port, same data directory: the AOF is replayed
            job = wait_finished(api, job_id, timeout=180)
            _check_complete(job, NUM)
            # The very same worker process finished it, without a new execution of the line.
            assert worker.proc.poll() is None, worker.log()
            done = events(api, job_id, "completed")
            assert [e["worker"] for e in done] == ["survivor"]
            assert len(events(api, job_id, "started")) == 1
            # ... and it goes on taking new work.
            again = api.post("/v1/sweeps", json=sweep_request(5)).json()["job_id"]
            assert wait_finished(api, again, timeout=180)["status"] == "finished"
    finally:
        if worker is not None:
            worker.stop()
        server.stop()
