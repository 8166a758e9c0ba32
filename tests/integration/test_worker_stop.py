"""SIGTERM (``docker compose stop``, ``restart``, ``down``) ends a real worker with status 0 within seconds: idle,
while it starts, and together with its Redis, idle or busy. (A busy worker with Redis up hands its line back:
``test_rq_resume.py``.)

Regression: RQ ends an idle worker's loop by raising StopRequested without recording the request, and the
worker took the ended loop for a Redis fault and started it again, so that every stop waited for the grace
period and was SIGKILLed.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from rq import Worker
from rq.serializers import JSONSerializer

from service.app import create_app
from tests.integration.conftest import ROOT, WorkerProcess, app_settings, events, sweep_request, wait_until
from tests.integration.test_rq_resume import _alive
from tests.redis_server import RedisServer, start_redis

pytestmark = pytest.mark.redis

#: What "within seconds" means here, with room for a loaded machine; an unfixed worker never exits.
EXIT_SECONDS = 10


def test_an_idle_worker_exits_at_once_and_records_its_death(fresh_redis: RedisServer, start_worker) -> None:
    worker = start_worker("idle")
    worker.signal(signal.SIGTERM)
    assert worker.exit_status(EXIT_SECONDS) == 0
    assert "starting it again" not in worker.log()
    # A clean exit leaves no live record behind (a stale one would count as a worker for the healthcheck).
    assert [w.name for w in Worker.all(connection=fresh_redis.client(), serializer=JSONSerializer)] == []


def test_a_worker_stopped_while_it_starts_exits_cleanly(fresh_redis: RedisServer, tmp_path: Path) -> None:
    worker = WorkerProcess(fresh_redis.url, "starting", tmp_path)
    try:
        # The worker has taken charge of SIGTERM and is importing the theories (seconds): its loop has not begun.
        deadline = time.monotonic() + 30
        while not _catches(worker.pid, signal.SIGTERM):
            assert time.monotonic() < deadline and worker.proc.poll() is None, worker.log()
            time.sleep(0.005)
        assert not fresh_redis.client().smembers("rq:workers")
        worker.signal(signal.SIGTERM)
        assert worker.exit_status(EXIT_SECONDS) == 0, worker.log()
    finally:
        worker.stop()


def _catches(pid: int, sig: int) -> bool:
    """The process has a handler of its own for ``sig`` (``SigCgt`` of /proc/<pid>/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


@pytest.fixture()
def own_redis() -> RedisServer:
    """A redis-server of this test alone (it is stopped with the worker), with AOF as the lab runs it."""
    server = start_redis(options=("--appendonly", "yes", "--appendfsync", "everysec"))
    yield server
    server.stop()


def _stop_together(server: RedisServer, worker: WorkerProcess) -> None:
    """What `docker compose stop` of the whole lab can do: SIGTERM to Redis and the worker at the same moment."""
    server.process.send_signal(signal.SIGTERM)
    worker.signal(signal.SIGTERM)
    server.process.wait(10)


def test_an_idle_worker_and_its_redis_stopped_together(own_redis: RedisServer, tmp_path: Path) -> None:
    worker = WorkerProcess(own_redis.url, "idle", tmp_path)
    try:
        worker.wait_registered(own_redis.client())
        _stop_together(own_redis, worker)
        assert worker.exit_status(EXIT_SECONDS) == 0
        assert "starting it again" not in worker.log()
    finally:
        worker.stop()


def test_a_busy_worker_stopped_after_its_redis(own_redis: RedisServer, tmp_path: Path) -> None:
    """Redis stops first (stopped together, a busy worker usually still hands its line back in time; this is the
    case where it cannot): after ``stop_redis_wait`` the worker ends its line and exits. The line resumes from its
    stored points once Redis is back (the abandoned-line path, ``test_rq_resume.py``)."""
    worker = WorkerProcess(own_redis.url, "busy", tmp_path, env={"SADDLELAB_WORKER_STOP_REDIS_WAIT": "2"})
    try:
        worker.wait_registered(own_redis.client())
        with TestClient(create_app(app_settings(own_redis.url, redis_retry_seconds=0.2))) as api:
            job_id = api.post("/v1/sweeps", json=sweep_request(2000, D=150)).json()["job_id"]
            wait_until(api, job_id, lambda b: b["progress"]["done"] >= 30)
            horse = events(api, job_id, "started")[0]["pid"]
            own_redis.process.send_signal(signal.SIGTERM)
            own_redis.process.wait(10)
            stopped = time.monotonic()
            worker.signal(signal.SIGTERM)
            # stop_redis_wait (2 s) + one heartbeat (1 s) + the loaded machine's slack.
            assert worker.exit_status(EXIT_SECONDS + 3) == 0
            assert time.monotonic() - stopped < EXIT_SECONDS + 3
            deadline = time.monotonic() + 5
            while _alive(horse) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not _alive(horse), "the line's work horse outlived its worker"
            assert "ending the running line" in worker.log()
    finally:
        worker.stop()


def test_the_worker_module_still_runs_as_a_script() -> None:
    """``--help`` of the entry point the compose file and the CLI run (the stop handlers are installed after it)."""
    out = subprocess.run([sys.executable, "-m", "service.worker", "--help"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "--check" in out.stdout
