"""Every result is one of the contract's result models, checked on the way out, and /openapi.json shows them.

The jobs route splices stored result pages into its answer as text; it validates that text against ``JobStatus``
all the same (less the points and curves the embedded backend checked as it stored them), so a stored result of
the wrong shape is a 500 (a bug), never a silently malformed answer. The results are computed by the embedded
service."""

from __future__ import annotations

import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from service.app import create_app
from service.kernel.pages import RawJSON, with_points
from service.result_schemas import BoundaryJobResult, JobResult, PhaseDiagramResult, SolveResponse, SweepResult
from service.settings import Settings
from tests.contract.declared_fields import undeclared

POTENTIAL: dict[str, Any] = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3,
                             "u": 20.0}


@pytest.fixture(scope="module")
def api() -> Any:
    with TestClient(create_app(Settings(redis_url=None, rate_limit_per_minute=0)), raise_server_exceptions=False) as c:
        yield c


def _finished(api: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    job_id = api.post("/v1/sweeps", json=body).json()["job_id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = api.get(f"/v1/jobs/{job_id}", params={"wait": 5}).json()
        if status["status"] not in ("queued", "running"):
            assert status["status"] == "finished", status
            return status["result"]
    raise AssertionError("the job did not finish")


def test_each_kind_of_job_result_is_its_own_model_with_its_quantities(api: TestClient) -> None:
    adapter = TypeAdapter(JobResult)
    jobs = {
        SweepResult: {"model": POTENTIAL, "parameter": "u", "values": [20, 30, 40]},
        PhaseDiagramResult: {"model": POTENTIAL, "parameter": ["b", "u"], "values": [[0.28, 0.3], [20, 30, 40]],
                             "method": "grid"},
        BoundaryJobResult: {"model": POTENTIAL, "parameter": ["b", "u"], "method": "boundary",
                            "values": [{"start": 0.25, "stop": 0.4, "num": 2}, {"start": 10, "stop": 60, "num": 2}]},
    }
    for model, body in jobs.items():
        result = _finished(api, body)
        typed = adapter.validate_python(result)
        assert type(typed) is model, (model, type(typed))
        assert undeclared(model, result) == []  # the model describes every field
        assert typed.quantities is not None
        assert typed.quantities["u"].symbol == "$u$" and typed.quantities["u"].units == "1"
        assert typed.quantities["u"].role == "parameter"
        if model is not BoundaryJobResult:  # a boundary job holds lines, not quantities
            assert typed.quantities["rho"].role == "order_parameter"
            assert typed.quantities["test_mse"].role == "headline"
            assert typed.quantities["stable"].role == "diagnostic"
    solve = SolveResponse.model_validate(api.post("/v1/solve", json={"model": POTENTIAL}).json())
    assert solve.quantities is not None and solve.quantities["free_entropy"].long_name.startswith("free entropy")


def test_a_job_response_that_is_not_a_job_status_is_a_500(api: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = api.app.state.saddlelab.jobs  # type: ignore[attr-defined]
    status = {"job_id": "x", "status": "finished", "progress": {"done": 1, "total": 1},
              "result": RawJSON('{"points": 1, "transitions": []}')}
    monkeypatch.setattr(type(jobs), "status", lambda self, *a, **k: status)
    assert api.get("/v1/jobs/x").status_code == 500
    status["result"] = RawJSON('{"theory": "rubin_cavity", "parameter": "u", "method": "grid", "points": [], '
                               '"transitions": []}')
    assert api.get("/v1/jobs/x").status_code == 200
    # Points and curves checked when they were stored are spliced in as they are; the rest is still validated.
    summary = '{"theory": "rubin_cavity", "parameter": "u", "method": "grid", "transitions": []}'
    status["result"] = with_points(summary, ['{"parameter": 1.0}'], checked=True)
    assert api.get("/v1/jobs/x").status_code == 200
    status["result"] = with_points(summary, ['{"parameter": 1.0}'])
    assert api.get("/v1/jobs/x").status_code == 500
    status["result"] = with_points(summary.replace('"grid"', '"sideways"'), [], checked=True)
    assert api.get("/v1/jobs/x").status_code == 500


def test_openapi_shows_every_result_schema() -> None:
    doc = TestClient(create_app(Settings(redis_url=None))).get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    for name in ("SolveResponse", "SweepResult", "PhaseDiagramResult", "BoundaryJobResult", "ExperimentResult",
                 "LearningCurveResult", "QuantityEntry"):
        assert name in schemas, name
    job_result = str(schemas["JobStatus"]["properties"]["result"])
    for name in ("SweepResult", "PhaseDiagramResult", "BoundaryJobResult"):
        assert f"#/components/schemas/{name}" in job_result
    experiment_result = str(schemas["ExperimentStatus"]["properties"]["result"])
    assert "ExperimentResult" in experiment_result and "LearningCurveResult" in experiment_result
    entry = schemas["QuantityEntry"]
    assert set(entry["required"]) == {"symbol", "long_name", "units", "role"}
    assert set(entry["properties"]["role"]["enum"]) == {"headline", "order_parameter", "observable", "parameter",
                                                        "diagnostic"}
    for name in ("SolveResponse", "SweepResult", "PhaseDiagramResult", "BoundaryJobResult"):
        assert "quantities" in schemas[name]["properties"], name
