"""rubin_cavity at the float extremes of valid input: tiny T makes u and η astronomically large, and every float
path of the overlap potential and the closure must then give a result (converged or not, with its reason),
never an exception. Checked against closed forms that do not share the code's arithmetic."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from solvers.theories.rubin_cavity.common import variance_term as vt
from solvers.theories.rubin_cavity.common.closure import residual_coefficients
from solvers.theories.rubin_cavity.common.erf_projections import SQRT6
from solvers.theories.rubin_cavity.common.potential import OverlapPotential


def _rank_one_solution(x: float, r: float, epsilon: float) -> tuple[float, float]:
    """(b, c) for M = x v vᵀ, v = (1, r), by Sherman–Morrison: (I + x v vᵀ)⁻¹ y = y − x v (v·y)/(1 + x|v|²)."""
    y = np.array([1.0, SQRT6 * epsilon])
    v = np.array([1.0, r])
    z = y - x * v * (v @ y) / (1.0 + x * (v @ v))
    return float(z[0]), float(z[1] / SQRT6)


@pytest.mark.parametrize("x", [1e3, 1e12, 1e20, 1e60, 1e140])
def test_the_closure_of_a_huge_rank_one_kernel_is_sherman_morrison(x: float) -> None:
    # (1 + M11)(1 + M33) − M13² cancelled to exactly 0 here from x ~ 1e16 on: a ZeroDivisionError.
    r, epsilon = 0.5, -0.3
    M = x * np.array([[1.0, r], [r, r * r]])
    got = residual_coefficients(M, epsilon)
    want = _rank_one_solution(x, r, epsilon)
    assert np.allclose(got, want, rtol=1e-9, atol=1e-12 * max(1.0, abs(epsilon)))


def test_the_closure_agrees_with_a_linear_solve_on_ordinary_kernels() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        A = rng.normal(size=(2, 2)) * 10.0 ** rng.uniform(-3, 3)
        M = A @ A.T
        eps = float(rng.uniform(-2, 2))
        z = np.linalg.solve(np.eye(2) + M, [1.0, SQRT6 * eps])
        assert np.allclose(residual_coefficients(M, eps), (z[0], z[1] / SQRT6), rtol=1e-9, atol=1e-12)


def test_an_overflowing_kernel_gives_nan_not_an_exception() -> None:
    b, c = residual_coefficients(np.array([[1e300, 1e300], [1e300, 1e300]]) * 10.0, 0.1)
    assert math.isnan(b) and math.isnan(c)


@pytest.mark.parametrize("rho", [1e40, 1e60, 1e150])
def test_the_potential_far_out_is_its_large_s_limit(rho: float) -> None:
    """h³ of s = ρ² overflowed a plain float past s ~ 1e102; F(s) = s/(2σ_w²) − (2u/π) g(t) with t → 1/2 there."""
    p = OverlapPotential(sigma_w2=0.5, b=0.3, c=-0.3, u=1e30)
    s = rho * rho
    t = 0.5  # s/h rounds to 1/2 at these s
    limit = s / (2 * p.sigma_w2) - (2 * p.u / math.pi) * t * (p.b - 2 * p.c * t) ** 2
    assert float(p.value(rho)) == pytest.approx(limit, rel=1e-12)
    assert math.isfinite(float(p.grad(rho))) and math.isfinite(float(p.hess(rho)))


@pytest.mark.parametrize("order", [0, 1, 2])
def test_the_mode_terms_match_their_closed_forms_and_stay_finite_far_out(order: int) -> None:
    """The standard-scaling variance's mode terms, written in s/h and 1/h, against their forms in powers of h (at
    ordinary s, in exact rational arithmetic) and finite where h**3 overflowed a plain float."""
    sigma_w2 = 0.5
    c, c13, c33 = (Fraction(x) for x in (vt.FOUR_OVER_PI, vt._C13, vt._C33))
    sw = Fraction(sigma_w2)
    h0 = 1 + 2 * sw
    for s in (0.01, 0.7, 3.0, 250.0):
        S = Fraction(s)
        h = h0 + 2 * S
        exact = {
            0: (c * S / h, 2 * c13 * S * S / h**2, c33 * S**3 / h**3, c * sw / h),
            1: (c * h0 / h**2, 4 * c13 * h0 * S / h**3, 3 * c33 * h0 * S * S / h**4, -2 * c * sw / h**2),
            2: (-4 * c * h0 / h**3, 4 * c13 * h0 * (h0 - 4 * S) / h**4, 6 * c33 * h0 * S * (h0 - 2 * S) / h**5,
                8 * c * sw / h**3),
        }[order]
        assert vt.mode_terms(s, sigma_w2, order) == pytest.approx([float(x) for x in exact], rel=1e-12, abs=1e-300)
    assert all(math.isfinite(x) for x in vt.mode_terms(1e120, sigma_w2, order))
