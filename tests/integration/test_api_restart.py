"""An API process SIGKILLed right after accepting a sweep loses no job: another API process on the same Redis
serves it to its owner, and a worker finishes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.integration.conftest import ROOT, app_settings, sweep_request, wait_finished
from tests.redis_server import free_port

pytestmark = [pytest.mark.redis, pytest.mark.slow]

KEY = "key-of-alice"


def test_a_killed_api_loses_no_job(fresh_redis, start_worker, tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "REDIS_URL": fresh_redis.url, "SADDLELAB_API_KEYS": KEY, "SADDLELAB_PORT": str(port),
           "SADDLELAB_SECRET": "s3cret-for-both-processes", "PYTHONWARNINGS": "ignore"}
    with open(tmp_path / "api.log", "w") as log:
        api = subprocess.Popen([sys.executable, "-m", "service"], cwd=ROOT, env=env, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert api.poll() is None and time.monotonic() < deadline, (tmp_path / "api.log").read_text()[-2000:]
            time.sleep(0.1)
        r = httpx.post(f"{url}/v1/sweeps", json=sweep_request(21), headers={"X-API-Key": KEY}, timeout=30)
        assert r.status_code == 202, r.text
        job_id = r.json()["job_id"]
        os.killpg(api.pid, signal.SIGKILL)
        api.wait(10)
    finally:
        if api.poll() is None:
            os.killpg(api.pid, signal.SIGKILL)
            api.wait(10)
    other = app_settings(fresh_redis.url, api_keys=(KEY,), secret="s3cret-for-both-processes")
    with TestClient(create_app(other), headers={"X-API-Key": KEY}) as c:
        assert c.get(f"/v1/jobs/{job_id}").json()["status"] == "queued"
        start_worker("w1")
        job = wait_finished(c, job_id)
    assert job["status"] == "finished" and job["progress"] == {"done": 21, "total": 21}
