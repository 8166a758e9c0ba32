"""``{"start", "stop", "num", "scale": "log"}``: values evenly spaced in their logarithm, for sweeps and the axes of
phase diagrams, through the API and the client (the CLI's ``--log``: tests/clients/test_cli_outputs.py)."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from clients import Client
from service.app import create_app
from tests.service.conftest import settings

POTENTIAL = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 29.45}


@pytest.fixture(scope="module")
def api() -> TestClient:
    with TestClient(create_app(settings())) as c:
        yield c


def _finished(api: TestClient, body: dict) -> dict:
    r = api.post("/v1/sweeps", json=body)
    assert r.status_code in (200, 202), r.text
    job = api.get(f"/v1/jobs/{r.json()['job_id']}", params={"wait": 30}).json()
    while job["status"] not in ("finished", "failed", "cancelled"):
        job = api.get(f"/v1/jobs/{job['job_id']}", params={"wait": 30}).json()
    assert job["status"] == "finished", job
    return job["result"]


def test_a_log_sweep_runs_at_a_geometric_sequence(api: TestClient) -> None:
    result = _finished(api, {"model": POTENTIAL, "parameter": "u", "method": "grid",
                             "values": {"start": 2.0, "stop": 200.0, "num": 5, "scale": "log"}})
    assert [p["parameter"] for p in result["points"]] == pytest.approx([2.0, 2 * 10**0.5, 20, 20 * 10**0.5, 200],
                                                                       rel=1e-12)


def test_a_phase_diagram_axis_on_a_log_scale(api: TestClient) -> None:
    result = _finished(api, {"model": POTENTIAL, "parameter": ["b", "u"], "method": "grid",
                             "values": [[0.3], {"start": 10.0, "stop": 40.0, "num": 3, "scale": "log"}]})
    assert sorted({p["parameter"][1] for p in result["points"]}) == pytest.approx([10.0, 20.0, 40.0], rel=1e-12)


@pytest.mark.parametrize("values, says", [
    ({"start": 0.0, "stop": 10.0, "num": 3, "scale": "log"}, "start > 0"),
    ({"start": 1.0, "stop": 10.0, "num": 3, "scale": "logarithmic"}, "log"),
])
def test_a_log_range_that_cannot_be_is_a_422(api: TestClient, values: dict, says: str) -> None:
    r = api.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": "u", "values": values})
    assert r.status_code == 422 and says in r.text, r.text


def test_the_client_passes_a_log_range_through(api: TestClient) -> None:
    with Client("http://testserver", transport=api._transport, poll_interval=0.05) as lab:
        result = lab.sweep(POTENTIAL, "u", {"start": 1.0, "stop": 100.0, "num": 3, "scale": "log"}, method="grid",
                           progress=False)
    np.testing.assert_allclose([p["parameter"] for p in result["points"]], [1.0, 10.0, 100.0], rtol=1e-12)
