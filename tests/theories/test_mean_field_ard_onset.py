"""The alignment onset of plain MF and per-unit MF-ARD against an independent evaluation of the single-neuron potential.

Ũ(y) is written out here from its definition (docs/theories/mean_field_ard.md, "Completing the square"): the
normalised Gaussian prior density of y = (w_S, u = log |w_⊥|²), ½ log(Λ/A) and the reward −τ J_S²/Λ, with
ReLU's Gaussian moments E relu(μ + σz) and E relu²(μ + σz) in closed form and the 2^k points of the relevant cube
summed directly. Its minima are found on a fine grid polished by Nelder–Mead, with no use of SaddleLab's well
search."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import gammaln
from scipy.stats import norm

from solvers.theories import get
from solvers.theories.mean_field_ard.theory import reduced_model

D, N, SIGMA_W2, SIGMA_A2 = 12, 512, 1.0, 1.0


def population(kappa: float, d: int = D, k: int = 2, **more: object):
    th = get("mean_field_ard")
    sp = th.spec_model.model_validate({"theory": "mean_field_ard", "model": "mf", "d": d, "N": N, "kappa": kappa,
                                       "target": {"kind": "parity", "k": k}, **more})
    return reduced_model(sp, None).pop(None)


def potential(t: float, kappa: float, d: int = D):
    """Ũ(w1, w2, u) of plain MF at k = 2 and residual t χ_S (γ = ½), from the definitions alone (broadcasts)."""
    rho = d / SIGMA_W2
    n = d - 2
    s = kappa**2 * N
    A = 1.0 / SIGMA_A2
    tau = t * t / (2.0 * kappa**2 * s)

    def U(w1: np.ndarray, w2: np.ndarray, u: np.ndarray) -> np.ndarray:
        q = np.exp(u)
        sd = np.sqrt(q)
        J = Sigma = 0.0
        for x1 in (-1.0, 1.0):
            for x2 in (-1.0, 1.0):
                mu = x1 * w1 + x2 * w2
                m1 = mu * norm.cdf(mu / sd) + sd * norm.pdf(mu / sd)
                m2 = (mu * mu + q) * norm.cdf(mu / sd) + mu * sd * norm.pdf(mu / sd)
                J = J + 0.25 * x1 * x2 * m1
                Sigma = Sigma + 0.25 * m2
        lam = A + Sigma / s
        prior = (math.log(2 * math.pi / rho) + 0.5 * rho * (w1 * w1 + w2 * w2)  # two relevant Gaussians
                 - 0.5 * n * u + 0.5 * rho * q + gammaln(0.5 * n) + 0.5 * n * math.log(2.0 / rho))  # log-Gamma in u
        return prior + 0.5 * np.log(lam / A) - tau * J * J / lam

    return U


def brute_gap(t: float, kappa: float, d: int = D) -> float:
    """Deepest aligned minus central minimum of Ũ (+inf without an aligned minimum), from a grid and Nelder–Mead."""
    U = potential(t, kappa, d)

    def f(y: np.ndarray) -> float:
        return float(U(y[0], y[1], y[2]))

    opts = {"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000}
    center = minimize(lambda u: f(np.r_[0.0, 0.0, u[0]]), x0=[-0.5], method="Nelder-Mead", options=opts).fun
    # the diagonal w1 = w2 = a: a fine grid in (a, u), then every interior grid minimum polished in all of y
    a, u = np.meshgrid(np.linspace(0.02, 3.0, 150), np.linspace(-9.0, 1.0, 120), indexing="ij")
    V = U(a, a, u)
    best = math.inf
    for i in range(1, V.shape[0] - 1):
        for j in range(1, V.shape[1] - 1):
            if V[i, j] <= V[i - 1:i + 2, j - 1:j + 2].min():
                r = minimize(f, x0=[a[i, j], a[i, j], u[i, j]], method="Nelder-Mead", options=opts)
                if min(abs(r.x[0]), abs(r.x[1])) > 0.05:
                    best = min(best, r.fun)
    return best - center


def test_the_potential_written_out_is_the_codes() -> None:
    pop = population(0.02)
    pot = pop.potential(np.array([0.8]))
    U = potential(0.8, 0.02)
    for y in ([0.0, 0.0, -0.3], [0.4, 0.4, -2.0], [0.7, -0.2, -1.0], [1.5, 1.4, 0.3]):
        assert float(pot.values(np.atleast_2d(y))[0][0]) == pytest.approx(float(U(*y)), abs=1e-9)


@pytest.mark.parametrize("t", [0.8, 1.0])
def test_well_depths_against_a_brute_force_search(t: float) -> None:
    """The code's deepest aligned minus central depth against the grid search, at states with an aligned well."""
    kappa = 0.04
    g = population(kappa).depth_gap_at(t)
    assert math.isfinite(g)
    assert g == pytest.approx(brute_gap(t, kappa), abs=1e-6)


