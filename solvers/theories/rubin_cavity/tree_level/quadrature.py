"""Tree level at finite D: the closure with p(ρ) ∝ exp(−D f(ρ)) integrated on the fixed rule of the cavity theory.

The potential depends on the kernel through the learnabilities, so the unknowns are the kernel's numbers
themselves, x = (M11, M13, M33, m⊥):

    M = η D ⟨A(ρ)⟩_p,   m⊥ = η (4/π) σ_w² ⟨1/h(ρ)⟩_p,   p ∝ exp(−D f(ρ; b, c, ℓ, ℓ⊥)),

with [b, √6 c] = (I + M)⁻¹ [1, √6 ε], ℓ = M(I + M)⁻¹, ℓ⊥ = m⊥/(1 + m⊥). The rule (nodes, A at the nodes) is
the cavity theory's :class:`~..self_consistent.quadrature.QuadratureRule`: its a-priori support bound holds
here too, since the variance term is non-negative.
"""

from __future__ import annotations

import numpy as np

from solvers.core.problem import Problem
from solvers.theories.rubin_cavity.common.closure import residual_coefficients
from solvers.theories.rubin_cavity.common.guards import guarded
from solvers.theories.rubin_cavity.common.network import Network, NetworkAt
from solvers.theories.rubin_cavity.common.tree_level_potential import TreeLevelPotential
from solvers.theories.rubin_cavity.common.variance_term import Learnability
from solvers.theories.rubin_cavity.self_consistent.quadrature import QuadratureRule, RuleAt
from solvers.theories.rubin_cavity.tree_level.saddle import matrix, nngp_start

NAMES = ("M11", "M13", "M33", "m_perp")


def potential_at(net: Network, x: np.ndarray) -> TreeLevelPotential:
    """The tree-level potential of the kernel numbers x = (M11, M13, M33, m⊥)."""
    M = matrix(x)
    b, c = residual_coefficients(M, net.epsilon)
    return net.tree_level(b, c, Learnability.of(M, float(x[3])))


def masses(pot: TreeLevelPotential, D: float, rule: QuadratureRule) -> np.ndarray:
    """Normalised masses of p(ρ) ∝ exp(−D f(ρ)) at the nodes of ``rule``."""
    logp = -D * pot.value(rule.rho)
    logp -= logp.max()
    m = rule.weights * np.exp(logp)
    return m / m.sum()


def law(net: Network, rule: QuadratureRule, x: np.ndarray) -> np.ndarray:
    return masses(potential_at(net, x), net.D, rule)


def fixed_point(net: Network, rule: QuadratureRule, x: np.ndarray) -> np.ndarray:
    p = law(net, rule, x)
    M = net.n_eff * np.tensordot(p, rule.A, axes=1)
    inverse_h = float(p @ (1.0 / (1.0 + 2.0 * (net.sigma_w2 + rule.rho**2))))
    return np.array([M[0, 0], M[0, 1], M[1, 1], net.perpendicular_m(inverse_h)])


def from_saddle(x: np.ndarray, net: Network) -> np.ndarray:
    """A start from the D → ∞ saddle point (M of the saddle, m⊥ of the centre)."""
    return np.array([x[0], x[1], x[2], nngp_start(net)[0]])


def quadrature_problem(network_at: NetworkAt, panels: int) -> Problem:
    """The finite-D tree-level closure at the control value p, on a rule of ``panels`` panels."""
    rule_at = RuleAt(network_at, panels)

    def starts(p: float) -> dict[str, np.ndarray]:
        net = network_at(p)
        m = nngp_start(net)[0]
        return {"nngp": np.array([m, 0.0, 0.0, m])}

    return Problem(
        residual=None,
        fixed_point=guarded(lambda x, p: fixed_point(network_at(p), rule_at(p), x), (4,)),
        dim=4,
        starts=starts,
        kind="saddle",
        label=lambda x, p, start: "finite_D",
        project=lambda x: np.array([max(x[0], 0.0), x[1], max(x[2], 0.0), max(x[3], 0.0)]),
        scale=np.ones(4),
        names=NAMES,
    )
