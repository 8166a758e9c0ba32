"""POST /v1/sweeps with method deflated and diagram: served like a continuation (curves with their special
points, transitions), with their own validation."""

from __future__ import annotations

import math
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.service.conftest import POTENTIAL
from tests.service.test_search_api import HCIZ
from tests.service.test_sweep_api import wait


def run(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/v1/sweeps", json=body)
    assert r.status_code == 202, r.text
    job = wait(client, r.json()["status_url"])
    assert job["status"] == "finished", job
    return job["result"]


def test_a_deflated_sweep_serves_the_branch_no_start_reaches(client: TestClient) -> None:
    result = run(client, {"model": HCIZ, "parameter": "alpha", "values": {"start": 2.0, "stop": 6.0, "num": 11},
                          "method": "deflated", "solver": {"search": {"starts": ["uninformative"], "budget": 3}}})
    assert result["method"] == "deflated"
    names = [c["name"] for c in result["curves"]]
    assert names[0] == "universal" and len(names) == 2
    found = result["curves"][1]
    assert found["message"].startswith("found by deflation")
    assert {"specialized", "weakly_specialized_unstable"} <= set(found["branches"])
    kinds = {t["kind"]: t["parameter"] for t in result["transitions"]}
    assert kinds["first_order"] == pytest.approx(3.7315, abs=1e-4)  # the grid value, refined
    assert any(s["kind"] == "spinodal" for s in found["special"])


def test_a_diagram_serves_its_branch_points_and_the_switched_branches(client: TestClient) -> None:
    """The potential from its uninformative start alone: depth 0 traces the centre branch and types its subcritical
    pitchfork; depth 1 switches there onto the aligned branch, whose fold and first-order point (75π/8, the seed's
    equal-depth point) follow."""
    body = {"model": POTENTIAL, "parameter": "u", "values": {"start": 20, "stop": 40, "num": 21},
            "method": "diagram", "solver": {"search": {"starts": ["uninformative"]}}}
    flat = run(client, {**body, "depth": 0})
    assert [c["name"] for c in flat["curves"]] == ["center"]
    (pitchfork,) = flat["transitions"]
    assert pitchfork["bifurcation"]["type"] == "pitchfork"
    assert pitchfork["parameter"] == pytest.approx(34.9065850399, abs=1e-8)
    deep = run(client, {**body, "depth": 1})
    assert deep["method"] == "diagram" and len(deep["curves"]) == 2
    assert "(depth 1)" in deep["curves"][1]["message"]
    kinds = {t["kind"]: t["parameter"] for t in deep["transitions"]}
    assert kinds["first_order"] == pytest.approx(75 * math.pi / 8, abs=1e-8)


@pytest.mark.parametrize(
    ("extra", "loc"),
    [({"method": "continuation", "depth": 1}, "depth"), ({"method": "diagram", "depth": 9}, "depth"),
     ({"method": "diagram", "depth": 1, "solver": {"search": {"depth": 2}}}, "depth"),
     ({"method": "deflation"}, "method")],
)
def test_bad_sweep_methods_are_422_naming_the_field(client: TestClient, extra: dict[str, Any], loc: str) -> None:
    r = client.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": "u", "values": [20.0, 30.0], **extra})
    assert r.status_code == 422, r.text
    assert loc in r.text
