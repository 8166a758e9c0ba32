"""Bytes bounded end to end, on a real worker and a real Redis: a sweep that would store more than the instance's
``job_stored_bytes`` is refused within its first point, its points dropped and its key's job slot freed; the
result is assembled inside Redis (never one HGETALL of a line), an assembly that cannot complete fails with its
reason and frees its points; pages are cut in bytes as well as points; ``limit=1`` reads one point.

Regression: a sweep allowed by every limit stored ~0.9 GB in one line's hash; assembly read it with one HGETALL
and failed (MemoryError) past the work horse's memory limit, the points stayed for 30 days, a resubmission
assembled inside the request (503) and left the job ``queued`` at 2000/2000 forever, counting against its key.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from service.app import create_app
from service.jobs.store import JobKeys, JobStore
from service.kernel import stored_bytes
from tests.integration.conftest import app_settings, sweep_request, wait_finished, wait_until
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def _calls(r: redis.Redis, command: str) -> int:
    return int(r.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0))


def commands_during(r: redis.Redis, fn: Callable[[], Any]) -> tuple[Any, list[str]]:
    """``fn()`` and every command Redis ran meanwhile (MONITOR), as text."""
    seen: list[str] = []
    ready, stop = threading.Event(), "saddlelab-test-monitor-end"

    def watch() -> None:
        with r.monitor() as m:
            ready.set()
            for cmd in m.listen():
                if stop in cmd["command"]:
                    return
                seen.append(cmd["command"])

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    ready.wait(5)
    time.sleep(0.2)
    try:
        out = fn()
    finally:
        r.echo(stop)
        t.join(10)
    return out, seen


def test_a_sweep_past_the_byte_limit_fails_within_its_first_point_and_frees_its_slot(
        fresh_redis: RedisServer, start_worker, monkeypatch: pytest.MonkeyPatch) -> None:
    # The API's estimate before the run misses (as for points heavier than their theory declares): the worker's
    # measure of the first point catches it.
    monkeypatch.setattr(stored_bytes, "POINT_BASE", 0)
    r = fresh_redis.client()
    settings = app_settings(fresh_redis.url, limits={"job_stored_bytes": 40_000}, max_jobs_per_key=1)
    with TestClient(create_app(settings)) as api:
        start_worker("w1")
        big = api.post("/v1/sweeps", json=sweep_request(400, method="grid")).json()["job_id"]
        job = wait_until(api, big, lambda b: b["status"] in ("finished", "failed", "cancelled"), timeout=300)
        assert job["status"] == "failed", job
        assert "job_stored_bytes=40000" in job["error"] and "MiB" in job["error"], job["error"]
        assert job["progress"]["done"] == 0  # its points are dropped
        assert not r.keys("saddlelab:job:*:points:*")
        # The key's one job slot is free again: a small sweep is accepted (not 429) and finishes.
        small = api.post("/v1/sweeps", json=sweep_request(5, method="grid"))
        assert small.status_code == 202, small.text
        assert wait_finished(api, small.json()["job_id"])["status"] == "finished"


def test_assembly_stays_in_redis_and_pages_are_cut_in_bytes(fresh_redis: RedisServer, start_worker) -> None:
    r = fresh_redis.client()
    with TestClient(create_app(app_settings(fresh_redis.url, result_page_bytes=6000))) as api:
        start_worker("w1")
        job_id = api.post("/v1/sweeps", json=sweep_request(60, method="grid")).json()["job_id"]
        key = JobStore(r, 60).computation_of(job_id)
        job, seen = commands_during(r, lambda: wait_finished(api, job_id))
        # The line's points were written one by one and copied, in Redis, to the result: never read whole.
        assert not [c for c in seen if c.startswith("HGETALL") and JobKeys(key).points(0) in c]
        # The handle and the record are read whole (small hashes), the points never: far fewer than one per point.
        points = job["result"]["points"]
        size = max(len(json.dumps(p)) for p in points)
        assert len(points) < 60 and job["page"]["next"] == len(points), job["page"]
        assert sum(len(json.dumps(p)) for p in points) <= 6000 + size
        seen = list(points)
        while job["page"]["next"] is not None:
            job = api.get(f"/v1/jobs/{job_id}", params={"offset": job["page"]["next"]}).json()
            seen.extend(job["result"]["points"])
        assert [p["parameter"] for p in seen] == pytest.approx([20 + 20 * i / 59 for i in range(60)])


def test_a_page_of_the_partial_points_reads_only_its_points(fresh_redis: RedisServer) -> None:
    """``?detail=true&limit=1`` on a running job reads one stored point (HKEYS and one HMGET), never the line."""
    r = fresh_redis.client()
    with TestClient(create_app(app_settings(fresh_redis.url))) as api:
        job_id = api.post("/v1/sweeps", json=sweep_request(50, method="grid")).json()["job_id"]
        key = JobStore(r, 60).computation_of(job_id)
        name = JobKeys(key).points(0)
        r.hset(name, mapping={str(i): json.dumps({"parameter": i, "pad": "x" * 1000}) for i in range(50)})
        body, seen = commands_during(r, lambda: api.get(f"/v1/jobs/{job_id}", params={"detail": "true", "limit": 1,
                                                                                     "offset": 7}).json())
        assert [p["parameter"] for p in body["partial"]["points"]] == [7]
        assert body["page"] == {**body["page"], "returned": 1, "total": 50, "next": 8}
        on_points = [c for c in seen if name in c]
        assert on_points and all(c.split()[0] in ("HLEN", "HKEYS", "HMGET") for c in on_points), on_points
        assert [c for c in on_points if c.startswith("HMGET")] == [f"HMGET {name} 7"], on_points


def test_an_assembly_that_cannot_complete_fails_with_its_reason_and_frees_its_points(
        fresh_redis: RedisServer) -> None:
    r = fresh_redis.client()
    with TestClient(create_app(app_settings(fresh_redis.url, max_jobs_per_key=1))) as api:
        job_id = api.post("/v1/sweeps", json=sweep_request(5, method="grid")).json()["job_id"]
        store = JobStore(r, 600)
        key = store.computation_of(job_id)
        keys = JobKeys(key)
        # The line completed, but one of its points is gone (as after a Redis crash that lost it).
        r.hset(keys.points(0), mapping={str(i): json.dumps({"parameter": i}) for i in (0, 1, 2, 4)})
        r.set(keys.line(0), json.dumps({"transitions": [], "diagnostics": {}}))
        r.sadd(keys.done, 0)
        assert store.finalize(key) is False
        body = api.get(f"/v1/jobs/{job_id}").json()
        assert body["status"] == "failed" and "4 of 5 points" in body["error"], body
        assert not r.exists(keys.points(0))
        deadline = time.monotonic() + 5
        while api.post("/v1/sweeps", json=sweep_request(6, method="grid")).status_code == 429:
            assert time.monotonic() < deadline, "the failed job still counts against its key"
            time.sleep(0.1)
