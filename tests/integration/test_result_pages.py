"""Results come in pages that are slices of the stored JSON, on both backends.

Regression: every GET of a finished 20 × 2000 phase diagram parsed, validated and re-encoded the whole
result (76 MB and 3 s of CPU per request), stalling the API.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.jobs.store import JobKeys, JobStore
from service.schemas import JobStatus
from tests.integration.conftest import POTENTIAL, app_settings, wait_finished

B_ROWS = [0.25, 0.3, 0.33]
U = np.linspace(20, 40, 41).tolist()
DIAGRAM = {"model": POTENTIAL, "parameter": ["b", "u"], "values": [B_ROWS, {"start": 20, "stop": 40, "num": 41}]}
PAGE = 50


@pytest.fixture(params=["local", pytest.param("rq", marks=pytest.mark.redis)])
def lab(request: pytest.FixtureRequest) -> Iterator[TestClient]:
    url = None
    if request.param == "rq":
        url = request.getfixturevalue("fresh_redis").url
        request.getfixturevalue("start_worker")("w1")
    with TestClient(create_app(app_settings(url, result_page_size=PAGE))) as c:
        yield c


def _get(c: TestClient, job_id: str, **params) -> dict:
    r = c.get(f"/v1/jobs/{job_id}", params=params)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.slow
def test_a_finished_diagram_is_read_page_by_page(lab: TestClient) -> None:
    job_id = lab.post("/v1/sweeps", json=DIAGRAM).json()["job_id"]
    first = wait_finished(lab, job_id, timeout=120)
    assert first["status"] == "finished", first
    JobStatus.model_validate(first)
    total = len(B_ROWS) * len(U)
    assert first["page"] == {"of": "result.points", "offset": 0, "limit": PAGE, "returned": PAGE, "total": total,
                             "next": PAGE}
    assert len(first["result"]["points"]) == PAGE
    # Every page carries the whole summary (transitions, lines), and only its points.
    assert first["result"]["lines"] and first["result"]["transitions"]
    points, offset = [], 0
    while offset is not None:
        page = _get(lab, job_id, offset=offset)
        assert page["result"]["transitions"] == first["result"]["transitions"]
        points += page["result"]["points"]
        offset = page["page"]["next"]
    assert len(points) == total
    np.testing.assert_allclose([p["parameter"] for p in points], [[b, u] for b in B_ROWS for u in U],
                               rtol=0, atol=1e-12)
    assert _get(lab, job_id, offset=100)["page"] == {"of": "result.points", "offset": 100, "limit": PAGE,
                                                         "returned": total - 100, "total": total, "next": None}
    assert _get(lab, job_id, offset=7, limit=3)["result"]["points"] == points[7:10]
    assert _get(lab, job_id, limit=10 * PAGE)["page"]["limit"] == PAGE  # capped by result_page_size
    assert _get(lab, job_id, offset=10 * total)["result"]["points"] == []
    assert lab.get(f"/v1/jobs/{job_id}", params={"offset": -1}).status_code == 422


@pytest.mark.redis
@pytest.mark.slow
def test_a_page_is_a_slice_of_the_stored_json(fresh_redis, start_worker) -> None:
    start_worker("w1")
    with TestClient(create_app(app_settings(fresh_redis.url, result_page_size=PAGE))) as c:
        job_id = c.post("/v1/sweeps", json=DIAGRAM).json()["job_id"]
        assert wait_finished(c, job_id, timeout=120)["status"] == "finished"
        text = c.get(f"/v1/jobs/{job_id}", params={"offset": PAGE}).text
    r = fresh_redis.client()
    keys = JobKeys(JobStore(r, 60).computation_of(job_id))
    stored = [x.decode() for x in r.lrange(keys.result_points, PAGE, 2 * PAGE - 1)]
    # The response carries the stored bytes verbatim: nothing was parsed and encoded again.
    assert '"points":[' + ",".join(stored) + "]" in text


@pytest.mark.slow
def test_partial_points_of_a_running_job_are_paged_too(lab: TestClient) -> None:
    job_id = lab.post("/v1/sweeps", json={**DIAGRAM, "model": {**POTENTIAL, "D": 150.0},
                                          "values": [B_ROWS, {"start": 20, "stop": 40, "num": 1500}]}).json()["job_id"]
    deadline = time.monotonic() + 60
    while (body := _get(lab, job_id, detail="true", limit=20))["progress"]["done"] < 40:
        assert time.monotonic() < deadline, body["progress"]
        time.sleep(0.1)
    page = body["page"]
    assert page["of"] == "partial.points" and page["returned"] == 20 and page["total"] >= 40
    assert len(body["partial"]["points"]) == 20
    lab.delete(f"/v1/jobs/{job_id}")


@pytest.mark.slow
def test_an_offset_beyond_any_result_is_an_empty_page_or_a_422_never_a_500(lab: TestClient) -> None:
    """Regression: ``?offset=9223372036854775807`` reached Redis's LRANGE, which refused the index: a 500."""
    job_id = lab.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": "u", "values": [25.0, 30.0]}).json()[
        "job_id"]
    assert wait_finished(lab, job_id, timeout=120)["status"] == "finished"
    for detail in ("false", "true"):
        edge = _get(lab, job_id, offset=2**31 - 1, detail=detail)
        assert edge["page"]["returned"] == 0 and edge["page"]["next"] is None
        for params in ({"offset": 2**63 - 1}, {"offset": 2**64}, {"offset": 2**31}, {"limit": 2**63 - 1},
                       {"offset": 10**30, "limit": 10**30}):
            r = lab.get(f"/v1/jobs/{job_id}", params={**params, "detail": detail})
            assert r.status_code == 422, (params, r.text)
            assert r.json()["detail"][0]["loc"][:1] == ["query"]
        r = lab.delete(f"/v1/jobs/{job_id}", params={"offset": 2**63 - 1, "detail": detail})
        assert r.status_code == 422, r.text
    # the experiments' point index likewise
    assert lab.get("/v1/experiments/nope/draws", params={"point": 2**63 - 1}).status_code == 422
    assert lab.get("/v1/experiments/nope/draws", params={"point": 2**31 - 1}).status_code == 404
