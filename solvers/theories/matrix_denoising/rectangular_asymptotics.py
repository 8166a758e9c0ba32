"""Known limits of the rectangular mmse_X(λ) (X = A B/√k, (ηd) × d, inner dimension k = γd), used to extend its
table to λ → 0 and λ → ∞ and checked against direct quadrature in the tests.

Small λ [derived]. For any prior with white second moments (E[X_ij X_kl] = δ_ik δ_jl, entries per d²: η),
the low-SNR expansion of the Gaussian channel is mmse = 1 − λ + (1 − ½ Σκ₃²/n)λ² − (1 + Σκ₄²/(6n))λ³ + O(λ⁴),
κ₃, κ₄ the joint cumulant tensors of the n = ηd² entries. X → −X (A → −A) kills κ₃. For X = AB/√k the
only fourth cumulants that survive the sum are those of the four entries at the corners of a rectangle,
cum(X_ij, X_kj, X_kl, X_il) = 1/k (i ≠ k, j ≠ l; the second moments vanish there and the fourth moment is
Σ_a E[A_ia² A_ka²]E[B_aj² B_al²]/k² = 1/k). There are ≈ N²M²/4 such sets (N = ηd rows, M = d columns), each
with 4! orderings, so Σκ₄²/(6n) = NM/k² = η/γ², and

    mmse_X(λ) = 1 − λ + λ² − (1 + η/γ²)λ³ + O(λ⁴),     q(λ) = (1 + λ)·mmse_X = 1 − (η/γ²)λ³ + O(λ⁴).

The coefficient 1/6 of Σκ₄² is the one the symmetric table's series fixes (there the 4-cycle cumulants of
S̃ sum to 6κ₄² per entry and the λ³ term is κ₄²); a Gaussian X (γ → ∞) gives back 1/(1 + λ).

Large λ. λ·mmse_X(λ) → ρ(N + M − ρ)/(NM) with ρ = min(k, N, M): the dimension of the manifold of rank-ρ
N × M matrices per entry, each direction estimated with noise variance 1/λ (= 1 at full rank).
"""

from __future__ import annotations


def cubic_coefficient(gamma: float, eta: float) -> float:
    """C in q(λ) = (1 + λ)·mmse_X(λ) = 1 − Cλ³ + O(λ⁴): η/γ²."""
    return eta / gamma**2


def small_lambda_q(gamma: float, eta: float) -> tuple[float, float]:
    """(a₂, a₃) of q = 1 − a₂λ² + a₃λ³ + O(λ⁴), the form the table's series takes: (0, −η/γ²)."""
    return 0.0, -cubic_coefficient(gamma, eta)


def large_lambda_limit(gamma: float, eta: float) -> float:
    """lim λ·mmse_X(λ) = ρ(1 + η − ρ)/η, ρ = min(γ, η, 1) (in units of d)."""
    rank = min(gamma, eta, 1.0)
    return rank * (1.0 + eta - rank) / eta
