"""Every SIGTERM ends a worker within seconds, idle or busy, including when the stop races redis-py's pubsub thread.

A worker's stop unsubscribes from its command channel and then stopped the pubsub thread with a join without a
bound. When the thread read the unsubscribe reply first, it went back to wait up to 60 s for a subscription, and
the stop waited as long (3 of 12 timed stops took exactly 60 s). ``slow_unsubscribe_worker`` makes that order
certain; every stop here must still end within ``EXIT_SECONDS``.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.integration.conftest import WorkerProcess, app_settings, sweep_request, wait_until
from tests.integration.test_worker_stop import EXIT_SECONDS
from tests.redis_server import RedisServer

pytestmark = pytest.mark.redis

RACING = "tests.integration.slow_unsubscribe_worker"
#: The same race in a worker that loads no theories: idle workers that are only stopped start in a second or two.
IDLE_RACING = "tests.integration.idle_racing_worker"


def _stop_and_time(worker: WorkerProcess) -> float:
    started = time.monotonic()
    worker.signal(signal.SIGTERM)
    assert worker.exit_status(EXIT_SECONDS) == 0, worker.log()
    return time.monotonic() - started


def _workers(server: RedisServer, tmp_path: Path, count: int, module: str) -> list[WorkerProcess]:
    workers = [WorkerProcess(server.url, f"w{i}", tmp_path, module=module) for i in range(count)]
    for w in workers:
        w.wait_registered(server.client())
        w.wait_subscribed(server.client())
    return workers


def test_an_idle_worker_whose_pubsub_thread_reads_the_unsubscribe_first_exits_at_once(
    fresh_redis: RedisServer, tmp_path: Path
) -> None:
    [worker] = _workers(fresh_redis, tmp_path, 1, IDLE_RACING)
    try:
        _stop_and_time(worker)
        assert "unsubscribing from channel" in worker.log()
    finally:
        worker.stop()


def test_a_busy_worker_whose_pubsub_thread_reads_the_unsubscribe_first_exits_within_seconds(
    fresh_redis: RedisServer, tmp_path: Path
) -> None:
    [worker] = _workers(fresh_redis, tmp_path, 1, RACING)
    try:
        with TestClient(create_app(app_settings(fresh_redis.url))) as api:
            job_id = api.post("/v1/sweeps", json=sweep_request(2000, D=150)).json()["job_id"]
            wait_until(api, job_id, lambda b: b["progress"]["done"] >= 5)
            _stop_and_time(worker)
            assert "handing the running line back" in worker.log()
    finally:
        worker.stop()


@pytest.mark.slow
def test_ten_stops_of_fresh_idle_workers_each_end_within_seconds(fresh_redis: RedisServer, tmp_path: Path) -> None:
    workers: list[WorkerProcess] = []
    try:
        workers = _workers(fresh_redis, tmp_path, 10, IDLE_RACING)
        deadline = time.monotonic() + EXIT_SECONDS
        for w in workers:  # all at once: each has EXIT_SECONDS from its signal
            w.signal(signal.SIGTERM)
        for w in workers:
            assert w.exit_status(max(0.0, deadline - time.monotonic())) == 0, w.log()
            assert "unsubscribing from channel" in w.log()
    finally:
        for w in workers:
            w.stop()
