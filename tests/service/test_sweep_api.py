"""Sweeps as jobs on the embedded executor: the seed's first-order point and both spinodals."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from tests.service.conftest import POTENTIAL


def wait(client: TestClient, url: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get(url).json()
        if body["status"] in ("finished", "failed", "cancelled"):
            return body
        time.sleep(0.05)
    raise AssertionError("job did not finish")


def test_u_sweep_of_the_potential_reports_the_seed_transition(client: TestClient) -> None:
    r = client.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": "u",
                                        "values": {"start": 20, "stop": 40, "num": 41}})
    assert r.status_code == 202, r.text
    job = wait(client, r.json()["status_url"])
    assert job["status"] == "finished", job
    assert job["progress"] == {"done": 41, "total": 41}
    result = job["result"]
    assert len(result["points"]) == 41
    first = [t for t in result["transitions"] if t["kind"] == "first_order"]
    spin = [t for t in result["transitions"] if t["kind"] == "spinodal"]
    assert len(first) == 1
    assert first[0]["parameter"] == pytest.approx(29.45, abs=1e-2)
    # The seed quotes 29.45; the exact equal-depth point is 75 pi / 8.
    assert first[0]["parameter"] == pytest.approx(75 * 3.141592653589793 / 8, abs=1e-5)
    assert len(spin) == 2
    births = sorted(t["parameter"] for t in spin)
    assert births[0] < first[0]["parameter"] < births[1]


def test_identical_sweeps_are_deduplicated(client: TestClient) -> None:
    req = {"model": POTENTIAL, "parameter": "u", "values": [25.0, 30.0], "method": "grid"}
    a = client.post("/v1/sweeps", json=req).json()
    b = client.post("/v1/sweeps", json=req).json()
    assert a["job_id"] == b["job_id"] and b["deduplicated"] is True


def test_a_continuation_sweep_serves_its_curves_in_pages_and_its_provenance(client: TestClient) -> None:
    r = client.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": "u",
                                        "values": {"start": 20, "stop": 40, "num": 41}})
    job = wait(client, r.json()["status_url"])
    result = job["result"]
    assert job["curve_page"] == {"of": "result.curves", "offset": 0, "limit": 100, "returned": 2, "total": 2,
                                 "next": None}
    assert [c["name"] for c in result["curves"]] == ["center", "aligned"]
    prov = result["provenance"]
    assert prov["spec_hash"] and prov["saddlelab"]
    assert set(prov["libraries"]) >= {"numpy", "scipy", "jax", "arviz-base", "arviz-stats"}
    url = r.json()["status_url"]
    second = client.get(url, params={"curve_offset": 1, "curve_limit": 1, "limit": 0}).json()
    assert second["result"]["points"] == [] and second["page"]["next"] is None
    assert second["result"]["curves"] == result["curves"][1:]
    assert second["curve_page"] == {"of": "result.curves", "offset": 1, "limit": 1, "returned": 1, "total": 2,
                                    "next": None}
    grid = client.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": "u", "values": [25.0, 30.0],
                                           "method": "grid"})
    done = wait(client, grid.json()["status_url"])
    assert done["result"]["curves"] is None and "grid" in done["result"]["curves_reason"]
    assert "curve_page" not in done and done["result"]["provenance"]["source"] == prov["source"]


def test_every_result_carries_the_validated_model_with_its_defaults(client: TestClient) -> None:
    # the caption of a figure needs the fixed parameters, also those the request left at their defaults
    short = {"theory": "rubin_cavity", "mode": "potential"}
    full = {**short, "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 29.45, "D": None, "potential_samples": 0}
    assert client.post("/v1/solve", json={"model": short}).json()["model"] == full
    jobs = [{"parameter": "u", "values": [25.0, 30.0]},
            {"parameter": ["b", "u"], "values": [[0.3, 0.35], [25.0, 30.0]], "method": "grid"},
            {"parameter": ["b", "u"], "values": [[0.3, 0.35], [20.0, 40.0]], "method": "boundary"}]
    for job in jobs:
        r = client.post("/v1/sweeps", json={"model": short, **job})
        done = wait(client, r.json()["status_url"])
        assert done["status"] == "finished", done
        assert done["result"]["model"] == full, job
