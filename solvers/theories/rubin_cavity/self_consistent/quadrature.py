"""``mode: "self_consistent"`` at finite D: (b, c) with p(ρ) ∝ exp(−D Ŝ(ρ; b, c)) integrated by quadrature.

    M = η D ⟨A(ρ)⟩_p,   [b, √6 c] = (I + M)⁻¹ [1, √6 ε]

with a fixed composite Gauss–Legendre rule on ρ ∈ [0, ρ_max] (p is even). The rule is fixed for a
given network (nodes scale with ρ_max, which depends on the parameters but not on (b, c)), so
the residual is smooth and its Jacobian is analytic:

    ∂⟨A⟩/∂θ = −D (⟨A ∂Ŝ/∂θ⟩ − ⟨A⟩⟨∂Ŝ/∂θ⟩),  θ ∈ {b, c}.

ρ_max bounds the support a priori: Ŝ ≥ ρ²/(2σ_w²) − (u/π) max(b², (b − c)²), and the solution has
0 < b ≤ 1, |c| ≤ |ε|, so beyond ρ_max² = 2σ_w² ((u/π)(1 + |ε|)² + 40/D) the law is below e^(−40).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from solvers.core.problem import Problem
from solvers.theories.rubin_cavity.common.closure import gp_residual_b, residual_coefficients
from solvers.theories.rubin_cavity.common.erf_projections import SQRT6, mode_matrix
from solvers.theories.rubin_cavity.common.guards import guarded
from solvers.theories.rubin_cavity.common.network import Network, NetworkAt
from solvers.theories.rubin_cavity.common.overlap_law import GL_ORDER
from solvers.theories.rubin_cavity.common.potential import TAIL, OverlapPotential

#: Default panel width in Gaussian widths √(σ_w²/D) of the prior (a 16-node panel this wide integrates a
#: well of curvature up to a few 1/σ_w² to ~1e-12; checked against 4x finer rules in the tests).
PANEL_WIDTHS = 3.0
#: Cap on the panel count (an extreme spec then gets a coarser rule instead of an unbounded one).
MAX_PANELS = 4000


def rho_max(net: Network) -> float:
    return math.sqrt(2.0 * net.sigma_w2 * ((net.u / math.pi) * (1.0 + abs(net.epsilon)) ** 2 + TAIL / net.D))


def panel_count(net: Network, order: int | None = None) -> int:
    """Panels of GL_ORDER nodes, PANEL_WIDTHS prior widths wide (or ``order`` nodes in all)."""
    if order is not None:
        return max(1, order // GL_ORDER)
    width = PANEL_WIDTHS * math.sqrt(net.sigma_w2 / net.D)
    ratio = rho_max(net) / width
    return max(8, min(MAX_PANELS, math.ceil(ratio))) if math.isfinite(ratio) else MAX_PANELS


@lru_cache(maxsize=64)
def unit_rule(panels: int) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss–Legendre nodes and weights on [0, 1] (read-only; at most 1 MB per entry)."""
    x, w = np.polynomial.legendre.leggauss(GL_ORDER)
    edges = np.linspace(0.0, 1.0, panels + 1)
    half = 0.5 * np.diff(edges)[:, None]
    mid = 0.5 * (edges[1:] + edges[:-1])[:, None]
    nodes, weights = (mid + half * x).ravel(), (half * w).ravel()
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


class QuadratureRule:
    """Nodes ρ_i, weights, and the mode matrices A(ρ_i) for one network."""

    def __init__(self, net: Network, panels: int):
        x, w = unit_rule(panels)
        r = rho_max(net)
        self.rho = r * x
        self.weights = r * w
        self.A = mode_matrix(self.rho, net.sigma_w2)


def law(net: Network, rule: QuadratureRule, b: float, c: float) -> tuple[np.ndarray, OverlapPotential]:
    """Normalised quadrature masses of p(ρ) ∝ exp(−D Ŝ(ρ; b, c)) at the nodes, and the potential."""
    pot = net.potential(b, c)
    logp = -net.D * pot.value(rule.rho)
    logp -= logp.max()
    m = rule.weights * np.exp(logp)
    return m / m.sum(), pot


def fixed_point(net: Network, rule: QuadratureRule, x: np.ndarray) -> np.ndarray:
    p, _ = law(net, rule, float(x[0]), float(x[1]))
    M = net.n_eff * np.tensordot(p, rule.A, axes=1)
    return np.array(residual_coefficients(M, net.epsilon))


def jacobian(net: Network, rule: QuadratureRule, x: np.ndarray) -> np.ndarray:
    """d(G(x) − x)/dx with the analytic derivative of the quadrature average."""
    p, pot = law(net, rule, float(x[0]), float(x[1]))
    Abar = np.tensordot(p, rule.A, axes=1)
    M = net.n_eff * Abar
    inv = np.linalg.inv(np.eye(2) + M)
    bn, cn = residual_coefficients(M, net.epsilon)
    r = np.array([bn, SQRT6 * cn])
    J = np.zeros((2, 2))
    for j, dS in enumerate(pot.dF_dbc(rule.rho**2)):
        dS = np.asarray(dS)
        dAbar = -net.D * (np.tensordot(p * dS, rule.A, axes=1) - Abar * float(p @ dS))
        dr = -inv @ (net.n_eff * dAbar @ r)
        J[0, j], J[1, j] = dr[0], dr[1] / SQRT6
    return J - np.eye(2)


class RuleAt:
    """p ↦ the quadrature rule of the network at p (same panel count along a sweep, so F is smooth in p).

    Holds the rule of the last p asked for: the residual and Jacobian of one solve share it.
    """

    def __init__(self, network_at: NetworkAt, panels: int):
        self.network_at, self.panels = network_at, panels
        self._last: tuple[float, QuadratureRule] | None = None

    def __call__(self, p: float) -> QuadratureRule:
        if self._last is None or self._last[0] != p:
            self._last = (p, QuadratureRule(self.network_at(p), self.panels))
        return self._last[1]


def quadrature_problem(network_at: NetworkAt, panels: int) -> Problem:
    """The finite-D closure at the control value p, on a rule of ``panels`` panels."""
    rule_at = RuleAt(network_at, panels)

    def start_points(p: float) -> dict[str, np.ndarray]:
        net = network_at(p)
        return {"uninformative": np.array([gp_residual_b(net.eta, net.sigma_w2), net.epsilon])}

    return Problem(
        residual=None,
        fixed_point=guarded(lambda x, p: fixed_point(network_at(p), rule_at(p), x), (2,)),
        dim=2,
        starts=start_points,
        jacobian=guarded(lambda x, p: jacobian(network_at(p), rule_at(p), x), (2, 2)),
        # Local stability of the population is not defined by this closure (a non-contracting Picard map only
        # means damped iteration oscillates), so the engine is told nothing about it.
        kind="saddle",
        label=lambda x, p, start: "finite_D",
        project=lambda x: np.array([max(x[0], 1e-12), x[1]]),
        scale=np.array([1.0, 1.0]),
        names=("b", "c"),
    )
