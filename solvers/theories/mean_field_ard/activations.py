"""Activations φ ∈ {relu, erf, tanh} and their Gaussian smoothings.

The reduced theory needs, for a pre-activation ``h = μ + √q ξ`` with ξ ~ N(0, 1),

    S_n[F](μ, q) = E_ξ[F^(n)(μ + √q ξ)],    F ∈ {φ, φ²},  n = 0 … 4,

because the heat equation ∂_q E[F(μ + √q ξ)] = ½ E[F''(μ + √q ξ)] turns every derivative in (μ, q)
into a higher μ-derivative. ReLU has closed forms (all derivatives of a Gaussian-smoothed
piecewise polynomial); erf and tanh are smooth and use a fixed Gauss–Hermite rule on ξ with their
exact derivatives. The chaos coefficients ``E[φ(μ + √q ξ) He_j(ξ)] = q^{j/2} S_j[φ]`` (Stein)
give the spectrum of the kernel on the irrelevant coordinates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from scipy.special import erf, ndtr

ActivationName = Literal["relu", "erf", "tanh"]
NAMES: tuple[str, ...] = ("relu", "erf", "tanh")

#: Gauss–Hermite order of the smooth activations' Gaussian averages (entire integrands: spectral accuracy).
GH_ORDER = 64
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@lru_cache(maxsize=8)
def _gh(order: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.hermite_e.hermegauss(order)
    return x, w / math.sqrt(2.0 * math.pi)


def hermite_e(n: int, x: np.ndarray) -> np.ndarray:
    """Probabilists' Hermite polynomial He_n(x) by its three-term recurrence."""
    x = np.asarray(x, dtype=float)
    h0 = np.ones_like(x)
    if n == 0:
        return h0
    h1 = x.copy()
    for m in range(1, n):
        h0, h1 = h1, x * h1 - m * h0
    return h1


def _hermite_phys(n: int, x: np.ndarray) -> np.ndarray:
    """Physicists' Hermite polynomial H_n(x)."""
    h0 = np.ones_like(x)
    if n == 0:
        return h0
    h1 = 2.0 * x
    for m in range(1, n):
        h0, h1 = h1, 2.0 * x * h1 - 2.0 * m * h0
    return h1


# ---- pointwise derivatives of the smooth activations ------------------------------------------
def _erf_derivative(n: int, x: np.ndarray) -> np.ndarray:
    if n == 0:
        return erf(x)
    return _TWO_OVER_SQRT_PI * (-1.0) ** (n - 1) * _hermite_phys(n - 1, x) * np.exp(-x * x)


def _tanh_derivative(n: int, x: np.ndarray) -> np.ndarray:
    """d^n tanh/dx^n as a polynomial in t = tanh x (P_{n+1}(t) = (1 − t²) P_n'(t))."""
    t = np.tanh(x)
    coeffs = np.array([0.0, 1.0])  # P_0(t) = t, lowest power first
    for _ in range(n):
        deriv = np.polynomial.polynomial.polyder(coeffs)
        coeffs = np.polynomial.polynomial.polymul([1.0, 0.0, -1.0], deriv)
    return np.polynomial.polynomial.polyval(t, coeffs)


def _leibniz_square(derivs: list[np.ndarray], n: int) -> np.ndarray:
    """(φ²)^(n) from φ^(0..n)."""
    return sum(math.comb(n, i) * derivs[i] * derivs[n - i] for i in range(n + 1))


