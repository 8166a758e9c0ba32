"""A page of a finished result reads from Redis only the points it returns: ``limit=1`` is one LRANGE of one
point of the stored result (and its length, LLEN), whatever the result's size, and a byte-bounded page reads
no point past its end.

Regression: ``?detail=true&limit=1`` read the whole ~250 MB point hash of a large sweep to return 0.4 MB."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.jobs.store import JobKeys, JobStore
from tests.integration.conftest import app_settings, sweep_request, wait_finished
from tests.integration.test_result_bytes import commands_during
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.redis, pytest.mark.slow]

NUM = 40


def test_limit_one_reads_one_point_and_a_byte_bounded_page_reads_no_further(
        fresh_redis: RedisServer, start_worker) -> None:
    r = fresh_redis.client()
    with TestClient(create_app(app_settings(fresh_redis.url, result_page_bytes=4000))) as api:
        start_worker("w1")
        job_id = api.post("/v1/sweeps", json=sweep_request(NUM, method="grid")).json()["job_id"]
        assert wait_finished(api, job_id)["status"] == "finished"
        name = JobKeys(JobStore(r, 60).computation_of(job_id)).result_points
        assert r.llen(name) == NUM

        for detail in ("false", "true"):
            body, seen = commands_during(r, lambda d=detail: api.get(
                f"/v1/jobs/{job_id}", params={"limit": 1, "offset": 7, "detail": d}).json())
            assert [p["parameter"] for p in body["result"]["points"]] == pytest.approx([20 + 20 * 7 / (NUM - 1)])
            assert body["page"]["returned"] == 1 and body["page"]["next"] == 8, body["page"]
            on_result = [c for c in seen if name in c]
            assert [c for c in on_result if not c.startswith("LLEN ")] == [f"LRANGE {name} 7 7"], on_result

        # A page cut at 4000 bytes: its points' text stays under the budget plus one point, and what was read of
        # the stored list ends at most one chunk past the page (never the rest of the result).
        body, seen = commands_during(r, lambda: api.get(f"/v1/jobs/{job_id}").json())
        points = body["result"]["points"]
        size = max(len(json.dumps(p)) for p in points)
        assert 1 < len(points) < NUM and body["page"]["next"] == len(points), body["page"]
        assert sum(len(json.dumps(p)) for p in points) <= 4000 + size
        last = max(int(c.split()[-1]) for c in seen if c.startswith(f"LRANGE {name} "))
        assert last < 2 * len(points) + 1, (last, len(points), seen)
