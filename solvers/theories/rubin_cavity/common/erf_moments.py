"""Closed-form Gaussian averages of the erf activation (its Hermite projections are in ``erf_projections``).

For ``g ~ N(0, q)``: E[erf'(g)] and E[erf'''(g)] are the Stein factors of the H1 and H3 projections,
``v(q) = E[erf(g)²]`` and its derivatives enter the standard-scaling potential, and the arcsin kernel
and the shifted-erf moments are the building blocks of kernels on data. Each function here is
checked against Monte Carlo in the test suite.
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
