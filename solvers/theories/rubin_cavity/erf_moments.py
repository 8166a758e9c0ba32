"""Closed-form Gaussian averages of the erf activation used throughout the Rubin cavity theory.

Notation: a hidden weight ``w`` has squared norm ``q = |w|²`` and overlap ``rho = w·e`` with the
teacher direction ``e``; for an isotropic Gaussian input ``x``, ``g = w·x`` and ``z = e·x`` are jointly
Gaussian with Var g = q, Cov(g, z) = rho. Stein's identity of order k gives
``E[F(g) He_k(z)] = rho^k E[F^(k)(g)]``, which turns every target-mode correlation into a
closed form. Each function here is checked against Monte Carlo in the test suite.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erf, owens_t

TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def erf_prime_mean(q: np.ndarray | float) -> np.ndarray | float:
    """E[erf'(g)] for g ~ N(0, q): (2/√π) (1 + 2q)^(-1/2)."""
    return TWO_OVER_SQRT_PI / np.sqrt(1.0 + 2.0 * np.asarray(q))


def erf_third_mean(q: np.ndarray | float) -> np.ndarray | float:
    """E[erf'''(g)] for g ~ N(0, q): −(4/√π) (1 + 2q)^(-3/2)."""
    return -2.0 * TWO_OVER_SQRT_PI / (1.0 + 2.0 * np.asarray(q)) ** 1.5


def h1_correlation(rho: np.ndarray | float, q: np.ndarray | float) -> np.ndarray | float:
    """E[erf(w·x) H1(z)] = 2 rho / √(π (1 + 2q))."""
    return np.asarray(rho) * erf_prime_mean(q)


def h3_correlation(rho: np.ndarray | float, q: np.ndarray | float) -> np.ndarray | float:
    """E[erf(w·x) H3(z)] = −4 rho³ / (√π (1 + 2q)^(3/2)), H3(z) = z³ − 3z."""
    return np.asarray(rho) ** 3 * erf_third_mean(q)


def residual_correlation(rho: np.ndarray | float, q: np.ndarray | float, b: float, c: float) -> np.ndarray | float:
    """m(rho, q) = E[r(x) erf(w·x)] for the residual r = b H1(z) + c H3(z)."""
    rho = np.asarray(rho)
    h = 1.0 + 2.0 * np.asarray(q)
    return TWO_OVER_SQRT_PI * rho / np.sqrt(h) * (b - 2.0 * c * rho**2 / h)


def erf_variance(q: np.ndarray | float) -> np.ndarray | float:
    """v(q) = E[erf(g)²] for g ~ N(0, q): (2/π) arcsin(2q / (1 + 2q))."""
    q = np.asarray(q)
    return (2.0 / math.pi) * np.arcsin(2.0 * q / (1.0 + 2.0 * q))


def erf_variance_prime(q: np.ndarray | float) -> np.ndarray | float:
    """v'(q) = (4/π) / ((1 + 2q) √(1 + 4q))."""
    q = np.asarray(q)
    return (4.0 / math.pi) / ((1.0 + 2.0 * q) * np.sqrt(1.0 + 4.0 * q))


def erf_variance_second(q: np.ndarray | float) -> np.ndarray | float:
    """v''(q), the derivative of :func:`erf_variance_prime`."""
    q = np.asarray(q)
    a, s = 1.0 + 2.0 * q, np.sqrt(1.0 + 4.0 * q)
    return (4.0 / math.pi) * (-2.0 / (a * a * s) - 2.0 / (a * s**3))


def arcsin_kernel(x: np.ndarray, xp: np.ndarray, s: float) -> np.ndarray:
    """Williams' kernel E_w[erf(w·x) erf(w·x')] for w ~ N(0, s I); rows of ``x`` and ``xp`` are inputs."""
    x, xp = np.atleast_2d(x), np.atleast_2d(xp)
    cross = 2.0 * s * x @ xp.T
    nx = 1.0 + 2.0 * s * np.sum(x * x, axis=1)
    nxp = 1.0 + 2.0 * s * np.sum(xp * xp, axis=1)
    return (2.0 / math.pi) * np.arcsin(cross / np.sqrt(np.outer(nx, nxp)))


def erf_derivative(k: int, y: np.ndarray) -> np.ndarray:
    """k-th derivative of erf: erf for k = 0, else (2/√π) (−1)^(k−1) H_(k−1)(y) e^(−y²) (physicists' Hermite).

    The Hermite polynomial is built by its three-term recurrence, which is stable for the
    moderate orders (k ≲ 60) the finite-sample kernel needs.
    """
    y = np.asarray(y, dtype=float)
    if k == 0:
        return erf(y)
    h_prev, h = np.zeros_like(y), np.ones_like(y)  # H_{-1} := 0, H_0 = 1
    for n in range(k - 1):
        h_prev, h = h, 2.0 * y * h - 2.0 * n * h_prev
    return TWO_OVER_SQRT_PI * (-1.0) ** (k - 1) * h * np.exp(-y * y)


def shifted_erf_mean(a: np.ndarray | float, s2: np.ndarray | float) -> np.ndarray | float:
    """E[erf(a + s ξ)], ξ ~ N(0, 1): erf(a / √(1 + 2 s²))."""
    return erf(np.asarray(a) / np.sqrt(1.0 + 2.0 * np.asarray(s2)))


def shifted_erf_square_mean(a: np.ndarray | float, s2: np.ndarray | float) -> np.ndarray | float:
    """E[erf(a + s ξ)²], ξ ~ N(0, 1), through Owen's T function.

    With erf(x) = 2Φ(√2 x) − 1, E[Φ(√2 X)²] is a bivariate normal orthant probability
    Φ₂(h, h; r) with h = √2 a/√(1 + 2s²), r = 2s²/(1 + 2s²), and Φ₂(h, h; r) = Φ(h) − 2 T(h, √((1−r)/(1+r))).
    The Φ(h) terms cancel, leaving 1 − 8 T(h, (1 + 4s²)^(-1/2)). At a = 0 this is v(s²).
    """
    a, s2 = np.asarray(a, dtype=float), np.asarray(s2, dtype=float)
    h = math.sqrt(2.0) * a / np.sqrt(1.0 + 2.0 * s2)
    return 1.0 - 8.0 * owens_t(h, 1.0 / np.sqrt(1.0 + 4.0 * s2))
