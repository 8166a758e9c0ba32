"""Automatic relevance determination of the input coordinates (MF-ARD).

Every input coordinate j has a prior precision ρ_j shared by all N hidden units, w_ij ~ N(0, 1/ρ_j),
with a Gamma(α₀, β₀) hyperprior (shape α₀, rate β₀). Each of the N units contributes one Gaussian
observation of w_j, so given the units' second moments m_j = ⟨w_j²⟩ the posterior of ρ_j is
Gamma(α₀ + N/2, β₀ + N m_j/2). The fixed point used here (``update: "mean"``) is its mean,

    ρ_j = (α₀ + N/2) / (β₀ + N m_j / 2),

and ``update: "map"`` its mode (α₀ − 1 + N/2 in the numerator). Both are the stationary points of

    F(q, ρ) = N·KL(q ‖ N(0, diag ρ⁻¹)) + (data terms) + Σ_j [β₀ ρ_j − a log ρ_j],

with a = α₀ (mean) or α₀ − 1 (map): the map form is the joint MAP objective of the Gamma(α₀, β₀)
hyperprior, the mean form that of Gamma(α₀ + 1, β₀). With β₀ = α₀ σ_w²/d (the default) an isotropic
second moment m_j = σ_w²/d returns ρ_j = d/σ_w² exactly for the mean form: no data, no selection.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ARD:
    """Hyperprior Gamma(α₀, β₀), the fixed-point form, and the EMA weight of the particle iteration."""

    alpha0: float
    beta0: float
    N: float
    update: str = "mean"
    ema: float = 0.1

    @property
    def shape(self) -> float:
        """a in the objective: α₀ for the posterior-mean update, α₀ − 1 for the MAP update."""
        return self.alpha0 if self.update == "mean" else self.alpha0 - 1.0

    def precision(self, second_moment: np.ndarray | float) -> np.ndarray | float:
        """ρ_j from the units' second moments m_j = ⟨w_j²⟩."""
        return (self.shape + 0.5 * self.N) / (self.beta0 + 0.5 * self.N * np.asarray(second_moment))

    def objective(self, rho: np.ndarray | float) -> np.ndarray | float:
        """β₀ ρ − a log ρ per coordinate (its hyperprior part of F)."""
        rho = np.asarray(rho)
        return self.beta0 * rho - self.shape * np.log(rho)

    def ema_step(self, rho: np.ndarray, second_moment: np.ndarray) -> np.ndarray:
        """ρ ← (1 − η) ρ + η ρ_new (the particle iteration's damping)."""
        return (1.0 - self.ema) * rho + self.ema * self.precision(second_moment)
