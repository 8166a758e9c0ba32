"""Gaussian quadrature and Hermite expansions of functions of a standard normal variable.

Conventions (probabilists' Hermite polynomials He_l, weight e^{-x²/2}/√(2π)):

    f(x) = Σ_l (μ_l / l!) He_l(x),      μ_l = E_z[f(z) He_l(z)],  z ~ N(0, 1),

and, by Mehler's formula, for standard Gaussians u, u' with correlation q,

    E[f(u) f(u')] = Σ_l μ_l² q^l / l!.

Numerically we work with the normalised coefficients c_l = μ_l / √(l!), for which
``E f² = Σ c_l²`` and every term is O(1), so high orders neither overflow nor lose precision.

All rules here are fixed-order (no adaptivity): a quantity computed with them is a smooth
function of its parameters, which is what Newton's method and finite-difference Jacobians need.
Expectations of functions with a kink or a jump at the origin (ReLU, sign, ELU) use Gauss–Legendre
on each half-line separately, which is exact up to rounding for piecewise polynomials and converges
spectrally for piecewise-smooth integrands; Gauss–Hermite would converge only algebraically there.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np
from scipy.special import roots_hermitenorm, roots_legendre

#: Beyond this many standard deviations the Gaussian weight is below 1e-300 relative to its peak.
DEFAULT_CUTOFF = 38.0


@lru_cache(maxsize=32)
def gauss_hermite(order: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights with Σ w_i f(x_i) ≈ E_z f(z), z ~ N(0, 1) (probabilists' rule)."""
    if order < 1:
        raise ValueError("order must be >= 1")
    x, w = roots_hermitenorm(order)
    w = w / np.sqrt(2.0 * np.pi)
    x.setflags(write=False)
    w.setflags(write=False)
    return x, w


@lru_cache(maxsize=32)
def gauss_legendre_halflines(order: int, cutoff: float = DEFAULT_CUTOFF) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian expectation rule from Gauss–Legendre on [-cutoff, 0] and [0, cutoff].

    ``order`` nodes per half-line. The origin is a panel boundary, so integrands that are smooth
    on each half-line (ReLU, sign, ELU, ...) are integrated spectrally accurately.
    """
    if order < 1:
        raise ValueError("order must be >= 1")
    t, s = roots_legendre(order)
    half = 0.5 * cutoff * (t + 1.0)  # nodes on [0, cutoff]
    wh = 0.5 * cutoff * s
    x = np.concatenate([-half[::-1], half])
    w = np.concatenate([wh[::-1], wh]) * np.exp(-0.5 * x**2) / np.sqrt(2.0 * np.pi)
    x.setflags(write=False)
    w.setflags(write=False)
    return x, w


def gaussian_expectation(f: Callable[[np.ndarray], np.ndarray], order: int = 400) -> float:
    """E_z f(z) for z ~ N(0, 1), piecewise Gauss–Legendre with a panel break at 0."""
    x, w = gauss_legendre_halflines(order)
    return float(np.dot(w, f(x)))


def normalized_hermite(x: np.ndarray, lmax: int) -> np.ndarray:
    """Array ``h[l, i] = He_l(x_i) / √(l!)`` for l = 0..lmax, by the stable three-term recursion."""
    x = np.asarray(x, dtype=float)
    h = np.empty((lmax + 1, *x.shape))
    h[0] = 1.0
    if lmax >= 1:
        h[1] = x
    for l in range(1, lmax):
        # He_{l+1} = x He_l - l He_{l-1}, divided through by √((l+1)!).
        h[l + 1] = (x * h[l] - np.sqrt(l) * h[l - 1]) / np.sqrt(l + 1.0)
    return h


def normalized_coefficients(f: Callable[[np.ndarray], np.ndarray], lmax: int, order: int = 600) -> np.ndarray:
    """c_l = μ_l / √(l!) = E_z[f(z) He_l(z)] / √(l!) for l = 0..lmax."""
    x, w = gauss_legendre_halflines(order)
    fx = np.asarray(f(x), dtype=float)
    h = normalized_hermite(x, lmax)
    return h @ (w * fx)


def hermite_coefficients(f: Callable[[np.ndarray], np.ndarray], lmax: int, order: int = 600) -> np.ndarray:
    """μ_l = E_z[f(z) He_l(z)] for l = 0..lmax (grows like √(l!) for generic f; keep lmax modest)."""
    c = normalized_coefficients(f, lmax, order)
    fact = np.sqrt(np.cumprod(np.concatenate([[1.0], np.arange(1.0, lmax + 1.0)])))
    return c * fact


def second_moment(f: Callable[[np.ndarray], np.ndarray], order: int = 600) -> float:
    """E_z f(z)²."""
    return gaussian_expectation(lambda x: np.asarray(f(x), dtype=float) ** 2, order)


class PowerSeries:
    """q ↦ Σ_{l ≥ start} c2[l] q^l and its first derivative, vectorised over q.

    Used for Mehler sums E[f(u) f(u')] = Σ c_l² q^l. The powers are formed as one array operation
    (no Python loop over the order), which matters because the saddle-point maps call it constantly.
    """

    def __init__(self, c2: np.ndarray, start: int = 0):
        c = np.array(c2, dtype=float)
        c[:start] = 0.0
        nz = np.nonzero(c)[0]
        self.powers = nz.astype(float)
        self.coeffs = c[nz]
        self.dcoeffs = self.coeffs * self.powers
        self.dpowers = np.maximum(self.powers - 1.0, 0.0)
        self.d2coeffs = self.dcoeffs * self.dpowers
        self.d2powers = np.maximum(self.powers - 2.0, 0.0)

    def __call__(self, q: np.ndarray | float) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        if self.coeffs.size == 0:
            return np.zeros_like(q)
        return np.power(q[..., None], self.powers) @ self.coeffs

    def with_derivative(self, q: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """(value, first derivative) from one table of powers (powers ≥ 1 assumed, as for Mehler tails)."""
        q = np.asarray(q, dtype=float)
        if self.coeffs.size == 0:
            return np.zeros_like(q), np.zeros_like(q)
        P = np.power(q[..., None], self.dpowers)
        return (P * q[..., None]) @ self.coeffs, P @ self.dcoeffs

    def with_two_derivatives(self, q: np.ndarray | float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(value, first, second derivative) from one table of powers (powers ≥ 2 assumed, as for Mehler
        tails from l = 3 on)."""
        q = np.asarray(q, dtype=float)
        if self.coeffs.size == 0:
            return np.zeros_like(q), np.zeros_like(q), np.zeros_like(q)
        qq = q[..., None]
        P = np.power(qq, self.d2powers)
        return (P * (qq * qq)) @ self.coeffs, (P * qq) @ self.dcoeffs, P @ self.d2coeffs

    def derivative(self, q: np.ndarray | float) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        if self.coeffs.size == 0:
            return np.zeros_like(q)
        return np.power(q[..., None], self.dpowers) @ self.dcoeffs

    def second_derivative(self, q: np.ndarray | float) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        if self.coeffs.size == 0:
            return np.zeros_like(q)
        return np.power(q[..., None], self.d2powers) @ self.d2coeffs
