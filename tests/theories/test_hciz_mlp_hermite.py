"""Hermite numerics, activations and scalar channels of the HCIZ theory, against closed forms and Monte Carlo.

Independent references: closed-form Hermite coefficients (ReLU: μ_l = φ(0) He_{l−2}(0)), the arcsine
kernels of ReLU / sign / erf, the coefficient table of the theory notes (values quoted there to 5 digits),
a 2-D Gauss–Hermite evaluation of E[σ(u)σ(u')] (a different formula from the Mehler series), and Monte
Carlo samples of the scalar channels (Nishimori identity E[w0⟨w⟩] = E[⟨w⟩²]).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import erf

from solvers.numerics.hermite import (
    PowerSeries,
    gauss_hermite,
    gaussian_expectation,
    hermite_coefficients,
    normalized_coefficients,
)
from solvers.theories.hciz_mlp.activations import build, named, series_activation
from solvers.theories.hciz_mlp.priors import channel

PHI0 = 1.0 / math.sqrt(2.0 * math.pi)


def correlated_expectation(f, q: float, order: int = 120) -> float:
    """E[f(u) f(u')] for standard Gaussians with correlation q, by a 2-D Gauss–Hermite product rule."""
    z, w = gauss_hermite(order)
    u = z[:, None]
    up = q * z[:, None] + math.sqrt(1.0 - q * q) * z[None, :]
    return float(w @ (f(u) * f(up)) @ w)


def he(l: int, x: float) -> float:
    """Probabilists' Hermite polynomial by its explicit recursion (independent of the library's)."""
    a, b = 1.0, x
    if l == 0:
        return a
    for k in range(1, l):
        a, b = b, x * b - k * a
    return b


def test_gauss_hermite_moments() -> None:
    x, w = gauss_hermite(30)
    for k, m in [(0, 1.0), (2, 1.0), (4, 3.0), (6, 15.0), (8, 105.0)]:
        assert float(w @ x**k) == pytest.approx(m, rel=1e-12)


def test_relu_coefficients_closed_form() -> None:
    mu = hermite_coefficients(lambda x: np.maximum(x, 0.0), 10)
    assert mu[0] == pytest.approx(PHI0, abs=1e-12)
    assert mu[1] == pytest.approx(0.5, abs=1e-12)
    for l in range(2, 11):
        assert mu[l] == pytest.approx(PHI0 * he(l - 2, 0.0), abs=1e-9)


def test_sign_coefficients_closed_form() -> None:
    # μ_l = E[sign(z) He_l(z)] = 2 φ(0) He_{l−1}(0) for odd l, 0 for even l.
    mu = hermite_coefficients(np.sign, 9)
    for l in range(10):
        expected = 2.0 * PHI0 * he(l - 1, 0.0) if l % 2 else 0.0
        assert mu[l] == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    ("name", "mu0", "mu1", "mu2", "mu3", "m2", "g1"),
    [
        ("relu", 0.39894, 0.5, 0.39894, 0.0, 0.5, 0.011268),
        ("tanh", 0.0, 0.60571, 0.0, -0.36360, 0.39429, 0.02742),
        ("tanh2", 0.0, 0.72948, 0.0, -0.61398, 0.63526, 0.10312),
        ("erf", 0.0, 0.65147, 0.0, -0.43431, 0.46456, 0.04015),
        ("sign", 0.0, 0.79788, 0.0, -0.79788, 1.0, 0.36338),
        ("quadratic", 1.0, 0.0, 2.0, 0.0, 3.0, 0.0),
        ("he2", 0.0, 0.0, math.sqrt(2.0), 0.0, 1.0, 0.0),
        ("he2_he3", 0.0, 0.0, math.sqrt(2.0), 1.0, 7.0 / 6.0, 1.0 / 6.0),
        ("elu", 0.16052, 0.76158, 0.26158, -0.13736, 0.64495, 0.004965),
    ],
)
def test_activation_table_of_the_notes(name, mu0, mu1, mu2, mu3, m2, g1) -> None:
    a = named(name)
    assert (a.mu0, a.mu1, a.mu2) == pytest.approx((mu0, mu1, mu2), abs=2e-5)
    assert a.leading[3] == pytest.approx(mu3, abs=2e-5)
    assert a.second_moment == pytest.approx(m2, abs=2e-5)
    assert a.g1 == pytest.approx(g1, abs=2e-5)
    # g(1) = E σ² − μ0² − μ1² − μ2²/2 holds exactly by construction of every path.
    assert a.g1 == pytest.approx(a.second_moment - a.mu0**2 - a.mu1**2 - a.mu2**2 / 2, abs=1e-12)


@pytest.mark.parametrize(
    ("name", "f"),
    [
        ("erf", erf),
        ("tanh", np.tanh),
        ("tanh2", lambda x: np.tanh(2 * x)),
        ("he2_he3", lambda x: (x * x - 1) / math.sqrt(2) + (x**3 - 3 * x) / 6),
        ("elu", lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)))),
    ],
)
def test_covariance_against_two_dimensional_quadrature(name, f) -> None:
    """μ0² + μ1² q + μ2² q²/2 + g(q) = E[σ(u)σ(u')] (closed form or Mehler series vs a 2-D product rule).

    Only activations smooth enough for a 2-D Gauss–Hermite rule; ReLU and sign are checked against
    their closed forms below.
    """
    a = named(name)
    tol = 1e-5 if name == "elu" else 1e-8  # ELU has a kink in σ'': the 2-D rule is the less accurate side
    for q in (-0.7, -0.2, 0.3, 0.6, 0.85):
        lhs = a.mu0**2 + a.mu1**2 * q + a.mu2**2 * q * q / 2 + float(a.g(q))
        rhs = correlated_expectation(f, q, order=200)
        assert lhs == pytest.approx(rhs, abs=tol)


