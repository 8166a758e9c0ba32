"""The overlap potential of one neuron at tree level (Rubin et al. 2025), per input dimension.

The tree-level weight law p(w) ∝ p0(w) exp{(s_a2/2)[(φᵀt̄)² − φᵀ(K + T)⁻¹φ]} reduces, with the population
replacement φᵀt̄ = P m(ρ)/T of the cavity derivation and the variance term of :mod:`.variance_term`, to

    f(ρ) = ρ²/(2σ_w²) − (2u/π) g(t) + (κ/2) V(ρ²; ℓ),      κ = s_a2 P/(T D) = η/N,

the mean-field reduced action (paper eq. 13) plus the (K + T)⁻¹ variance term. The directional term is
O(u) = O(χ) and the variance term O(κ) = O(χ⁰) under s_a2 = g/(χN), T = T̃/χ: at χ = N (mean-field scaling)
the variance term is down by 1/N and f is the paper's Ŝ. Unlike the cavity forms, f depends on the kernel
through the learnabilities ℓ, which the closure determines together with (b, c).

V is smooth but not polynomial, so the stationary points come from a sign scan of F'(s) with brentq, as
for the standard-scaling cavity form.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solvers.theories.rubin_cavity.common.potential import OverlapPotential
from solvers.theories.rubin_cavity.common.variance_term import Learnability, variance

#: Points of the sign scan for stationary points (uniform in ρ on [0, √s_max]).
SCAN_POINTS = 4000


@dataclass(frozen=True)
class TreeLevelPotential(OverlapPotential):
    """f(ρ) of the tree level: the mean-field form (``lam`` None) plus (κ/2) V(ρ²; ℓ)."""

    kappa: float = 0.0
    learned: Learnability = field(default_factory=Learnability)

    def F(self, s: np.ndarray | float) -> np.ndarray:
        return super().F(s) + 0.5 * self.kappa * variance(s, self.sigma_w2, self.learned, 0)

    def dF(self, s: np.ndarray | float) -> np.ndarray:
        return super().dF(s) + 0.5 * self.kappa * variance(s, self.sigma_w2, self.learned, 1)

    def d2F(self, s: np.ndarray | float) -> np.ndarray:
        return super().d2F(s) + 0.5 * self.kappa * variance(s, self.sigma_w2, self.learned, 2)

    def variance_term(self, s: np.ndarray | float) -> np.ndarray:
        """V(s): s_a2 φᵀ(K + T)⁻¹φ = λ V = κ D V, the quantity tree level keeps to first order."""
        return np.asarray(variance(s, self.sigma_w2, self.learned, 0))

    def _positive_roots(self) -> list[float]:
        return self._scan_roots(SCAN_POINTS)