@dataclass(frozen=True)
class Activation:
    """φ with its Gaussian smoothings. ``name`` is one of :data:`NAMES`."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in NAMES:
            raise ValueError(f"unknown activation {self.name!r}; choose one of {NAMES}")

    # ---- pointwise ------------------------------------------------------------------------------
    def __call__(self, h: np.ndarray) -> np.ndarray:
        h = np.asarray(h, dtype=float)
        if self.name == "relu":
            return np.maximum(h, 0.0)
        if self.name == "erf":
            return erf(h)
        return np.tanh(h)

    def derivative(self, n: int, h: np.ndarray) -> np.ndarray:
        """φ^(n)(h) for the smooth activations."""
        if self.name == "erf":
            return _erf_derivative(n, h)
        if self.name == "tanh":
            return _tanh_derivative(n, h)
        raise ValueError("ReLU derivatives are distributions; use the smoothed forms")

    @property
    def odd(self) -> bool:
        return self.name in ("erf", "tanh")

    # ---- Gaussian smoothings --------------------------------------------------------------------
    def smoothed(self, mu: np.ndarray, q: np.ndarray | float, orders: int = 4) -> tuple[np.ndarray, np.ndarray]:
        """(S_n[φ], S_n[φ²]) for n = 0..orders, stacked on a new leading axis.

        ``mu`` and ``q`` broadcast; q > 0.
        """
        mu = np.asarray(mu, dtype=float)
        q = np.asarray(q, dtype=float)
        if self.name == "relu":
            return _relu_smoothed(mu, q, orders)
        q = np.broadcast_to(q, mu.shape)
        x, w = _gh(GH_ORDER)
        h = mu[..., None] + np.sqrt(q)[..., None] * x
        derivs = [self.derivative(n, h) for n in range(orders + 1)]
        s1 = np.stack([derivs[n] @ w for n in range(orders + 1)])
        s2 = np.stack([_leibniz_square(derivs, n) @ w for n in range(orders + 1)])
        return s1, s2

    def chaos(self, mu: np.ndarray, q: np.ndarray | float, j_max: int) -> np.ndarray:
        """c_j = E[φ(μ + √q ξ) He_j(ξ)] / √(j!) for j = 0..j_max (leading axis).

        Σ_j c_j² = E[φ(μ + √q ξ)²] (Parseval in ξ); c_j² is the power of φ in the j-th chaos of ξ.
        """
        mu = np.asarray(mu, dtype=float)
        q = np.broadcast_to(np.asarray(q, dtype=float), mu.shape)
        s = np.sqrt(q)
        out = np.empty((j_max + 1, *mu.shape))
        if self.name == "relu":
            z = mu / s
            dens = np.exp(-0.5 * z * z) * _INV_SQRT_2PI
            out[0] = mu * ndtr(z) + s * dens
            if j_max >= 1:
                out[1] = s * ndtr(z)
            for j in range(2, j_max + 1):
                # E[relu^(j)] = (−1)^j He_{j−2}(z) ϕ(z) / s^{j−1}; times s^j / √(j!)
                out[j] = (-1.0) ** j * hermite_e(j - 2, z) * dens * s / math.sqrt(math.factorial(j))
            return out
        x, w = _gh(GH_ORDER)
        vals = self(mu[..., None] + s[..., None] * x)
        for j in range(j_max + 1):
            out[j] = (vals * hermite_e(j, x)) @ w / math.sqrt(math.factorial(j))
        return out


def _relu_smoothed(mu: np.ndarray, q: np.ndarray, orders: int) -> tuple[np.ndarray, np.ndarray]:
    """Closed forms for ReLU (s = √q, z = μ/s, ϕ the standard normal density, Φ its cdf).

    E relu = μΦ + sϕ,  E relu' = Φ,  E relu^(n) = (−1)^n He_{n−2}(z) ϕ / s^{n−1} (n ≥ 2);
    E relu² = (μ² + q)Φ + μsϕ and (relu²)^(n) = 2 relu^(n−1).
    """
    s = np.sqrt(q)  # q may be un-broadcast (e.g. one value per row): keep the cheap shape
    z = mu / s
    dens = np.exp(-0.5 * z * z) * _INV_SQRT_2PI
    cdf = ndtr(z)
    sd = s * dens
    if orders == 0:
        return (mu * cdf + sd)[None], ((mu * mu + q) * cdf + mu * sd)[None]
    r = [mu * cdf + sd]
    if orders >= 1:
        r.append(cdf)
    for n in range(2, orders + 1):
        r.append((-1.0) ** n * hermite_e(n - 2, z) * dens / s ** (n - 1))
    r2 = [(mu * mu + q) * cdf + mu * sd] + [2.0 * r[n - 1] for n in range(1, orders + 1)]
    return np.stack(r), np.stack(r2)
