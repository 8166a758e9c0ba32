"""Activations as the theory sees them: μ0, μ1, μ2, E σ² and the higher-order covariance g(q).

For standard Gaussians u, u' with correlation q (probabilists' Hermite convention, μ_l = E[σ(z) He_l(z)])

    E[σ(u) σ(u')] = μ0² + μ1² q + μ2² q²/2 + g(q),      g(q) = Σ_{l≥3} μ_l² q^l / l!.

Closed forms are used where they exist (ReLU, sign, erf, polynomials, Hermite lists); tanh, tanh(2x)
and ELU use a Mehler series of 200 normalised coefficients computed once by fixed quadrature, with the
(tiny) tail mass added as one extra power so that g(1) = E σ² − μ0² − μ1² − μ2²/2 holds exactly: at
perfect specialisation ε* = g(1) − g(Q = 1) must vanish, not come out as a truncation residue.

Named variants: ``tanh2`` = tanh(2x); ``he2`` = He2/√2 = (x² − 1)/√2; ``he3`` = He3/√6 (g(q) = q³);
``he2_he3`` = He2/√2 + He3/6 (g(q) = q³/6); ``quadratic`` = x² (μ0 = 1, μ2 = 2, g ≡ 0).
Options: ``remove_linear`` subtracts μ1·x; ``unit_variance`` then divides by √(E σ²).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from math import factorial

import numpy as np

from solvers.numerics.hermite import PowerSeries, normalized_coefficients, second_moment

Fn = Callable[[np.ndarray], np.ndarray]

#: Number of Mehler coefficients for activations without a closed-form covariance.
SERIES_ORDER = 200
#: Quadrature nodes per half-line for the coefficients.
COEFFICIENT_ORDER = 800

NAMES: tuple[str, ...] = ("relu", "tanh", "tanh2", "erf", "sign", "quadratic", "he2", "he3", "he2_he3", "elu")


@dataclass(frozen=True)
class Activation:
    """σ reduced to what the replica equations need.

    ``scale`` multiplies σ (so g by scale²); the μ's and ``second_moment`` already include it.
    """

    label: str
    mu0: float
    mu1: float
    mu2: float
    second_moment: float
    g_raw: Fn
    dg_raw: Fn
    #: g_raw(1), computed once (the maps need g(1) at every evaluation).
    g1_raw: float
    d2g_raw: Fn
    scale: float = 1.0
    #: Leading Hermite coefficients μ0.. (for reporting; scaled).
    leading: tuple[float, ...] = ()

    def g(self, q: np.ndarray | float) -> np.ndarray:
        """Σ_{l≥3} μ_l² q^l / l! (q clipped to [−1, 1])."""
        return self.scale**2 * self.g_raw(np.clip(np.asarray(q, dtype=float), -1.0, 1.0))

    def dg(self, q: np.ndarray | float) -> np.ndarray:
        """g'(q)."""
        return self.scale**2 * self.dg_raw(np.clip(np.asarray(q, dtype=float), -1.0, 1.0))

    def g_and_dg(self, q: float) -> tuple[float, float]:
        """(g(q), g'(q)) for a scalar q, sharing the work where the covariance is a power series."""
        q = min(max(float(q), -1.0), 1.0)
        s2 = self.scale**2
        both = getattr(self.g_raw, "with_derivative", None)
        if both is not None:
            g, dg = both(np.float64(q))
            return s2 * float(g), s2 * float(dg)
        return s2 * float(self.g_raw(np.float64(q))), s2 * float(self.dg_raw(np.float64(q)))

    def g_and_derivatives(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(g, g', g'') at an array of q, sharing the powers where the covariance is a series from l = 3."""
        qc = np.clip(np.asarray(q, dtype=float), -1.0, 1.0)
        s2 = self.scale**2
        series = getattr(self.g_raw, "with_two_derivatives", None)
        if series is not None and float(np.min(self.g_raw.powers, initial=3.0)) >= 2.0:
            g, dg, d2g = series(qc)
            return s2 * g, s2 * dg, s2 * d2g
        return s2 * self.g_raw(qc), s2 * self.dg_raw(qc), s2 * self.d2g_raw(qc)

    def d2g(self, q: np.ndarray | float) -> np.ndarray:
        """g''(q) (for analytic Jacobians)."""
        return self.scale**2 * self.d2g_raw(np.clip(np.asarray(q, dtype=float), -1.0, 1.0))

    @property
    def g1(self) -> float:
        """g(1) = E σ² − μ0² − μ1² − μ2²/2: the part no quadratic-order learning can capture."""
        return float(self.scale**2 * self.g1_raw)

    @property
    def has_higher_orders(self) -> bool:
        """False when σ is a polynomial of degree ≤ 2 (g ≡ 0): no specialisation drive."""
        return self.g1 > 1e-14

    def without_linear(self) -> Activation:
        """σ(x) − μ1·x."""
        lead = list(self.leading)
        if len(lead) > 1:
            lead[1] = 0.0
        return replace(self, label=self.label, mu1=0.0, second_moment=self.second_moment - self.mu1**2,
                       leading=tuple(lead))

    def normalized(self) -> Activation:
        """σ / √(E σ²)."""
        s = 1.0 / np.sqrt(self.second_moment)
        return replace(self, mu0=self.mu0 * s, mu1=self.mu1 * s, mu2=self.mu2 * s, second_moment=1.0,
                       scale=self.scale * s, leading=tuple(m * s for m in self.leading))


# ---- closed forms -------------------------------------------------------------------------------
INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)


def _relu() -> Activation:
    def g(q: np.ndarray) -> np.ndarray:
        return (np.sqrt(np.maximum(1.0 - q**2, 0.0)) + q * np.arcsin(q) - 1.0) / (2 * np.pi) - q**2 / (4 * np.pi)

    def dg(q: np.ndarray) -> np.ndarray:
        return (np.arcsin(q) - q) / (2 * np.pi)

    def d2g(q: np.ndarray) -> np.ndarray:
        return (1.0 / np.sqrt(np.maximum(1.0 - q**2, 1e-300)) - 1.0) / (2 * np.pi)

    # μ_l = φ(0) He_{l−2}(0) for l ≥ 2: 1/√(2π), 0, −1/√(2π), ...
    lead = (INV_SQRT_2PI, 0.5, INV_SQRT_2PI, 0.0, -INV_SQRT_2PI)
    return Activation("relu", INV_SQRT_2PI, 0.5, INV_SQRT_2PI, 0.5, g, dg, float(g(np.float64(1.0))), d2g, leading=lead)


def _sign() -> Activation:
    mu1 = np.sqrt(2.0 / np.pi)

    def g(q: np.ndarray) -> np.ndarray:
        return (2.0 / np.pi) * (np.arcsin(q) - q)

    def dg(q: np.ndarray) -> np.ndarray:
        return (2.0 / np.pi) * (1.0 / np.sqrt(np.maximum(1.0 - q**2, 1e-300)) - 1.0)

    def d2g(q: np.ndarray) -> np.ndarray:
        return (2.0 / np.pi) * q / np.maximum(1.0 - q**2, 1e-300) ** 1.5

    return Activation("sign", 0.0, mu1, 0.0, 1.0, g, dg, float(g(np.float64(1.0))), d2g,
                      leading=(0.0, mu1, 0.0, -mu1))


def _erf() -> Activation:
    # erf(a x) with a = 1: E[erf(au) erf(au')] = (2/π) arcsin(2a² q / (1 + 2a²)).
    k = 2.0 / 3.0
    mu1 = 2.0 / np.sqrt(3.0 * np.pi)

    def g(q: np.ndarray) -> np.ndarray:
        return (2.0 / np.pi) * np.arcsin(k * q) - mu1**2 * q

    def dg(q: np.ndarray) -> np.ndarray:
        return (2.0 / np.pi) * k / np.sqrt(1.0 - (k * q) ** 2) - mu1**2

    def d2g(q: np.ndarray) -> np.ndarray:
        return (2.0 / np.pi) * k**3 * q / (1.0 - (k * q) ** 2) ** 1.5

    m2 = (2.0 / np.pi) * np.arcsin(k)
    mu3 = -mu1 * 2.0 / 3.0  # d³/dx³ erf(x) averaged: E[erf'''(z)] = −(2/3)·μ1
    return Activation("erf", 0.0, mu1, 0.0, m2, g, dg, float(g(np.float64(1.0))), d2g,
                      leading=(0.0, mu1, 0.0, mu3))


def polynomial_activation(label: str, mu: Sequence[float]) -> Activation:
    """σ = Σ_l (μ_l / l!) He_l from its Hermite coefficients: g(q) = Σ_{l≥3} μ_l² q^l / l! exactly."""
    mu = np.asarray(mu, dtype=float)
    c2 = np.array([mu[l] ** 2 / factorial(l) for l in range(mu.size)])
    padded = np.concatenate([mu, np.zeros(max(0, 3 - mu.size))])
    series = PowerSeries(c2, start=3)
    return Activation(label, float(padded[0]), float(padded[1]), float(padded[2]), float(c2.sum()), series,
                      series.derivative, float(np.sum(c2[3:])), series.second_derivative,
                      leading=tuple(float(m) for m in np.concatenate([mu, np.zeros(5)])[:5]))


def series_activation(label: str, f: Fn) -> Activation:
    """Mehler series from fixed-quadrature coefficients, tail mass folded into one extra power."""
    c = normalized_coefficients(f, SERIES_ORDER, COEFFICIENT_ORDER)
    # Coefficients that vanish by symmetry (odd/even σ) come out at round-off level; make them exact zeros
    # so that, e.g., μ2 = 0 switches the quadratic channel off instead of leaving it at 1e-34.
    c[np.abs(c) < 1e-12] = 0.0
    m2 = second_moment(f, COEFFICIENT_ORDER)
    c2 = np.concatenate([c**2, [0.0]])
    c2[-1] = max(m2 - float(np.sum(c**2)), 0.0)  # tail Σ_{l>N} c_l², carried by q^{N+1}
    fact = np.sqrt([float(factorial(l)) for l in range(5)])
    series = PowerSeries(c2, start=3)
    return Activation(label, float(c[0]), float(c[1]), float(c[2] * np.sqrt(2.0)), m2, series, series.derivative,
                      float(np.sum(c2[3:])), series.second_derivative, leading=tuple(float(x) for x in c[:5] * fact))


def _elu(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)))


