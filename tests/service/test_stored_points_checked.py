"""On the embedded backend each point a line stores is checked against the contract (``PointOut``) as it is stored,
while the line computes the next ones; a response then splices the stored points in without validating them again.
A point that fails the check is a bug: its job fails, naming the point, and keeps none of its points; so does a
curve, checked when the result is assembled."""

from __future__ import annotations

import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.jobs import local_kind
from service.settings import Settings

POTENTIAL: dict[str, Any] = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3,
                             "u": 20.0}


def _ended(api: TestClient, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = api.get(f"/v1/jobs/{job_id}", params={"wait": 5, "detail": "true"}).json()
        if status["status"] not in ("queued", "running"):
            return status
    raise AssertionError("the job did not end")


@pytest.mark.parametrize("broken", [False, True])
def test_a_point_unlike_the_contract_fails_its_job_when_it_is_stored(monkeypatch: pytest.MonkeyPatch,
                                                                      broken: bool) -> None:
    text = local_kind.point_text

    def point_text(point: dict[str, Any]) -> str:
        if broken and point["parameter"] == 30.0:
            return '{"parameter": 30.0, "converged": "maybe"}'  # no branches, no tables, converged not a bool
        return text(point)

    # the line in a thread of this process, so that it writes through the patched function
    monkeypatch.setattr(local_kind, "point_text", point_text)
    settings = Settings(redis_url=None, rate_limit_per_minute=0, solve_processes=0)
    with TestClient(create_app(settings), raise_server_exceptions=False) as api:
        job_id = api.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": "u", "values": [20, 30, 40],
                                              "method": "grid"}).json()["job_id"]
        status = _ended(api, job_id)
    if not broken:
        assert status["status"] == "finished", status
        assert [p["parameter"] for p in status["result"]["points"]] == [20.0, 30.0, 40.0]
        return
    assert status["status"] == "failed", status
    assert status["error"].startswith("point 1 of the result does not match the contract (a bug in SaddleLab)")
    assert "converged" in status["error"] and "branches" in status["error"]
    assert status["progress"]["done"] == 0 and not (status.get("partial") or {}).get("points")


def test_a_curve_unlike_the_contract_fails_its_job_when_the_result_is_assembled(monkeypatch: pytest.MonkeyPatch
                                                                              ) -> None:
    monkeypatch.setattr(local_kind, "job_curves", lambda payload, outcomes: [{"name": 1}])
    settings = Settings(redis_url=None, rate_limit_per_minute=0, solve_processes=0)
    with TestClient(create_app(settings), raise_server_exceptions=False) as api:
        body = {"model": POTENTIAL, "parameter": "u", "values": [20, 30, 40], "method": "continuation"}
        job_id = api.post("/v1/sweeps", json=body).json()["job_id"]
        status = _ended(api, job_id)
        assert status["status"] == "failed", status
        assert status["error"].startswith("curve 0 of the result does not match the contract (a bug in SaddleLab)")
        assert status.get("result") is None
