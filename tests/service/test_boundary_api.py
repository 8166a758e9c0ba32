"""Boundary jobs (``"method": "boundary"``) through the API, checked against closed forms and a grid phase diagram.

rubin_cavity potential at σ_w² = 0.5, c = −0.3 in (b, u): the centre spinodal is u = π(1 + 2σ_w²)/(4σ_w² b²);
the grid phase diagram of the same spec (independent solves at every grid point, transitions located per
row) must find every traced line, and nothing else, within its resolution.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from fastapi.testclient import TestClient

from service.schemas import JobStatus
from solvers.theories import get as get_theory
from tests.service.conftest import POTENTIAL
from tests.service.test_sweep_api import wait

B_RANGE = {"start": 0.25, "stop": 0.4, "num": 2}
U_BRACKET = {"start": 10.0, "stop": 60.0, "num": 2}


def centre_spinodal(b: float) -> float:
    s = POTENTIAL["sigma_w2"]
    return math.pi * (1 + 2 * s) / (4 * s * b * b)


def boundary(client: TestClient, values: list, **extra) -> dict:
    r = client.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": ["b", "u"], "values": values,
                                        "method": "boundary", **extra})
    assert r.status_code == 202, r.text
    job = wait(client, r.json()["status_url"])
    assert job["status"] == "finished", job
    JobStatus.model_validate(job)
    assert job["kind"] == "boundary" and job["chunks"] == {"done": 1, "total": 1}
    return job["result"]


@pytest.fixture(scope="module")
def traced():
    from service.app import create_app
    from tests.service.conftest import settings

    with TestClient(create_app(settings())) as c:
        yield boundary(c, [B_RANGE, U_BRACKET])


def test_a_boundary_job_returns_the_three_lines_of_the_potential(traced) -> None:
    assert traced["parameters"] == ["b", "u"] and traced["method"] == "boundary" and traced["reason"] == ""
    assert traced["box"] == {"b": [0.25, 0.4], "u": [10.0, 60.0]}
    kinds = sorted(line["kind"] for line in traced["lines"])
    assert kinds == ["first_order", "spinodal", "stability_loss"]
    for line in traced["lines"]:
        assert [e["kind"] for e in line["ends"]] == ["domain", "domain"]
        assert all(len(p) == 2 for p in line["points"])
    centre = next(line for line in traced["lines"] if line["kind"] == "stability_loss")
    pts = np.array(centre["points"])
    assert np.max(np.abs(pts[:, 1] - [centre_spinodal(b) for b in pts[:, 0]])) <= 1e-8
    assert centre["bifurcation"]["type"] == "pitchfork" and centre["bifurcation"]["criticality"] == "subcritical"
    assert next(line for line in traced["lines"] if line["kind"] == "spinodal")["type"] == "fold"
    assert traced["critical_points"] == []
    assert len(traced["provenance"]["source"]) == 64 and traced["provenance"]["spec_hash"]
    assert "curves" not in traced  # a boundary job has traced lines instead


def test_the_phases_each_line_separates_are_probed_on_either_side(traced) -> None:
    """Two probes per line, inside the box: GFL on both sides of the spinodal (the aligned well born there is
    metastable), GFL below and GMFL-II above the first-order line, GMFL-II on both sides of the pitchfork line
    (beyond it the centre is unstable; before it the aligned wells are already the deepest)."""
    probes = traced["regions"]
    assert len(probes) == 2 * len(traced["lines"])
    for probe in probes:
        b, u = probe["point"]
        assert 0.25 <= b <= 0.4 and 10.0 <= u <= 60.0
    lines = {line["kind"]: np.array(sorted(map(tuple, line["points"]))) for line in traced["lines"]}

    def side(kind: str, b: float, u: float) -> float:
        pts = lines[kind]
        return u - float(np.interp(b, pts[:, 0], pts[:, 1]))

    def phases_beside(kind: str) -> dict[str, str]:
        """below/above the line in u → phase, for its two probes (two per line, in the order of the lines)"""
        k = [line["kind"] for line in traced["lines"]].index(kind)
        return {"above" if side(kind, *p["point"]) > 0 else "below": p["phase"] for p in probes[2 * k:2 * k + 2]}

    assert phases_beside("spinodal") == {"below": "GFL", "above": "GFL"}
    assert phases_beside("first_order") == {"below": "GFL", "above": "GMFL-II"}
    assert phases_beside("stability_loss") == {"below": "GMFL-II", "above": "GMFL-II"}


def test_every_line_agrees_with_the_grid_phase_diagram_of_the_same_spec(client: TestClient, traced) -> None:
    rows, du = [0.27, 0.33, 0.39], 0.5
    r = client.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": ["b", "u"], "method": "grid",
                                        "values": [rows, {"start": 10.0, "stop": 60.0, "num": 101}]})
    assert r.status_code == 202, r.text
    grid = wait(client, r.json()["status_url"])["result"]
    lines = [np.array(sorted(map(tuple, line["points"]))) for line in traced["lines"]]
    for b in rows:
        at_b = [float(np.interp(b, pts[:, 0], pts[:, 1])) for pts in lines]
        found = [t["parameter"] for t in grid["transitions"] if t["at"]["b"] == b]
        # Every line is seen by the grid in this row, and every grid transition lies on a line.
        assert all(min(abs(u - g) for g in found) <= du for u in at_b), (b, at_b, found)
        assert all(min(abs(u - g) for u in at_b) <= du for g in found), (b, at_b, found)


def test_a_bracket_without_a_transition_gives_no_lines_and_says_why(client: TestClient) -> None:
    result = boundary(client, [B_RANGE, {"start": 1.0, "stop": 5.0, "num": 2}])
    assert result["lines"] == [] and result["critical_points"] == []
    assert "no special point" in result["reason"]


@pytest.mark.parametrize("parameter, named", [(["b", "D"], ["D"]), (["mode", "theory"], ["mode", "theory"])])
def test_parameters_that_cannot_be_swept_are_a_422_naming_them(client: TestClient, parameter, named) -> None:
    r = client.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": parameter, "method": "boundary",
                                        "values": [B_RANGE, U_BRACKET]})
    assert r.status_code == 422, r.text
    text = r.text
    assert all(f"'{n}'" in text for n in named)


def test_a_boundary_job_needs_two_parameters_and_two_distinct_values(client: TestClient) -> None:
    r = client.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": "u", "method": "boundary",
                                        "values": U_BRACKET})
    assert r.status_code == 422 and "two parameters" in r.text
    r = client.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": ["b", "u"], "method": "boundary",
                                        "values": [[0.3], U_BRACKET]})
    assert r.status_code == 422 and "range" in r.text


def test_line_options_are_part_of_the_job(client: TestClient) -> None:
    a = client.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": ["b", "u"], "method": "boundary",
                                        "values": [B_RANGE, {"start": 1.0, "stop": 5.0, "num": 2}]}).json()
    b = client.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": ["b", "u"], "method": "boundary",
                                        "values": [B_RANGE, {"start": 1.0, "stop": 5.0, "num": 2}],
                                        "lines": {"seeds": 2}}).json()
    assert a["job_id"] != b["job_id"]
    r = client.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": "u", "values": [20.0, 30.0],
                                        "lines": {"seeds": 2}})
    assert r.status_code == 422


def test_a_spec_without_transition_lines_is_refused_when_submitted(client: TestClient) -> None:
    # The particle solver is stochastic: no deterministic system to continue, so no job is started.
    particles = {"theory": "mean_field_ard", "d": 10, "N": 32, "kappa": 0.1, "P": 50, "solver": "particles",
                 "particles": {"n": 64}, "target": {"kind": "parity", "k": 2}}
    r = client.post("/v1/sweeps", json={"model": particles, "parameter": ["kappa", "P"], "method": "boundary",
                                        "values": [{"start": 0.05, "stop": 0.2, "num": 2},
                                                   {"start": 20, "stop": 80, "num": 2}]})
    assert r.status_code == 422, r.text
    (err,) = r.json()["detail"]
    assert err["loc"] == ["body", "model", "solver"] and "reduced solver" in err["msg"]
    reduced = {k: v for k, v in particles.items() if k not in ("solver", "particles")}
    ok = client.post("/v1/sweeps", json={"model": reduced, "parameter": ["kappa", "P"], "method": "boundary",
                                         "values": [{"start": 0.05, "stop": 0.2, "num": 2},
                                                    {"start": 20, "stop": 80, "num": 2}]})
    assert ok.status_code == 202, ok.text
    client.delete(ok.json()["status_url"])  # only its acceptance is tested here


MF_ARD_P = {"theory": "mean_field_ard", "model": "mf_ard", "d": 20, "N": 256, "kappa": 0.05, "P": 400,
            "target": {"kind": "parity", "k": 2}, "data": {"seed": 0, "P_test": 1000}}


def test_integer_fields_declared_real_may_be_either_or_both_parameters(client: TestClient) -> None:
    for parameter, values in ((["P", "N"], [[200, 800], [100, 300]]),
                              (["P", "kappa"], [[200, 800], [0.02, 0.05]]),
                              (["kappa", "P"], [[0.02, 0.05], [200, 800]])):
        ok = client.post("/v1/sweeps", json={"model": MF_ARD_P, "parameter": parameter, "method": "boundary",
                                             "values": values})
        assert ok.status_code == 202, ok.text
        client.delete(ok.json()["status_url"])  # only its acceptance is tested here


def test_an_integer_field_not_declared_real_is_refused_by_name(client: TestClient,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Were P not declared real (its equations undefined between integers), a box in it is a 422 naming P, in
    either place, and pointing to the phase diagram that sweeps the other parameter at each value of P."""
    theory = get_theory("mean_field_ard")
    monkeypatch.setattr(type(theory), "real_integers", ("N",))
    for parameter, values, index in ((["P", "N"], [[200, 800], [100, 300]], 0),
                                     (["kappa", "P"], [[0.02, 0.05], [200, 800]], 1)):
        r = client.post("/v1/sweeps", json={"model": MF_ARD_P, "parameter": parameter, "method": "boundary",
                                            "values": values})
        assert r.status_code == 422, r.text
        (err,) = r.json()["detail"]
        assert err["loc"] == ["body", "parameter", index] and err["input"] == "P"
        assert "'P' takes integer values only" in err["msg"] and "method 'continuation', 'P' first" in err["msg"]


@pytest.mark.slow
def test_an_integer_field_first_is_continued_as_a_real(client: TestClient) -> None:
    """mean_field_ard's P takes integers. First, it is the bound problem's real-valued P (the spec is re-bound at every
    κ instead) and the result says so. Here the box holds no special point (the aligned phase throughout), which the
    reason says, naming every scan, its one probe at the centre."""
    model = MF_ARD_P
    r = client.post("/v1/sweeps", json={"model": model, "parameter": ["P", "kappa"], "method": "boundary",
                                        "values": [[200, 800], [0.02, 0.05]]})
    assert r.status_code == 202, r.text
    job = wait(client, r.json()["status_url"])
    assert job["status"] == "finished", job
    result = job["result"]
    assert result["continued_as_real"] == ["P"]
    assert result["lines"] == [] and result["unexplained"] == []
    assert "no special point along kappa" in result["reason"] and "nor along P" in result["reason"]
    assert result["diagnostics"]["scans"] == {"P": [200.0, 500.0, 800.0], "kappa": [0.02, 0.05]}
    assert result["regions"] == [{"point": [500.0, 0.035], "phase": "aligned"}]
