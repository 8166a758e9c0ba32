"""The network's parameters with the theory's derived invariants, and the swept-parameter substitution.

The population theory depends on (P, T) only through P/T, on N and s_a2 only through the total
readout variance N s_a2 and u, so a sweep in the interaction strength ``u`` moves the likelihood
variance: T = P √(s_a2/(u D)) at fixed P, N, s_a2, D.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from pydantic import BaseModel

from solvers.theories.rubin_cavity.common.erf_projections import FOUR_OVER_PI
from solvers.theories.rubin_cavity.common.potential import OverlapPotential
from solvers.theories.rubin_cavity.common.tree_level_potential import TreeLevelPotential
from solvers.theories.rubin_cavity.common.variance_term import Learnability


@dataclass(frozen=True)
class Network:
    sigma_w2: float
    epsilon: float
    D: float
    N: float
    P: float
    T: float
    s_a2: float
    scaling: str = "mean_field"
    treatment: str = "cavity"

    @property
    def u(self) -> float:
        """u = P² s_a2/(T² D) = n² σ_a²/(σ⁴ d N) (paper), invariant under the (α, β) scaling."""
        return self.P**2 * self.s_a2 / (self.T**2 * self.D)

    @property
    def sigma_a2(self) -> float:
        """Total readout variance σ_a² = N s_a2."""
        return self.N * self.s_a2

    @property
    def eta(self) -> float:
        """η = n σ_a²/(σ² d) = P N s_a2/(T D); with u and σ_w² it fixes the D → ∞ theory."""
        return self.P * self.sigma_a2 / (self.T * self.D)

    @property
    def n_eff(self) -> float:
        """P/T times the total readout variance: η D, the factor multiplying the kernel in the closure."""
        return self.P * self.sigma_a2 / self.T

    @property
    def lam(self) -> float | None:
        """s_a2 P/T, the coefficient of L = 1 + λ v(q) (standard scaling only)."""
        return self.s_a2 * self.P / self.T if self.scaling == "standard" else None

    @property
    def kappa(self) -> float:
        """s_a2 P/(T D) = η/N, the coefficient of the tree-level variance term per input dimension."""
        return self.s_a2 * self.P / (self.T * self.D)

    def perpendicular_m(self, inverse_h: float) -> float:
        """m⊥ = (P/T) λ⊥ of the D − 1 linear modes x_j ⊥ e, λ⊥ = σ_a² (4/π)(σ_w²/D) ⟨1/h⟩ (prior w_j² = σ_w²/D)."""
        return self.eta * FOUR_OVER_PI * self.sigma_w2 * inverse_h

    def potential(self, b: float, c: float) -> OverlapPotential:
        """The cavity potential of this scaling (the tree level needs the learnabilities: :meth:`tree_level`)."""
        return OverlapPotential(self.sigma_w2, b, c, self.u, lam=self.lam, D=self.D)

    def tree_level(self, b: float, c: float, learned: Learnability) -> TreeLevelPotential:
        return TreeLevelPotential(self.sigma_w2, b, c, self.u, D=self.D, kappa=self.kappa, learned=learned)

    def with_u(self, u: float) -> Network:
        return replace(self, T=self.P * math.sqrt(self.s_a2 / (u * self.D)))


def network_of(spec: BaseModel, parameter: str | None = None, p: float = 0.0) -> Network:
    """The spec's network, with ``parameter`` (a field or the derived ``u``) set to ``p``."""
    net = Network(
        sigma_w2=spec.sigma_w2,  # type: ignore[attr-defined]
        epsilon=spec.epsilon,  # type: ignore[attr-defined]
        D=float(spec.D),  # type: ignore[attr-defined]
        N=float(spec.N),  # type: ignore[attr-defined]
        P=float(spec.P),  # type: ignore[attr-defined]
        T=spec.T,  # type: ignore[attr-defined]
        s_a2=spec.s_a2,  # type: ignore[attr-defined]
        scaling=spec.scaling,  # type: ignore[attr-defined]
        treatment=spec.treatment,  # type: ignore[attr-defined]
    )
    return NetworkAt(net, parameter)(p)


class NetworkAt:
    """p ↦ the network with the swept parameter (a spec field or ``u``) set to p."""

    def __init__(self, base: Network, parameter: str | None):
        self.base, self.parameter = base, parameter

    def __call__(self, p: float) -> Network:
        if not self.parameter:
            return self.base
        if self.parameter == "u":
            return self.base.with_u(p)
        return replace(self.base, **{self.parameter: float(p)})
