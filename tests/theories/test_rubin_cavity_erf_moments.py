"""``rubin_cavity`` closed forms against Monte Carlo: Stein/Hermite identities, v(q), m(ρ, q), the arcsin
kernel, shifted-erf moments, the target-mode matrix A (the 4/π of A11) and the NNGP eigenvalues λ1, λ3.

Sample sizes are modest with fixed seeds; tolerances are 5 standard errors of each estimate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import erf

from solvers.theories.rubin_cavity.common.closure import nngp_eigenvalues, residual_coefficients
from solvers.theories.rubin_cavity.common.erf_moments import (
    arcsin_kernel,
    erf_prime_mean,
    erf_third_mean,
    erf_variance,
    erf_variance_prime,
    shifted_erf_mean,
    shifted_erf_square_mean,
)
from solvers.theories.rubin_cavity.common.erf_projections import (
    erf_derivative,
    h1_projection,
    h3_projection,
    mode_matrix,
    residual_projection,
)

N_MC = 2_000_000


def _within(samples: np.ndarray, value: float, k: float = 5.0) -> None:
    se = samples.std() / math.sqrt(samples.size)
    assert abs(samples.mean() - value) <= k * se + 1e-12, (samples.mean(), value, se)


def _correlated(q: float, rho: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(g, z) jointly Gaussian with Var g = q, Var z = 1, Cov = ρ."""
    z = rng.standard_normal(N_MC)
    g = rho * z + math.sqrt(q - rho**2) * rng.standard_normal(N_MC)
    return g, z


def test_stein_identities_and_erf_correlations() -> None:
    rng = np.random.default_rng(0)
    q, rho, b, c = 0.99, 0.7, 0.3, -0.3  # the generic point of the theory note
    g, z = _correlated(q, rho, rng)
    e = erf(g)
    _within(e * z, float(h1_projection(rho, q)))
    _within(e * (z**3 - 3 * z), float(h3_projection(rho, q)))
    _within(e * (b * z + c * (z**3 - 3 * z)), float(residual_projection(rho, q, b, c)))
    _within(e * e, float(erf_variance(q)))
    g0 = math.sqrt(q) * rng.standard_normal(N_MC)
    d1 = (2 / math.sqrt(math.pi)) * np.exp(-g0 * g0)
    _within(d1, float(erf_prime_mean(q)))
    _within((2 / math.sqrt(math.pi)) * (4 * g0 * g0 - 2) * np.exp(-g0 * g0), float(erf_third_mean(q)))
    # v'(q) by a central difference of the closed form v(q) (itself checked above).
    assert float(erf_variance_prime(q)) == pytest.approx(
        (float(erf_variance(q + 1e-6)) - float(erf_variance(q - 1e-6))) / 2e-6, rel=1e-8
    )


