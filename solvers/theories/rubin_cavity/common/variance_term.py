"""The tree-level variance (Onsager) term φ(w)ᵀ(K + T I)⁻¹φ(w) of one hidden neuron, in the equivalent-kernel form.

On P samples the kernel K acts on the sampled mode functions e_k as P λ_k, so (K + T)⁻¹ gives each mode
P/(P λ_k + T) = (P/T)(1 − ℓ_k), ℓ_k = P λ_k/(P λ_k + T) the mode's learnability. The feature φ(w) = erf(w·x)
has squared projections φ_k² summing to v(q) = E[φ²], so

    s_a2 φᵀ(K + T)⁻¹φ = λ V,   λ = s_a2 P/T,   V = v(q) − Σ_k ℓ_k φ_k².

Only the modes the kernel has learned (ℓ_k not ≈ 0) enter the sum: the target modes Ĥ1, Ĥ3 (a 2 × 2 block
ℓ = M(I + M)⁻¹ with M = (P/T) Q̃, projections a = (a1, a3) of erf_projections) and the D − 1 linear modes
x_j ⊥ e (one learnability ℓ⊥, squared projections summing to (4/π) σ_w²/h). Written in s = ρ² with the
reduction's norm q = σ_w² + s, h = 1 + 2q = h0 + 2s:

    V(s) = v(q) − ℓ11 A11 − 2 ℓ13 A13 − ℓ33 A33 − ℓ⊥ (4/π) σ_w²/h,
    A11 = (4/π) s/h,   A13 = −8 s²/(√6 π h²),   A33 = 8 s³/(3π h³)          (A = a aᵀ)

Every term of the sum is at most its share of v, so 0 ≤ V ≤ v. The values of A come from
:func:`..erf_projections.mode_matrix`; here are their s-derivatives, which the potential's stationary points need.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solvers.theories.rubin_cavity.common.erf_moments import erf_variance, erf_variance_prime, erf_variance_second
from solvers.theories.rubin_cavity.common.erf_projections import FOUR_OVER_PI, SQRT6

Real = np.ndarray | float

_C13 = -8.0 / (SQRT6 * math.pi)
_C33 = 8.0 / (3.0 * math.pi)


@dataclass(frozen=True)
class Learnability:
    """ℓ of the learned modes: the 2 × 2 target block (ℓ11, ℓ13, ℓ33) and the perpendicular linear modes ℓ⊥."""

    l11: float = 0.0
    l13: float = 0.0
    l33: float = 0.0
    perp: float = 0.0

    @classmethod
    def of(cls, M: np.ndarray, m_perp: float) -> Learnability:
        """From M = (P/T) Q̃ on the target modes and m⊥ = (P/T) λ⊥: ℓ = M(I + M)⁻¹ = I − (I + M)⁻¹."""
        a, o, d = 1.0 + float(M[0, 0]), float(M[0, 1]), 1.0 + float(M[1, 1])
        det = a * d - o * o
        return cls(1.0 - d / det, o / det, 1.0 - a / det, m_perp / (1.0 + m_perp))

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.l11, self.l13, self.l33, self.perp)


def mode_terms(s: Real, sigma_w2: float, order: int = 0) -> tuple[Real, Real, Real, Real]:
    """(A11, 2 A13, A33, a⊥²) (order 0) or their first (1) or second (2) s-derivative, a⊥² = (4/π) σ_w²/h."""
    h0 = 1.0 + 2.0 * sigma_w2
    h = h0 + 2.0 * s
    # In t = s/h < 1/2 and w = 1/h <= 1/h0, never powers of h or s: h**3 of a plain float raises OverflowError once
    # s passes ~1e102 (the far tail of a deep potential), where these terms are only bounded.
    t, w = s / h, 1.0 / h
    if order == 0:
        return FOUR_OVER_PI * t, 2.0 * _C13 * t * t, _C33 * t * t * t, FOUR_OVER_PI * sigma_w2 * w
    w2 = w * w
    if order == 1:
        return (
            FOUR_OVER_PI * h0 * w2,
            4.0 * _C13 * h0 * t * w2,
            3.0 * _C33 * h0 * t * t * w2,
            -2.0 * FOUR_OVER_PI * sigma_w2 * w2,
        )
    w3 = w2 * w
    return (
        -4.0 * FOUR_OVER_PI * h0 * w3,
        4.0 * _C13 * h0 * (h0 * w - 4.0 * t) * w3,
        6.0 * _C33 * h0 * t * (h0 * w - 2.0 * t) * w3,
        8.0 * FOUR_OVER_PI * sigma_w2 * w3,
    )


def _v(q: Real, order: int) -> Real:
    """v(q), v'(q), v''(q); plain floats stay floats (the root polish calls this in a scalar loop)."""
    if not isinstance(q, float):
        return (erf_variance, erf_variance_prime, erf_variance_second)[order](q)
    a = 1.0 + 2.0 * q
    if order == 0:
        return (2.0 / math.pi) * math.asin(2.0 * q / a)
    r = math.sqrt(1.0 + 4.0 * q)
    if order == 1:
        return FOUR_OVER_PI / (a * r)
    return FOUR_OVER_PI * (-2.0 / (a * a * r) - 2.0 / (a * r * r * r))


def variance(s: Real, sigma_w2: float, ell: Learnability, order: int = 0) -> Real:
    """V(s) (order 0), V'(s) (1) or V''(s) (2)."""
    terms = mode_terms(s, sigma_w2, order)
    return _v(sigma_w2 + s, order) - (
        ell.l11 * terms[0] + ell.l13 * terms[1] + ell.l33 * terms[2] + ell.perp * terms[3]
    )