@cache
def named(name: str) -> Activation:
    """The activation called ``name`` (one of :data:`NAMES`)."""
    if name == "relu":
        return _relu()
    if name == "sign":
        return _sign()
    if name == "erf":
        return _erf()
    if name == "quadratic":
        return polynomial_activation("quadratic", [1.0, 0.0, 2.0])
    if name == "he2":
        return polynomial_activation("he2", [0.0, 0.0, np.sqrt(2.0)])
    if name == "he3":
        return polynomial_activation("he3", [0.0, 0.0, 0.0, np.sqrt(6.0)])
    if name == "he2_he3":
        return polynomial_activation("he2_he3", [0.0, 0.0, np.sqrt(2.0), 1.0])
    if name == "tanh":
        return series_activation("tanh", np.tanh)
    if name == "tanh2":
        return series_activation("tanh2", lambda x: np.tanh(2.0 * x))
    if name == "elu":
        return series_activation("elu", _elu)
    raise KeyError(name)


def build(name: str | None = None, *, hermite: Sequence[float] | None = None, remove_linear: bool = False,
          unit_variance: bool = False) -> Activation:
    """An activation by name (with options) or from a Hermite coefficient list."""
    act = polynomial_activation("hermite", hermite) if hermite is not None else named(str(name))
    if remove_linear:
        act = act.without_linear()
    if unit_variance:
        act = act.normalized()
    return act