def test_arcsin_kernel_against_monte_carlo() -> None:
    rng = np.random.default_rng(1)
    D, s = 6, 0.3
    x, xp = rng.standard_normal(D), rng.standard_normal(D)
    w = math.sqrt(s) * rng.standard_normal((N_MC // 2, D))
    _within(erf(w @ x) * erf(w @ xp), float(arcsin_kernel(x, xp, s)[0, 0]))
    _within(erf(w @ x) ** 2, float(arcsin_kernel(x, x, s)[0, 0]))


def test_shifted_erf_moments_against_monte_carlo() -> None:
    rng = np.random.default_rng(2)
    xi = rng.standard_normal(N_MC)
    for a, s2 in [(0.0, 0.5), (0.8, 0.3), (-1.7, 1.2), (2.5, 0.05)]:
        vals = erf(a + math.sqrt(s2) * xi)
        _within(vals, float(shifted_erf_mean(a, s2)))
        _within(vals**2, float(shifted_erf_square_mean(a, s2)))
    assert float(shifted_erf_square_mean(0.0, 0.7)) == pytest.approx(float(erf_variance(0.7)), rel=1e-13)


def test_erf_derivatives_against_numpy_hermite() -> None:
    y = np.linspace(-3, 3, 13)
    for k in range(1, 9):
        coeff = np.zeros(k)
        coeff[-1] = 1.0  # H_{k-1} (physicists')
        expected = (2 / math.sqrt(math.pi)) * (-1) ** (k - 1) * np.polynomial.hermite.hermval(y, coeff) * np.exp(-y * y)
        assert np.allclose(erf_derivative(k, y), expected, rtol=1e-12, atol=1e-14)
    h = 1e-5
    fd = (erf_derivative(2, y + h) - erf_derivative(2, y - h)) / (2 * h)
    assert np.allclose(erf_derivative(3, y), fd, atol=1e-8)


def test_mode_matrix_is_the_square_of_the_target_mode_projections() -> None:
    """A = a aᵀ with a = (⟨Ĥ1 φ⟩, ⟨Ĥ3 φ⟩): A11 = (4/π) ρ²/h, not the 2/π printed in the paper's A11."""
    rng = np.random.default_rng(3)
    sw, rho = 0.5, 0.8
    q = sw + rho**2
    g, z = _correlated(q, rho, rng)
    e = erf(g)
    a1 = (e * z).mean()
    a3 = (e * (z**3 - 3 * z) / math.sqrt(6)).mean()
    A = mode_matrix(np.array([rho]), sw)[0]
    h = 1 + 2 * q
    assert A[0, 0] == pytest.approx((4 / math.pi) * rho**2 / h, rel=1e-14)
    assert A[0, 0] == pytest.approx(a1**2, rel=5e-3)  # 2/π would be off by a factor 2
    assert A[0, 1] == pytest.approx(a1 * a3, rel=2e-2)
    assert A[1, 1] == pytest.approx(a3**2, rel=4e-2)
    assert A[0, 1] == pytest.approx(-8 * rho**4 / (math.sqrt(6) * math.pi * h**2), rel=1e-14)
    assert A[1, 1] == pytest.approx(8 * rho**6 / (3 * math.pi * h**3), rel=1e-14)


def test_closure_without_learning_leaves_the_target_and_with_the_paper_typo_would_not() -> None:
    b, c = residual_coefficients(np.zeros((2, 2)), -0.3)
    assert (b, c) == (1.0, pytest.approx(-0.3, abs=1e-15))
    # A.12 as printed, [b, √6 c] = [Q̃ + σ²/n]⁻¹ [1, √6 ε], gives n/σ² instead of 1 when nothing is learned.
    n_over_sigma2 = 3000 / 0.18
    printed = np.linalg.solve(np.zeros((2, 2)) + np.eye(2) / n_over_sigma2, [1.0, math.sqrt(6) * -0.3])
    assert printed[0] == pytest.approx(n_over_sigma2)


@pytest.mark.parametrize("D", [50, 200, 1000])
def test_nngp_eigenvalues_against_monte_carlo(D: int) -> None:
    """D λ1 and D³ λ3 (per unit σ_a²) by Monte Carlo over w ~ N(0, σ_w²/D I), with |w|² fluctuating."""
    rng = np.random.default_rng(D)
    sw, n = 0.5, 1_000_000
    rho = math.sqrt(sw / D) * rng.standard_normal(n)
    q = rho**2 + (sw / D) * rng.chisquare(D - 1, n)
    h = 1 + 2 * q
    lam1_mc = (4 / math.pi) * rho**2 / h
    lam3_mc = 8 * rho**6 / (3 * math.pi * h**3)
    lam1, lam3 = nngp_eigenvalues(sw, D, 1.0)
    # Leading order in 1/D: the relative deviation must vanish like 1/D (norm fluctuations of |w|² and the
    # ρ² inside h; an expansion of E[1/h^k] gives about −0.5/D for λ1 and −6/D for λ3), up to sampling error.
    for mc, lam, slack in ((lam1_mc, lam1, 2.0), (lam3_mc, lam3, 10.0)):
        se = mc.std() / math.sqrt(n)
        assert abs(mc.mean() - lam) <= 5 * se + slack / D * lam, (D, mc.mean() / lam)
