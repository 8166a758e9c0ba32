"""The ``finite_sample`` treatments through the HTTP routes: the unreduced tree level solved and swept by continuation,
against the GP limit (an independent closed form); the curves and their ends; a 422 naming the field for a bad value.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from solvers.theories.rubin_cavity.finite_sample.data import draw_inputs
from solvers.theories.rubin_cavity.finite_sample.unreduced.law import nngp_kernel
from tests.service.test_sweep_api import wait

SMALL_PARTICLES = {"nodes": 9, "chains": 8, "samples": 8, "burn_in": 40, "thin": 2, "rho_max": 2.5}
#: N → ∞ at fixed N s_a2 = 1: the exponent E = O(s_a2) vanishes, the law is the prior, the kernel Williams' kernel.
GP = {"theory": "rubin_cavity", "mode": "finite_sample", "treatment": "tree_level_unreduced", "P": 20, "D": 4,
      "N": 1e7, "s_a2": 1e-7, "T": 0.5, "P_test": 20, "seed": 3, "particles": SMALL_PARTICLES}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(Settings(redis_url=None, api_keys=(), rate_limit_per_minute=0))) as c:
        yield c


def gp_residual(spec: dict[str, Any], T: float) -> tuple[float, float]:
    """(b, c) of the GP predictor with Williams' arcsin kernel, by least squares on [H1, H3] of the training inputs."""
    X = draw_inputs(spec["P"], spec["D"], spec["P_test"], spec["seed"])[0]
    z = X[:, 0]
    y = z + -0.3 * (z**3 - 3 * z)
    K = nngp_kernel(X, X, 0.5, spec["N"] * spec["s_a2"])
    rbar = T * np.linalg.solve(K + T * np.eye(len(y)), y)
    b, c = np.linalg.lstsq(np.column_stack([z, z**3 - 3 * z]), rbar, rcond=None)[0]
    return float(b), float(c)


def test_unreduced_solve_is_served_with_its_monte_carlo_errors_and_has_the_gp_limit(client: TestClient) -> None:
    r = client.post("/v1/solve", json={"model": GP})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["converged"] and body["model"]["treatment"] == "tree_level_unreduced"
    op, obs = body["order_parameters"], body["observables"]
    b_gp, c_gp = gp_residual(GP, 0.5)
    # R = E[ρ²] of the prior, σ_w²/D = 0.125 (the node weights alone: exact to 1e-6 here)
    assert op["R"] == pytest.approx(0.125, rel=0.01)
    # b and c carry the particles' noise in K (measured: 1.3 % and 1.0 % off, standard errors 2.0 % and 1.9 %):
    # tolerances below 5 % minus those, so a 5 % move fails
    assert op["b"] == pytest.approx(b_gp, rel=0.035) and op["c"] == pytest.approx(c_gp, rel=0.035)
    assert 0 < obs["b_stderr"] < 0.03 * abs(b_gp) and 0 < obs["c_stderr"] < 0.03 * abs(c_gp)
    mc = obs["monte_carlo"]
    assert mc["particles"] == 9 * 8 * 8 and mc["ess_fraction"] > 0.9 and mc["edge_mass"] < 1e-6


@pytest.mark.parametrize(
    ("model", "field"),
    [({"treatment": "tree_level_exact"}, "treatment"),
     ({"treatment": "tree_level_unreduced", "scaling": "standard"}, "treatment"),
     ({"treatment": "cavity", "particles": {"nodes": 9}}, "particles"),
     ({"treatment": "tree_level_unreduced", "particles": {"nodes": 2}}, "nodes")],
)
def test_a_bad_treatment_or_particle_block_is_a_422_naming_the_field(client: TestClient, model: dict[str, Any],
                                                                      field: str) -> None:
    spec = {"theory": "rubin_cavity", "mode": "finite_sample", "P": 20, "D": 4, **model}
    r = client.post("/v1/solve", json={"model": spec})
    assert r.status_code == 422, r.text
    assert any(field in e["loc"] for e in r.json()["detail"]), r.json()


def test_unreduced_sweep_by_continuation_serves_the_traced_curve(client: TestClient) -> None:
    """A T sweep with "method": "continuation" traces one curve through the requested values (no fold here: it
    leaves the range at both ends), each row a solution with its Monte-Carlo error; the GP limit holds along it."""
    values = [0.3, 0.5]
    r = client.post("/v1/sweeps", json={"model": GP, "parameter": "T", "values": values, "method": "continuation"})
    assert r.status_code == 202, r.text
    job = wait(client, r.json()["status_url"], timeout=300)
    assert job["status"] == "finished", job
    result = job["result"]
    (curve,) = result["curves"]
    assert curve["ends"] == [] and curve["message"].count("left the parameter range") == 2
    T = np.array(curve["parameter"])
    assert T.min() == pytest.approx(0.3) and T.max() == pytest.approx(0.5) and len(T) >= 3
    b = np.array(curve["order_parameters"]["b"])
    gp = np.array([gp_residual(GP, t)[0] for t in T])
    assert np.allclose(b, gp, rtol=0.035)
    assert all(s > 0 for s in curve["observables"]["b_stderr"])
    for pt, T_req in zip(result["points"], values, strict=True):
        assert pt["parameter"] == T_req and pt["converged"]