def test_equal_depth_residual_against_a_brute_force_root() -> None:
    """t* (the residual at which the deepest aligned well is as deep as the central one) is a root of the
    brute-force gap; a 5 % shift of t* moves that gap well away from zero on both sides (it falls by ≈ 30 per
    unit of t here, so |gap| < 10⁻⁵ places t* to 10⁻⁶)."""
    kappa = 0.04
    ts = population(kappa).equal_depth_residual()
    assert ts is not None and 0.6 < ts < 0.95
    assert brute_gap(ts, kappa) == pytest.approx(0.0, abs=1e-5)
    assert brute_gap(0.95 * ts, kappa) > 0.5 and brute_gap(1.05 * ts, kappa) < -0.5


def mapped(pop, t: float) -> float:
    """The unaligned state's map t ↦ 1/(1 + λ_S(t)/c₀) (λ_S of the law restricted to the central basin)."""
    return 1.0 / (1.0 + pop.state(np.array([t]), central_basin=True).mean("g") / pop.net.ridge)


def test_the_indicator_has_the_sign_of_the_gap_on_the_unaligned_state() -> None:
    """Plain MF, k = 2, d = 35: on a κ grid across the onset the indicator h(t*) and the depth gap at the unaligned
    state's own residual t_c agree in sign, t_c solves its equation, and there is one sign change (κ_c between
    0.0055 and 0.006, where t_c ≈ 0.13: the unaligned state has learned most of the parity before the onset)."""
    signs = []
    for kappa in (0.004, 0.005, 0.0055, 0.006, 0.007, 0.01, 0.03, 0.05):
        pop = population(kappa, d=35)
        tc = pop.central_basin_solution()
        assert mapped(pop, tc) == pytest.approx(tc, abs=1e-10)
        ind, gap = pop.onset_indicator(), pop.onset_gap()
        assert np.sign(ind) == np.sign(gap)
        signs.append(bool(ind > 0))
    assert signs == [False, False, False, True, True, True, True, True]
    assert population(0.0055, d=35).central_basin_solution() == pytest.approx(0.126, abs=2e-3)


def test_per_unit_onset_reads_the_central_basin_only_where_it_is_one() -> None:
    """Per-unit MF-ARD, k = 2, d = 35: the Student-t prior lets aligned wells grow tens of units deeper than the
    central one at residuals above t*, and there they leak through the partition into the "central" share, so
    h(t) = t − 1/(1 + λ_S(t)/c₀) of the central-basin law is not monotone on [0, 1] (its roots are spurious) but
    is on [0, t*]. The indicator, which reads the law at t* only, changes sign once (the gap at a bracketed root
    of h changed sign six times in κ ∈ [0.01, 0.1])."""
    th = get("mean_field_ard")

    def per_unit(kappa: float):
        sp = th.spec_model.model_validate({"theory": "mean_field_ard", "model": "mf_ard", "d": 35, "N": N,
                                           "kappa": kappa, "target": {"kind": "parity", "k": 2},
                                           "ard": {"precisions": "per_unit"}})
        return reduced_model(sp, None).pop(None)

    pop = per_unit(0.03)
    ts = pop.equal_depth_residual()
    assert ts is not None and 0.55 < ts < 0.65
    h = np.array([t - mapped(pop, t) for t in np.linspace(0.05, 1.0, 20)])
    assert np.any(np.diff(h) < -0.02)  # non-monotone over [0, 1]
    below = np.array([t - mapped(pop, t) for t in np.linspace(0.05, ts, 8)])
    assert np.all(np.diff(below) > 0)
    assert pop.onset_indicator() == pytest.approx(below[-1]) and below[-1] > 0.02
    assert [per_unit(k).onset_indicator() > 0 for k in (0.005, 0.02, 0.05)] == [False, True, True]


def test_first_crossing_is_found_from_below() -> None:
    """The equal-depth search scans t upwards: a gap that has no well at small t, crosses zero at t = 0.437, and
    reads "no well" again near t = 1 (a deep well beyond the search grid) gives the crossing, not a bracket of
    the spurious jump at the top; a gap positive everywhere gives None."""
    from solvers.theories.mean_field_ard.population import first_crossing

    def gap(t: float) -> float:
        return math.inf if t < 0.2 or t > 0.9 else 3.0 * (0.437 - t)

    assert first_crossing(gap) == pytest.approx(0.437, abs=1e-12)
    assert first_crossing(lambda t: 1.0 + t) is None
