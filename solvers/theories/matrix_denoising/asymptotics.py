"""Known limits of m_S(λ) = 1 − mmse_S(λ), used to extend the table to λ → 0 and λ → ∞.

Small λ. With Ŷ = Y/√(1+λ) (unit variance) the free cumulants of Ŷ are κ_n(Ŷ) = λ^{n/2} κ_n(S̃)/(1+λ)^{n/2}
for n ≥ 3. To first order a cumulant perturbation changes ∫ρ³ by 3∫ρ_sc² δρ, which vanishes because ρ_sc²
is a quadratic polynomial on [−2, 2] and δρ leaves the moments of order ≤ 2 unchanged; the first
surviving term is second order in κ_3, (4π²/3)∫ρ_Ŷ³ = 1 + κ_3(Ŷ)² + O(λ⁴), hence

    mmse_S(λ) = 1/(1 + λ) − κ_3² λ² + O(λ³),     m_S(λ) = λ − (1 − κ_3²) λ² + O(λ³),

with κ_3 = κ_3(S̃) = E v³/√γ (free cumulants of S̃: κ_n = γ^{1 − n/2} E vⁿ). Symmetric readouts have
κ_3 = 0 and agree with the Gaussian (GOE) prior, m = λ/(1 + λ), to second order.

Large λ. λ·mmse_S(λ) → 2γ − γ² for γ < 1 (the number of degrees of freedom of a rank-γd symmetric
matrix, per d²/2) and → 1 for γ ≥ 1.
"""

from __future__ import annotations

from solvers.theories.matrix_denoising.readouts import law


def third_free_cumulant(gamma: float, readout: str) -> float:
    """κ_3 of the spectral law of S̃ = W^T D_v W/√(kd): E v³/√γ."""
    return law(readout).moment(3) / gamma**0.5


def small_lambda_curvature(gamma: float, readout: str) -> float:
    """c₂ in m_S(λ) = λ − c₂ λ² + O(λ³): c₂ = 1 − κ_3²."""
    return 1.0 - third_free_cumulant(gamma, readout) ** 2


def large_lambda_limit(gamma: float) -> float:
    """lim λ·mmse_S(λ): 2γ − γ² for γ < 1, 1 for γ ≥ 1."""
    return 2.0 * gamma - gamma * gamma if gamma < 1.0 else 1.0
