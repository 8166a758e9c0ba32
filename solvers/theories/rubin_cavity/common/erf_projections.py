"""The erf activation on Hermite modes: the one place where these closed forms are written.

Target modes are the probabilists' Hermite polynomials H1(z) = z and H3(z) = z³ − 3z (orthonormal
Ĥ1 = H1, Ĥ3 = H3/√6). A hidden weight ``w`` with squared norm ``q = |w|²`` and overlap
``rho = w·e`` with the teacher direction gives, for an isotropic Gaussian input (Stein's identity
of order k, ``E[F(g) He_k(z)] = rho^k E[F^(k)(g)]``)::

    E[erf(w·x) H1(z)] = 2 rho/√(π h),   E[erf(w·x) H3(z)] = −4 rho³/(√π h^(3/2)),   h = 1 + 2q.

With the prior norm ``q = σ_w² + rho²`` these are the mode vector ``a(rho) = (⟨Ĥ1 φ⟩, ⟨Ĥ3 φ⟩)``
of the equivalent-kernel closure and ``A = a aᵀ`` its mode matrix:

    A11 = (4/π) ρ²/h,   A13 = −8 ρ⁴/(√6 π h²),   A33 = 8 ρ⁶/(3π h³).

The derivatives of erf are Hermite functions (physicists' H_m), which the finite-sample kernel
expands in: ``erf^(k)(y) = (2/√π) (−1)^(k−1) H_(k−1)(y) e^(−y²)``.

Scalars stay Python floats (the saddle-point equations call these in their inner loop, where
0-d arrays would cost more than the arithmetic); arrays are evaluated elementwise.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erf

SQRT6 = math.sqrt(6.0)
SQRT_PI = math.sqrt(math.pi)
FOUR_OVER_PI = 4.0 / math.pi

Real = np.ndarray | float


def _sqrt(v: Real) -> Real:
    return math.sqrt(v) if isinstance(v, float) else np.sqrt(v)


# ---- the target ------------------------------------------------------------------------------


def h1(z: Real) -> Real:
    """H1(z) = z."""
    return z


def h3(z: Real) -> Real:
    """H3(z) = z³ − 3z."""
    return z**3 - 3.0 * z


def teacher(z: np.ndarray, epsilon: float) -> np.ndarray:
    """y = H1(z) + ε H3(z)."""
    return h1(z) + epsilon * h3(z)


# ---- projections of erf(w·x) on the target modes ------------------------------------------------


def h1_projection(rho: Real, q: Real) -> Real:
    """E[erf(w·x) H1(z)] = 2 rho/√(π (1 + 2q)) for |w|² = q, w·e = rho."""
    h = 1.0 + 2.0 * q
    return 2.0 * rho / _sqrt(math.pi * h)


def h3_projection(rho: Real, q: Real) -> Real:
    """E[erf(w·x) H3(z)] = −4 rho³/(√π (1 + 2q)^(3/2))."""
    h = 1.0 + 2.0 * q
    return -4.0 * rho**3 / (SQRT_PI * h**1.5)


def residual_projection(rho: Real, q: Real, b: float, c: float) -> Real:
    """m(rho, q) = E[r(x) erf(w·x)] for the residual r = b H1(z) + c H3(z)."""
    return b * h1_projection(rho, q) + c * h3_projection(rho, q)


def mode_vector(rho: Real, sigma_w2: float) -> tuple[Real, Real]:
    """a = (⟨Ĥ1 erf(w·x)⟩, ⟨Ĥ3 erf(w·x)⟩) for the prior norm |w|² = σ_w² + rho²."""
    q = sigma_w2 + rho * rho
    return h1_projection(rho, q), h3_projection(rho, q) / SQRT6


def mode_vector_slope(rho: float, sigma_w2: float) -> np.ndarray:
    """da/drho of :func:`mode_vector`, with h0 = 1 + 2σ_w², h = h0 + 2 rho²."""
    h0 = 1.0 + 2.0 * sigma_w2
    h = h0 + 2.0 * rho * rho
    return np.array([2.0 * h0 / (SQRT_PI * h**1.5), -12.0 * h0 * rho * rho / (SQRT_PI * h**2.5) / SQRT6])


def mode_matrix(rho: np.ndarray | float, sigma_w2: float) -> np.ndarray:
    """A(rho) = a aᵀ on an array of overlaps, shape (..., 2, 2)."""
    a1, a3 = mode_vector(np.asarray(rho, dtype=float), sigma_w2)
    return np.stack([np.stack([a1 * a1, a1 * a3], -1), np.stack([a1 * a3, a3 * a3], -1)], -2)


def mode_matrix_at(rho: float, sigma_w2: float) -> np.ndarray:
    """A(rho) at one overlap (scalar arithmetic)."""
    a1, a3 = mode_vector(float(rho), sigma_w2)
    return np.array([[a1 * a1, a1 * a3], [a1 * a3, a3 * a3]])


# ---- erf derivatives as Hermite functions -----------------------------------------------------------


def erf_hermite_functions(y: np.ndarray, K: int) -> np.ndarray:
    """Φ_k(y) for k = 0..K, shape (K + 1, *y.shape): Φ_0 = erf(y), Φ_k = erf^(k)(y)/√(k! 2^k).

    With ψ_m = H_m/√(2^m m!) (stable recurrence ψ_{m+1} = √(2/(m+1)) y ψ_m − √(m/(m+1)) ψ_{m−1}),
    erf^(k)(y)/√(k! 2^k) = (2/√π) (−1)^(k−1) ψ_{k−1}(y) e^(−y²)/√(2k): every term is O(1), so the
    high orders of the finite-sample kernel's series neither overflow nor lose precision.
    """
    out = np.empty((K + 1, *y.shape))
    out[0] = erf(y)
    g = np.exp(-y * y) * (2.0 / SQRT_PI)
    psi_prev, psi = np.zeros_like(y), np.ones_like(y)
    for k in range(1, K + 1):
        m = k - 1  # psi holds ψ_m
        out[k] = (-1.0) ** m * psi * g / math.sqrt(2.0 * k)
        psi_prev, psi = psi, math.sqrt(2.0 / (m + 1)) * y * psi - math.sqrt(m / (m + 1)) * psi_prev
    return out


def erf_derivative(k: int, y: np.ndarray) -> np.ndarray:
    """k-th derivative of erf (erf itself for k = 0), from :func:`erf_hermite_functions`."""
    y = np.asarray(y, dtype=float)
    return erf_hermite_functions(y, k)[k] * math.sqrt(math.factorial(k) * 2.0**k)
