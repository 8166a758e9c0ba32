"""Redis at ``maxmemory`` with ``noeviction`` (it refuses writes): answers are returned uncached, sweeps get a 503
naming the cause, ``/healthz`` says "full", job writes are retried, and a job that cannot store its points fails
visibly while its worker lives on.

Regression: ``/v1/solve`` computed and then answered 500 on the cache write, ``/v1/sweeps`` answered 500, the
worker crashed and its job stayed "running".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from service import redis_link
from service.app import create_app
from service.redis_link import is_full
from tests.integration.conftest import POTENTIAL, WorkerProcess, app_settings, events, sweep_request, wait_finished
from tests.integration.conftest import wait_until as wait_job
from tests.redis_server import RedisServer, start_redis

pytestmark = [pytest.mark.redis, pytest.mark.slow]

KEY = {"X-API-Key": "key-one"}
NOEVICTION = ("--maxmemory-policy", "noeviction")
#: Seconds the API remembers a write refused for lack of memory, here (long beside the test's requests).
FULL_RECALL = 3.0


@pytest.fixture()
def capped() -> Iterator[RedisServer]:
    server = start_redis(options=NOEVICTION)
    yield server
    server.stop()


def fill(r: redis.Redis) -> None:
    """Fill Redis with junk until it refuses a write, then hold it there (a cap below what it holds: Redis frees
    buffers lazily, and a cap exactly at the edge would let small writes through again)."""
    r.config_set("maxmemory", int(r.info("memory")["used_memory"]) + 256 * 1024)
    for i in range(10_000):
        try:
            r.set(f"junk:{i}", b"x" * 16_384)
        except redis.exceptions.ResponseError as exc:
            assert is_full(exc), exc
            r.config_set("maxmemory", int(r.info("memory")["used_memory"]) // 2)
            return
    raise AssertionError("Redis never filled up")


def free(r: redis.Redis) -> None:
    r.config_set("maxmemory", 0)
    keys = list(r.scan_iter("junk:*"))
    if keys:
        r.delete(*keys)


def wait_health(c: TestClient, state: str, timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while c.get("/healthz").json()["redis"] != state:
        assert time.monotonic() < deadline, f"/healthz never said {state}"
        time.sleep(0.05)


def test_a_full_redis_degrades_the_api_without_a_500(capped: RedisServer, caplog,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # a refusal is remembered for FULL_RECALL seconds (10 s in service): after the junk is freed, /healthz says ok
    # once the last refusal is that old
    monkeypatch.setattr(redis_link, "FULL_MEMORY_SECONDS", FULL_RECALL)
    r = capped.client()
    settings = app_settings(capped.url, api_keys=("key-one",), rate_limit_per_minute=1000)
    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        assert c.get("/v1/theories", headers=KEY).status_code == 200  # the instance secret exists by now
        fill(r)
        wait_health(c, "full")
        with caplog.at_level(logging.WARNING, logger="saddlelab.cache"):
            first = c.post("/v1/solve", json={"model": POTENTIAL}, headers=KEY)
            again = c.post("/v1/solve", json={"model": POTENTIAL}, headers=KEY)
        assert first.status_code == again.status_code == 200, first.text
        assert first.json()["converged"] and first.json()["cached"] is False and again.json()["cached"] is False
        assert any("not cached" in rec.getMessage() and "full" in rec.getMessage() for rec in caplog.records)
        sweep = c.post("/v1/sweeps", json=sweep_request(5), headers=KEY)
        assert sweep.status_code == 503 and "Redis is full" in sweep.json()["detail"], sweep.text
        assert c.get("/v1/jobs/nope", headers=KEY).status_code == 404  # reads still work
        free(r)
        wait_health(c, "ok", timeout=15)
        assert c.post("/v1/sweeps", json=sweep_request(5), headers=KEY).status_code == 202
        assert c.post("/v1/solve", json={"model": POTENTIAL}, headers=KEY).json()["cached"] is False
        assert c.post("/v1/solve", json={"model": POTENTIAL}, headers=KEY).json()["cached"] is True


def _worker(server: RedisServer, tmp_path: Path, outage: float) -> WorkerProcess:
    w = WorkerProcess(server.url, "w1", tmp_path, env={"SADDLELAB_REDIS_OUTAGE_SECONDS": str(outage)})
    w.wait_registered(server.client())
    return w


def test_job_writes_are_retried_while_redis_is_full(capped: RedisServer, tmp_path: Path) -> None:
    r = capped.client()
    worker = _worker(capped, tmp_path, outage=60)
    try:
        with TestClient(create_app(app_settings(capped.url))) as c:
            job_id = c.post("/v1/sweeps", json=sweep_request(700, D=150)).json()["job_id"]
            wait_job(c, job_id, lambda b: b["progress"]["done"] >= 30)
            fill(r)
            deadline = time.monotonic() + 30
            while "job write failed" not in worker.log():  # the line is waiting for room
                assert time.monotonic() < deadline, worker.log()
                time.sleep(0.1)
            free(r)
            job = wait_finished(c, job_id, timeout=120)
            assert job["status"] == "finished" and job["progress"] == {"done": 700, "total": 700}
            assert len(job["result"]["points"]) == 700
            assert worker.proc.poll() is None
    finally:
        worker.stop()


def test_a_job_that_cannot_store_its_points_fails_visibly_and_the_worker_lives_on(capped: RedisServer,
                                                                                   tmp_path: Path) -> None:
    r = capped.client()
    worker = _worker(capped, tmp_path, outage=2)
    try:
        with TestClient(create_app(app_settings(capped.url))) as c:
            job_id = c.post("/v1/sweeps", json=sweep_request(700, D=150)).json()["job_id"]
            wait_job(c, job_id, lambda b: b["progress"]["done"] >= 30)
            # Redis fills up with the job's own points: a cap just above what it holds now.
            r.config_set("maxmemory", int(r.info("memory")["used_memory"]) + 32 * 1024)
            job = wait_finished(c, job_id, timeout=180)
            assert job["status"] == "failed", job
            assert "Redis is full" in job["error"] and "points were dropped" in job["error"]
            assert worker.proc.poll() is None, worker.log()
            r.config_set("maxmemory", 0)
            # The same worker process takes the next job.
            small = c.post("/v1/sweeps", json={**sweep_request(5), "model": {**POTENTIAL, "u": 25.0}}).json()
            assert wait_finished(c, small["job_id"], timeout=180)["status"] == "finished", worker.log()
            assert [e["worker"] for e in events(c, small["job_id"], "completed")] == ["w1"]
            assert worker.proc.poll() is None
    finally:
        worker.stop()
