"""Noiseless data (Δ = 0), Gaussian weights, an odd activation: the perfect-recovery threshold α_PR = γ.

With μ2 = 0 and v = 1 the theory is one equation in Q (Q = Q̂/(1 + Q̂), Q̂ = (α/γ) g'(Q)/(g(1) − g(Q))), i.e.
α(Q) = γ Q (g(1) − g(Q)) / ((1 − Q) g'(Q)), which tends to γ as Q → 1 since g(1) − g(Q) ≈ g'(1)(1 − Q): the
specialised branch runs into perfect recovery (Q = 1, ε = 0, Q̂ = ∞) at α = γ, where one iteration of the map
multiplies 1 − Q by γ/α. Here g is a 2-D Gauss–Hermite rule on tanh itself, not the theory's Mehler series.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from service.serialize import branch_tables
from solvers.core.options import SolverOptions
from solvers.numerics.hermite import gauss_hermite
from solvers.theories import get
from tests.payloads import sweep_json

THEORY = get("hciz_mlp")
GAMMA = 0.5
_Z, _W = gauss_hermite(160)
_MU1 = float(_W @ (_Z * np.tanh(_Z)))


def _pair(f, q: float) -> float:
    up = q * _Z[:, None] + math.sqrt(max(1 - q * q, 0.0)) * _Z[None, :]
    return float(_W @ (f(_Z[:, None]) * f(up)) @ _W)


def g(q: float) -> float:
    return _pair(np.tanh, q) - _MU1**2 * q


def dg(q: float) -> float:
    return _pair(lambda x: 1 - np.tanh(x) ** 2, q) - _MU1**2


def alpha_of(q: float) -> float:
    return GAMMA * q * (g(1.0) - g(q)) / ((1 - q) * dg(q))


def one_iteration(q: float, alpha: float) -> float:
    q_hat = (alpha / GAMMA) * dg(q) / (g(1.0) - g(q))
    return q_hat / (1 + q_hat)


def test_the_threshold_is_gamma_in_the_reduced_equation() -> None:
    """Independent of the solver: α(Q) → γ as Q → 1, and perfect recovery attracts exactly above γ."""
    assert alpha_of(1 - 1e-5) == pytest.approx(GAMMA, abs=1e-4)
    for alpha, grows in ((0.45, True), (0.55, False)):
        u = 1e-4
        ratio = (1 - one_iteration(1 - u, alpha)) / u
        assert ratio == pytest.approx(GAMMA / alpha, rel=1e-3)
        assert (ratio > 1) == grows


@pytest.fixture(scope="module")
def sweep() -> dict:
    spec = THEORY.spec_model.model_validate(
        {"theory": "hciz_mlp", "activation": "tanh", "gamma": GAMMA, "Delta": 0.0, "alpha": 0.2})
    return sweep_json(THEORY, spec, "alpha", list(np.linspace(0.2, 0.6, 21)), "continuation", SolverOptions())


def test_no_cluster_of_special_points_and_the_singular_point_named(sweep: dict) -> None:
    ps = sorted(t["parameter"] for t in sweep["transitions"])
    assert all(sum(abs(q - p) <= 1e-3 for q in ps) <= 2 for p in ps), ps
    (pr,) = [t for t in sweep["transitions"] if abs(t["parameter"] - GAMMA) < 1e-3]
    assert (pr["kind"], pr["type"], pr["event"]) == ("first_order", "first_order", "perfect_recovery")
    assert pr["parameter"] == pytest.approx(GAMMA, abs=1e-12)
    assert 0 < pr["uncertainty"] < 1e-10


def test_equilibrium_jumps_to_perfect_recovery_at_gamma(sweep: dict) -> None:
    for pt in sweep["points"]:
        names = {b["name"]: b for b in pt["branches"]}
        if abs(pt["parameter"] - GAMMA) < 1e-9:
            continue  # linspace's 0.49999999999999994: at γ to round-off, where either answer is right
        if pt["parameter"] < GAMMA:
            assert pt["equilibrium"] == "universal" and "perfect_recovery" not in names
        else:
            pr = names["perfect_recovery"]
            assert pt["equilibrium"] == "perfect_recovery" and pr["stable"]
            _, observables = branch_tables(pt, pr)  # a compact point: the branch lists what differs from the point
            assert observables["free_entropy"] is None  # +∞ at Δ = 0, reported as non-finite
            assert observables["generalization_error"] < 1e-7
    # the unstable specialised branch between: its Q solves the reduced equation at every α > γ
    for pt in sweep["points"]:
        for b in pt["branches"]:
            if b["name"] == "specialized_unstable":
                assert alpha_of(b["order_parameters"]["Q"]) == pytest.approx(pt["parameter"], rel=1e-6)


def test_no_nan_reaches_lapack(capfd: pytest.CaptureFixture[str]) -> None:
    spec = THEORY.spec_model.model_validate(
        {"theory": "hciz_mlp", "activation": "tanh", "gamma": GAMMA, "Delta": 0.0, "alpha": 0.499})
    sweep_json(THEORY, spec, "alpha", list(np.linspace(0.499, 0.501, 21)), "continuation", SolverOptions())
    out, err = capfd.readouterr()
    assert "DLASCL" not in out + err and "illegal value" not in out + err