@pytest.mark.parametrize(("name", "f"), [("relu", lambda x: np.maximum(x, 0.0)), ("sign", np.sign), ("erf", erf)])
def test_mehler_series_reproduces_the_closed_forms(name, f) -> None:
    """The generic numerical path (series of 200 quadrature coefficients) on a function with a closed form."""
    closed, series = named(name), series_activation(name, f)
    q = np.linspace(-0.9, 0.9, 13)
    assert np.allclose(series.g(q), closed.g(q), atol=1e-9)
    assert np.allclose(series.dg(q), closed.dg(q), atol=1e-8)
    assert series.g1 == pytest.approx(closed.g1, abs=1e-12)


@pytest.mark.parametrize("name", ["relu", "sign", "erf", "tanh", "elu", "he2_he3"])
def test_derivatives_of_g(name) -> None:
    a = named(name)
    q = np.linspace(-0.8, 0.8, 9)
    h = 1e-6
    assert np.allclose(a.dg(q), (a.g(q + h) - a.g(q - h)) / (2 * h), atol=1e-7)
    assert np.allclose(a.d2g(q), (a.dg(q + h) - a.dg(q - h)) / (2 * h), atol=1e-6)
    assert float(a.g(0.0)) == pytest.approx(0.0, abs=1e-15)
    assert float(a.dg(0.0)) == pytest.approx(0.0, abs=1e-15)


def test_options_and_hermite_lists() -> None:
    a = build("tanh2", remove_linear=True, unit_variance=True)
    assert a.mu1 == 0.0 and a.second_moment == pytest.approx(1.0)
    assert a.g1 == pytest.approx(1.0, abs=1e-12)  # μ0 = μ2 = 0: everything is in l ≥ 3
    # deep-tanh reference: g on 21 points for (tanh(2x) − μ1 x)/√(ν − μ1²), stored by the authors' code.
    assert float(a.g(0.5)) == pytest.approx(8.309705398707418e-02, rel=1e-8)
    assert float(a.g(0.9)) == pytest.approx(6.334581147666256e-01, rel=1e-8)
    p = build(hermite=[0.0, 0.5, 0.0, 1.0, 0.0, 0.3])
    assert p.g1 == pytest.approx(1.0 / 6 + 0.09 / 120)
    assert float(p.g(0.5)) == pytest.approx(0.5**3 / 6 + 0.09 * 0.5**5 / 120)


def test_power_series_matches_numpy_polynomial() -> None:
    c = np.array([0.0, 0.0, 0.0, 0.3, 0.1, 0.02, 0.005])
    s = PowerSeries(c, start=3)
    q = np.linspace(-1, 1, 7)
    P = np.polynomial.Polynomial(c)
    assert np.allclose(s(q), P(q))
    assert np.allclose(s.derivative(q), P.deriv()(q))
    assert np.allclose(s.second_derivative(q), P.deriv(2)(q))


def test_normalized_coefficients_satisfy_parseval() -> None:
    c = normalized_coefficients(np.tanh, 120)
    assert float(np.sum(c**2)) == pytest.approx(gaussian_expectation(lambda x: np.tanh(x) ** 2), abs=1e-12)


@pytest.mark.parametrize("prior", ["gaussian", "rademacher"])
def test_scalar_channel_nishimori_monte_carlo(prior) -> None:
    """q(x) = E[w0⟨w⟩] = E[⟨w⟩²] for y = √x w0 + ξ, by sampling the channel (posterior means in closed form)."""
    rng = np.random.default_rng(7)
    ch = channel(prior)
    n = 400_000
    for x in (0.3, 1.5, 6.0):
        w0 = rng.standard_normal(n) if prior == "gaussian" else rng.choice([-1.0, 1.0], n)
        y = math.sqrt(x) * w0 + rng.standard_normal(n)
        mean = math.sqrt(x) * y / (1 + x) if prior == "gaussian" else np.tanh(math.sqrt(x) * y)
        a, b = np.mean(w0 * mean), np.mean(mean**2)
        se = np.std(w0 * mean) / math.sqrt(n)
        assert float(ch.overlap(x)) == pytest.approx(a, abs=5 * se)
        assert float(ch.overlap(x)) == pytest.approx(b, abs=5 * se)


@pytest.mark.parametrize("prior", ["gaussian", "rademacher"])
def test_scalar_channel_free_entropy_derivative(prior) -> None:
    """2ψ'(x) = q(x), and q' is the derivative of q (what the analytic Jacobian relies on)."""
    ch = channel(prior)
    h = 1e-6
    for x in (0.05, 0.7, 3.0, 20.0):
        assert 2 * (ch.psi(x + h) - ch.psi(x - h)) / (2 * h) == pytest.approx(float(ch.overlap(x)), abs=1e-8)
        assert float(ch.d_overlap(x)) == pytest.approx((ch.overlap(x + h) - ch.overlap(x - h)) / (2 * h), abs=1e-7)
    assert float(ch.d_overlap(0.0)) == pytest.approx(1.0)
    y = np.array([0.0, 0.4, 1.5, 3.0])
    assert np.allclose(ch.log_snr(np.expm1(y)), y)
    assert np.allclose(ch.log_snr_of_overlap(ch.overlap_from_log(y[1:])), y[1:], atol=1e-7)
