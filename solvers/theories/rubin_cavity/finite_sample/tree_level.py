"""``finite_sample`` at tree level: the self-consistency map on the data set with the variance term.

The unknowns are (b, c) and the learnabilities the variance term needs, x = (b, c, ℓ11, ℓ13, ℓ33, ℓ⊥). For a
candidate x the tree-level law p(ρ) ∝ exp(−D f(ρ; b, c, ℓ)) gives the kernel K on the training inputs
(:mod:`.kernel`), and the data give the new values:

* (b, c): the least-squares projection of r̄ = T (K + T I)⁻¹ y on [H1(z), H3(z)], as for the cavity;
* ℓ: the learnability of the sampled modes, (1/P) Eᵀ K (K + T I)⁻¹ E = (1/P)(EᵀE − T Eᵀ(K + T I)⁻¹E) with
  E = [H1(z), H3(z)/√6], and ℓ⊥ the same for the D − 1 coordinates x_j ⊥ e, averaged over j.

That is φᵀ(K + T I)⁻¹φ on the data in the equivalent-kernel expansion of :mod:`..common.variance_term`
(population values of the projections φ_k, learnabilities of the actual kernel). One Cholesky factor serves
r̄ and ℓ; the Jacobian is a forward difference from the state's own residual (six more kernels per step).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_solve

from solvers.core.newton import fd_jacobian
from solvers.core.options import SolverOptions
from solvers.core.solve import solve_at
from solvers.theories.rubin_cavity.common.erf_projections import SQRT6, h1, h3
from solvers.theories.rubin_cavity.common.network import Network, NetworkAt
from solvers.theories.rubin_cavity.common.tree_level_potential import TreeLevelPotential
from solvers.theories.rubin_cavity.common.variance_term import Learnability
from solvers.theories.rubin_cavity.finite_sample.data import draw_inputs
from solvers.theories.rubin_cavity.finite_sample.evaluator import LAW_NODES, Evaluator, State
from solvers.theories.rubin_cavity.finite_sample.kernel import gauss_rule
from solvers.theories.rubin_cavity.self_consistent.quadrature import QuadratureRule, panel_count
from solvers.theories.rubin_cavity.specs import FiniteSampleSpec
from solvers.theories.rubin_cavity.tree_level.quadrature import masses, residual_of
from solvers.theories.rubin_cavity.tree_level.quadrature import quadrature_problem as population_problem

NAMES = ("b", "c", "l11", "l13", "l33", "l_perp")


def potential_of(net: Network, x: np.ndarray) -> TreeLevelPotential:
    return net.tree_level(float(x[0]), float(x[1]), Learnability(*(float(v) for v in x[2:6])))


class TreeLevelEvaluator(Evaluator):
    """The map x ↦ G(x) on one data set; the state at the last (x, p) is kept for the Jacobian's base point."""

    def __init__(self, spec: FiniteSampleSpec, network_at: NetworkAt, options: SolverOptions):
        super().__init__(spec, network_at, options)
        z = self.data.train.z
        self.modes = np.column_stack([h1(z), h3(z) / SQRT6])
        # The coordinates ⊥ e of the same seeded inputs (the data set keeps only their Gram matrix).
        self.perp = draw_inputs(spec.P, spec.D, spec.P_test, spec.seed)[0][:, 1:]
        self._tl_state: tuple[tuple[float, ...], tuple[State, np.ndarray]] | None = None

    def tree_state(self, x: np.ndarray, p: float) -> tuple[State, np.ndarray]:
        key = (*(float(v) for v in x), float(p))
        if self._tl_state is not None and self._tl_state[0] == key:
            return self._tl_state[1]
        net = self.net(p)
        fine = QuadratureRule(net, panel_count(net, self.options.quadrature_order))
        s_nodes, w = gauss_rule(fine.rho**2, masses(potential_of(net, x), net.D, fine), LAW_NODES)
        rho = np.sqrt(np.clip(s_nodes, 0.0, None))
        chol, rbar = self.regression(net, rho, w)
        P = self.modes.shape[0]
        E = self.modes
        ell = (E.T @ E - net.T * E.T @ cho_solve(chol, E, check_finite=False)) / P
        if self.perp.shape[1]:
            X = self.perp
            trace = float(np.sum(X * X)) - net.T * float(np.sum(X * cho_solve(chol, X, check_finite=False)))
            ell_perp = trace / (P * X.shape[1])
        else:
            ell_perp = 0.0
        bc = self.proj @ rbar
        G = np.array([bc[0], bc[1], ell[0, 0], ell[0, 1], ell[1, 1], ell_perp])
        empty = np.zeros(0)
        st = State(np.array(key[:2]), rho, w, empty, empty, chol, rbar, G[:2])
        self._tl_state = (key, (st, G))
        return st, G

    def state(self, x: np.ndarray, p: float) -> State:
        return self.tree_state(x, p)[0]

    def fixed_point(self, x: np.ndarray, p: float) -> np.ndarray:
        return self.tree_state(x, p)[1]

    def jacobian(self, x: np.ndarray, p: float) -> np.ndarray:
        f0 = self.tree_state(x, p)[1] - x
        return fd_jacobian(lambda y: self.tree_state(y, p)[1] - y, np.asarray(x, dtype=float), f0, central=False)


def population_start(net: Network, options: SolverOptions) -> np.ndarray:
    """The finite-D population solution at tree level, as (b, c, ℓ, ℓ⊥)."""
    problem = population_problem(NetworkAt(net, None), panel_count(net, options.quadrature_order))
    x0 = problem.starts(0.0)["nngp"]
    res = solve_at(problem, 0.0, x0, options.model_copy(update={"method": "newton"}))
    ell = Learnability(*(float(v) for v in (res.x if res.converged else x0)))
    return np.array([*residual_of(ell, net.epsilon), *ell.as_tuple()])
