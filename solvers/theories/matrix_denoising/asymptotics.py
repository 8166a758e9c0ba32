"""Known limits of m_S(λ) = 1 − mmse_S(λ), used to extend the table to λ → 0 and λ → ∞.

Small λ [derived]. With Ŷ = Y/√(1+λ) (unit variance) the free cumulants of Ŷ are
ε_n = κ_n(Ŷ) = λ^{n/2} κ_n(S̃)/(1+λ)^{n/2} for n ≥ 3, a perturbation of the semicircle. Adding a free
cumulant ε_n changes the inverse Stieltjes transform by ε_n G^{n−1}, which on the support (G = e^{−iθ},
x = 2cos θ) moves the density by δρ_n = ε_n cos(nθ)/(2π sin θ). To first order ∫ρ³ changes by
3∫ρ_sc² δρ, which vanishes because ρ_sc² is a quadratic polynomial on [−2, 2] and the perturbation
leaves the moments of order ≤ 2 unchanged (also at second order). At second order only 3∫ρ_sc δρ²
survives, and by orthogonality of the cos(nθ) it is diagonal: (4π²/3)∫ρ_Ŷ³ = 1 + Σ_{n≥3} ε_n² + O(ε³).
Terms odd in the odd cumulants cannot appear (S̃ → −S̃ leaves the MMSE unchanged), so the first
cubic terms are O(λ⁵). Hence

    mmse_S(λ) = 1/(1 + λ) − Σ_{n≥3} κ_n² λ^{n−1}/(1 + λ)^{n+1} + O(λ⁴),
    m_S(λ) = λ − (1 − κ_3²) λ² + (1 − 4κ_3² + κ_4²) λ³ + O(λ⁴),

with the free cumulants of S̃, κ_n = γ^{1 − n/2} E vⁿ (κ_3 = E v³/√γ, κ_4 = E v⁴/γ). The Gaussian (GOE)
prior, all κ_{n≥3} = 0, gives back m = λ/(1 + λ). Checked against direct quadrature (remainder O(λ⁴)).

Large λ. λ·mmse_S(λ) → 2γ − γ² for γ < 1 (the number of degrees of freedom of a rank-γd symmetric
matrix, per d²/2) and → 1 for γ ≥ 1.
"""

from __future__ import annotations

from solvers.theories.matrix_denoising.readouts import law


def third_free_cumulant(gamma: float, readout: str) -> float:
    """κ_3 of the spectral law of S̃ = W^T D_v W/√(kd): E v³/√γ."""
    return law(readout).moment(3) / gamma**0.5


def fourth_free_cumulant(gamma: float, readout: str) -> float:
    """κ_4 of the spectral law of S̃: E v⁴/γ."""
    return law(readout).moment(4) / gamma


def small_lambda_coefficients(gamma: float, readout: str) -> tuple[float, float]:
    """(c₂, c₃) in m_S(λ) = λ − c₂ λ² + c₃ λ³ + O(λ⁴): c₂ = 1 − κ_3², c₃ = 1 − 4κ_3² + κ_4²."""
    k3 = third_free_cumulant(gamma, readout)
    k4 = fourth_free_cumulant(gamma, readout)
    return 1.0 - k3 * k3, 1.0 - 4.0 * k3 * k3 + k4 * k4


def small_lambda_q(gamma: float, readout: str) -> tuple[float, float]:
    """(a₂, a₃) in q(λ) = (1 + λ)·mmse_S(λ) = 1 − a₂ λ² + a₃ λ³ + O(λ⁴): a₂ = κ_3², a₃ = 3κ_3² − κ_4²."""
    k3 = third_free_cumulant(gamma, readout)
    k4 = fourth_free_cumulant(gamma, readout)
    return k3 * k3, 3.0 * k3 * k3 - k4 * k4


def large_lambda_limit(gamma: float) -> float:
    """lim λ·mmse_S(λ): 2γ − γ² for γ < 1, 1 for γ ≥ 1."""
    return 2.0 * gamma - gamma * gamma if gamma < 1.0 else 1.0
