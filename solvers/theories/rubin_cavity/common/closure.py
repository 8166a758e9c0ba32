"""The equivalent-kernel closure in the target modes (paper App. A.3, with its two corrections).

In the orthonormal basis Ĥ1 = H1, Ĥ3 = H3/√6 the adapted kernel restricted to the target modes is
Q̃ = σ_a² E_p(ρ)[A(ρ)] with A = a aᵀ the mode matrix of :mod:`.erf_projections`,

    A11 = (4/π) ρ²/h,   A13 = −8 ρ⁴/(√6 π h²),   A33 = 8 ρ⁶/(3π h³),   h = 1 + 2(σ_w² + ρ²).

The paper prints 2/π in A11; the square of ⟨Ĥ1 φ⟩ gives 4/π (checked against Monte Carlo in the
tests). The discrepancy follows from the EK predictor f̄ = Q̃ (Q̃ + σ²/n)⁻¹ y:

    [b, √6 c] = (σ²/n) [Q̃ + (σ²/n) I]⁻¹ [1, √6 ε] = [I + (n/σ²) Q̃]⁻¹ [1, √6 ε],

where A.12 drops the σ²/n prefactor; with it, Q̃ = 0 (nothing learned) gives b = 1, c = ε.
"""

from __future__ import annotations

import math

import numpy as np

from solvers.theories.rubin_cavity.common.erf_projections import FOUR_OVER_PI, SQRT6

EPS = float(np.finfo(float).eps)


def residual_coefficients(M: np.ndarray, epsilon: float) -> tuple[float, float]:
    """(b, c) from [b, √6 c] = (I + M)⁻¹ [1, √6 ε], M = (n/σ²) Q̃ (dimensionless, symmetric PSD).

    Solved by Cramer's rule (no LAPACK overhead in the hot loop). det(I + M) = 1 + tr M + det M >= 1 for PSD M,
    but written as (1 + M11)(1 + M33) − M13² it cancels to 0 once the entries pass ~1e8 (a tiny T), a division by
    zero. So it is summed term by term, with a det M below its own rounding error taken as 0. Entries that
    overflow give (nan, nan): the engine rejects such an iterate, and a solve that ends there is not converged.
    (M is PSD at a solution; the Jacobians' finite differences also probe it elsewhere, hence no clipping.)
    """
    m11, o, m33 = float(M[0, 0]), float(M[0, 1]), float(M[1, 1])
    a, d = 1.0 + m11, 1.0 + m33
    y1, y3 = 1.0, SQRT6 * epsilon
    product, cross = m11 * m33, o * o
    det_m = product - cross
    if abs(det_m) <= 4.0 * EPS * (abs(product) + cross):
        det_m = 0.0
    det = 1.0 + m11 + m33 + det_m
    if not math.isfinite(det) or det == 0.0:
        return math.nan, math.nan
    return (d * y1 - o * y3) / det, (a * y3 - o * y1) / det / SQRT6


def gp_residual_b(eta: float, sigma_w2: float) -> float:
    """b of the GP limit (u → 0, the prior kernel): 1/(1 + η (4/π) σ_w²/(1 + 2σ_w²)); there c = ε."""
    return 1.0 / (1.0 + eta * FOUR_OVER_PI * sigma_w2 / (1.0 + 2.0 * sigma_w2))


def nngp_eigenvalues(sigma_w2: float, D: float, sigma_a2: float) -> tuple[float, float]:
    """Leading-order NNGP kernel eigenvalues on Ĥ1 and Ĥ3 for w ~ N(0, σ_w²/D I).

    λ1 = σ_a² (4/π) σ_w²/(D (1 + 2σ_w²)),  λ3 = σ_a² (40/π) σ_w⁶/(D³ (1 + 2σ_w²)³)
    (λ3 = σ_a² (8/3π) E[ρ⁶]/(1 + 2σ_w²)³ with E[ρ⁶] = 15 (σ_w²/D)³).
    """
    h0 = 1.0 + 2.0 * sigma_w2
    lam1 = sigma_a2 * (4.0 / math.pi) * sigma_w2 / (D * h0)
    lam3 = sigma_a2 * (40.0 / math.pi) * sigma_w2**3 / (D**3 * h0**3)
    return lam1, lam3
