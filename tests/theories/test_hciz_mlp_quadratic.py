"""The quadratic-activation limit: exact results of Maillard et al. and noiseless perfect recovery.

With σ = He2/√2, Gaussian weights and v = 1 the theory is rotationally invariant (Q ≡ 0) and must equal
the exact formula of Maillard, Troiani, Martin, Krzakala & Zdeborová, solved here independently from
their own equation: (4π²/3)∫ρ³/q̂ − Δ_M q̂/2 = 1 − 2α, ε_M = 2α/q̂ − Δ_M/2, with ρ the density of
Marchenko–Pastur(κ) ⊞ semicircle(1/√q̂) from the cubic σ²g³ − (z + κσ²)g² + (1 − κ + κz)g − κ = 0.
The normalisations map as ε_M(α, κ = γ, Δ_M) = ε*(α, γ, Δ)/γ with Δ_M = 2Δ/γ (at γ = 1/2 this is the
factor 2 and Δ_M = 4Δ of the theory notes).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from solvers.core.options import SolverOptions
from solvers.theories import get
from tests.payloads import solve_json

THEORY = get("hciz_mlp")
OPTIONS = SolverOptions()


def solve(**kw):
    spec = THEORY.spec_model.model_validate({"theory": "hciz_mlp", "activation": "he2", **kw})
    return solve_json(THEORY, spec, OPTIONS)


def _density(x: np.ndarray, sigma: float, kappa: float) -> np.ndarray:
    """Density of MP(κ) ⊞ σ·semicircle: max Im of the cubic's roots (companion matrices, vectorised)."""
    z = x + 1e-12j
    a = sigma**2
    C = np.zeros((x.size, 3, 3), dtype=complex)
    C[:, 0, 0] = (z + kappa * a) / a
    C[:, 0, 1] = -(1 - kappa + kappa * z) / a
    C[:, 0, 2] = kappa / a
    C[:, 1, 0] = 1.0
    C[:, 2, 1] = 1.0
    return np.max(np.linalg.eigvals(C).imag, axis=1) / np.pi


def maillard_error(alpha: float, kappa: float, delta_m: float) -> float:
    def cube_integral(qhat: float) -> float:
        s = 1.0 / math.sqrt(qhat)
        x = np.linspace(-3 * s - 1, (1 + 1 / math.sqrt(kappa)) ** 2 + 3 * s + 1, 30001)
        return float(np.trapezoid(_density(x, s, kappa) ** 3, x))

    def eq(qhat: float) -> float:
        return cube_integral(qhat) * 4 * math.pi**2 / 3 / qhat - delta_m * qhat / 2 - (1 - 2 * alpha)

    qhat = brentq(eq, 1e-2, 1e3, xtol=1e-12)
    return 2 * alpha / qhat - delta_m / 2


@pytest.mark.parametrize(("gamma", "alpha", "Delta"), [(0.5, 0.2, 0.1), (0.5, 0.45, 0.02), (0.25, 0.3, 0.05)])
def test_equals_maillard_et_al(gamma: float, alpha: float, Delta: float) -> None:
    res = solve(gamma=gamma, alpha=alpha, Delta=Delta)
    assert [b["name"] for b in res["branches"]] == ["universal"]
    eps = res["observables"]["generalization_error"]
    assert eps == pytest.approx(gamma * maillard_error(alpha, gamma, 2 * Delta / gamma), rel=2e-6)


@pytest.mark.parametrize("gamma", [0.5, 1.5])
def test_noiseless_perfect_recovery_threshold(gamma: float) -> None:
    alpha_pr = gamma - gamma**2 / 2 if gamma < 1 else 0.5
    below = solve(gamma=gamma, alpha=0.97 * alpha_pr, Delta=0.0)
    above = solve(gamma=gamma, alpha=1.03 * alpha_pr, Delta=0.0)
    assert below["converged"] and above["converged"]
    assert below["observables"]["generalization_error"] > 1e-3
    assert above["observables"]["generalization_error"] < 1e-7  # 0 to the solver tolerance
    # perfect recovery of noiseless data: the free entropy diverges and is reported as such
    assert above["observables"]["free_entropy"] is None
    assert "observables.free_entropy" in above["non_finite"]


def test_rotational_invariance_pins_q() -> None:
    """Gaussian W and g ≡ 0: only the universal branch exists, whatever the start (no weak-Q root)."""
    for alpha in (0.1, 0.3, 1.0, 3.0):
        res = solve(gamma=0.5, alpha=alpha, Delta=0.05)
        assert [b["name"] for b in res["branches"]] == ["universal"]
        assert res["order_parameters"]["Q"] == 0.0


def test_scaling_of_the_activation() -> None:
    """σ = x² = 1 + √2·(He2/√2): a constant is invisible and scaling σ by c maps (ε, Δ) to (c² ε, c² Δ)."""
    spec = THEORY.spec_model.model_validate(
        {"theory": "hciz_mlp", "activation": "quadratic", "gamma": 0.5, "alpha": 0.3, "Delta": 0.1}
    )
    eps_sq = solve_json(THEORY, spec, OPTIONS)["observables"]["generalization_error"]
    eps_he2 = solve(gamma=0.5, alpha=0.3, Delta=0.05)["observables"]["generalization_error"]
    assert eps_sq == pytest.approx(2.0 * eps_he2, rel=1e-9)


def test_binary_weights_are_not_pinned() -> None:
    """Rademacher weights break rotational invariance: Q is an unknown and a specialised branch can exist."""
    res = solve(gamma=0.5, alpha=0.35, Delta=0.0, weight_prior="rademacher")
    names = {b["name"] for b in res["branches"]}
    assert "universal" in names and len(names) > 1
