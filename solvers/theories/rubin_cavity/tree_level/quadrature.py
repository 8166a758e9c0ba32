"""Tree level at finite D: the closure with p(ρ) ∝ exp(−D f(ρ)) integrated on the fixed rule of the cavity theory.

The potential depends on the kernel through the learnabilities, so the unknowns are the learnabilities
themselves, x = (ℓ11, ℓ13, ℓ33, ℓ⊥): with p ∝ exp(−D f(ρ; b, c, ℓ)),

    M = η D ⟨A(ρ)⟩_p,   m⊥ = η (4/π) σ_w² ⟨1/h(ρ)⟩_p,   ℓ = M(I + M)⁻¹,   ℓ⊥ = m⊥/(1 + m⊥),

and the residual (b, c) follow from [b, √6 c] = (I + M)⁻¹ [1, √6 ε] = (I − ℓ)[1, √6 ε]. Learnabilities lie in
[0, 1) however large the kernel (M = η D ⟨A⟩ reaches the thousands at large D once an aligned well is populated),
which keeps Newton's steps well scaled. The rule (nodes, A at the nodes) is the cavity theory's
:class:`~..self_consistent.quadrature.QuadratureRule`: its a-priori support bound holds here too, since the
variance term is non-negative.
"""

from __future__ import annotations

import numpy as np

from solvers.core.problem import Problem
from solvers.theories.rubin_cavity.common.erf_projections import SQRT6
from solvers.theories.rubin_cavity.common.guards import guarded
from solvers.theories.rubin_cavity.common.network import Network, NetworkAt
from solvers.theories.rubin_cavity.common.tree_level_potential import TreeLevelPotential
from solvers.theories.rubin_cavity.common.variance_term import Learnability
from solvers.theories.rubin_cavity.self_consistent.quadrature import QuadratureRule, RuleAt
from solvers.theories.rubin_cavity.tree_level.saddle import matrix, nngp_start

NAMES = ("l11", "l13", "l33", "l_perp")


def residual_of(ell: Learnability, epsilon: float) -> tuple[float, float]:
    """(b, c) from [b, √6 c] = (I − ℓ)[1, √6 ε]."""
    return 1.0 - ell.l11 - ell.l13 * SQRT6 * epsilon, -ell.l13 / SQRT6 + (1.0 - ell.l33) * epsilon


def potential_at(net: Network, x: np.ndarray) -> TreeLevelPotential:
    """The tree-level potential of the learnabilities x = (ℓ11, ℓ13, ℓ33, ℓ⊥)."""
    ell = Learnability(*(float(v) for v in x[:4]))
    return net.tree_level(*residual_of(ell, net.epsilon), ell)


def masses(pot: TreeLevelPotential, D: float, rule: QuadratureRule) -> np.ndarray:
    """Normalised masses of p(ρ) ∝ exp(−D f(ρ)) at the nodes of ``rule``."""
    logp = -D * pot.value(rule.rho)
    logp -= logp.max()
    m = rule.weights * np.exp(logp)
    return m / m.sum()


def kernel_numbers(net: Network, rule: QuadratureRule, p: np.ndarray) -> tuple[np.ndarray, float]:
    """M = η D ⟨A⟩ and m⊥ = η (4/π) σ_w² ⟨1/h⟩ under the masses ``p``."""
    inverse_h = float(p @ (1.0 / (1.0 + 2.0 * (net.sigma_w2 + rule.rho**2))))
    return net.n_eff * np.tensordot(p, rule.A, axes=1), net.perpendicular_m(inverse_h)


def fixed_point(net: Network, rule: QuadratureRule, x: np.ndarray) -> np.ndarray:
    M, m_perp = kernel_numbers(net, rule, masses(potential_at(net, x), net.D, rule))
    return np.array(Learnability.of(M, m_perp).as_tuple())


def from_saddle(x: np.ndarray, net: Network) -> np.ndarray:
    """A start from the D → ∞ saddle point (its M; m⊥ of the centre)."""
    return np.array(Learnability.of(matrix(x), nngp_start(net)[0]).as_tuple())


def quadrature_problem(network_at: NetworkAt, panels: int) -> Problem:
    """The finite-D tree-level closure at the control value p, on a rule of ``panels`` panels."""
    rule_at = RuleAt(network_at, panels)

    def starts(p: float) -> dict[str, np.ndarray]:
        m = nngp_start(network_at(p))[0]
        return {"nngp": np.array(Learnability.of(np.diag([m, 0.0]), m).as_tuple())}

    return Problem(
        residual=None,
        fixed_point=guarded(lambda x, p: fixed_point(network_at(p), rule_at(p), x), (4,)),
        dim=4,
        starts=starts,
        kind="saddle",
        label=lambda x, p, start: "finite_D",
        project=lambda x: np.array([min(max(x[0], 0.0), 1.0), x[1], min(max(x[2], 0.0), 1.0),
                                    min(max(x[3], 0.0), 1.0)]),
        scale=np.ones(4),
        names=NAMES,
    )
