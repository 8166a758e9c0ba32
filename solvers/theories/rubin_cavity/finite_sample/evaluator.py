"""The self-consistency map of ``finite_sample`` on one data set: G(b, c), its Jacobian, the test prediction.

For a candidate residual (b, c): the overlap law p(ρ) ∝ exp(−D f(ρ; b, c)) gives the adaptive kernel
K(b, c) on the P training inputs (:mod:`.kernel`); kernel regression gives the mean residual
r̄ = T (K + T I)⁻¹ y; its least-squares projection on the sampled [H1(z), H3(z)] (their sample
correlation is not zero) gives new coefficients G(b, c). The engine solves G(b, c) = (b, c) with
Newton and the analytic Jacobian dr̄ = −(K + T I)⁻¹ dK r̄, where dK is the kernel of the derivative
of the law (same Gauss nodes, signed weights). One Cholesky factor serves the residual and both
Jacobian columns; the state at the last (b, c, p) is kept so the residual and Jacobian calls of one
Newton step share it. An evaluator belongs to one bound problem: nothing in it is shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from solvers.core.options import SolverOptions
from solvers.core.solve import solve_at
from solvers.theories.rubin_cavity.common.closure import gp_residual_b
from solvers.theories.rubin_cavity.common.erf_projections import h1, h3, teacher
from solvers.theories.rubin_cavity.common.network import Network, NetworkAt, network_of
from solvers.theories.rubin_cavity.finite_sample.data import Data, sample
from solvers.theories.rubin_cavity.finite_sample.kernel import KernelGeometry, gauss_rule, geometry, kernels
from solvers.theories.rubin_cavity.self_consistent.quadrature import (
    QuadratureRule,
    law,
    panel_count,
    quadrature_problem,
)
from solvers.theories.rubin_cavity.specs import FiniteSampleSpec

#: Gauss nodes of the overlap law in s = ρ² used by the kernel (checked against twice as many in the tests).
LAW_NODES = 12


@dataclass(frozen=True)
class State:
    x: np.ndarray
    rho_nodes: np.ndarray  # ρ at the Gauss nodes of the law
    weights: np.ndarray
    weights_db: np.ndarray
    weights_dc: np.ndarray
    chol: Any
    rbar: np.ndarray
    G: np.ndarray  # new (b, c)


class Evaluator:
    """G(b, c) and its Jacobian on one data set, for the network at the control value p."""

    def __init__(self, spec: FiniteSampleSpec, network_at: NetworkAt, options: SolverOptions):
        self.spec = spec
        self.network_at = network_at
        self.data: Data = sample(spec.P, spec.D, spec.P_test, spec.seed)
        self.proj = np.linalg.pinv(self.data.design)  # least-squares projector onto [H1, H3] (minimum norm if P < 2)
        self.options = options
        self._targets: tuple[float, np.ndarray] | None = None
        self._geo: tuple[float, KernelGeometry] | None = None
        self._state: tuple[tuple[float, float, float], State] | None = None

    def net(self, p: float) -> Network:
        return self.network_at(p)

    def targets(self, epsilon: float) -> np.ndarray:
        """y = H1(z) + ε H3(z) on the training inputs (a sweep in ε changes them)."""
        if self._targets is None or self._targets[0] != epsilon:
            self._targets = (epsilon, teacher(self.data.train.z, epsilon))
        return self._targets[1]

    def geometry(self, net: Network) -> KernelGeometry:
        if self._geo is None or self._geo[0] != net.sigma_w2:
            self._geo = (net.sigma_w2, geometry(self.data.train, self.data.train, net.sigma_w2, self.spec.D, True))
        return self._geo[1]

    def law_rule(self, net: Network, b: float, c: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Gauss nodes ρ_j and weights of p(ρ), and the weights of ∂p/∂b, ∂p/∂c on the same nodes."""
        panels = panel_count(net, self.options.quadrature_order)
        fine = QuadratureRule(net, panels)
        mass, pot = law(net, fine, b, c)
        s_nodes, w = gauss_rule(fine.rho**2, mass, LAW_NODES)
        s_nodes = np.clip(s_nodes, 0.0, None)
        dfb, dfc = pot.dF_dbc(s_nodes)
        dfb, dfc = np.asarray(dfb, dtype=float), np.asarray(dfc, dtype=float)
        wb = -net.D * w * (dfb - float(w @ dfb))
        wc = -net.D * w * (dfc - float(w @ dfc))
        return np.sqrt(s_nodes), w, wb, wc

    def state(self, x: np.ndarray, p: float) -> State:
        key = (float(x[0]), float(x[1]), float(p))
        if self._state is not None and self._state[0] == key:
            return self._state[1]
        net = self.net(p)
        rho, w, wb, wc = self.law_rule(net, key[0], key[1])
        chol, rbar = self.regression(net, rho, w)
        st = State(np.array(key[:2]), rho, w, wb, wc, chol, rbar, self.proj @ rbar)
        self._state = (key, st)
        return st

    def regression(self, net: Network, rho: np.ndarray, w: np.ndarray) -> tuple[Any, np.ndarray]:
        """The Cholesky factor of K + T I for the law on the nodes ``rho`` (weights ``w``) and r̄ = T (K + T I)⁻¹ y."""
        (Kmat,) = kernels(self.geometry(net), rho, [w], net.sigma_a2)
        Kmat[np.diag_indices_from(Kmat)] += net.T
        chol = cho_factor(Kmat, lower=True, overwrite_a=True, check_finite=False)
        return chol, net.T * cho_solve(chol, self.targets(net.epsilon), check_finite=False)

    def fixed_point(self, x: np.ndarray, p: float) -> np.ndarray:
        return self.state(x, p).G

    def jacobian(self, x: np.ndarray, p: float) -> np.ndarray:
        st = self.state(x, p)
        net = self.net(p)
        dKb, dKc = kernels(self.geometry(net), st.rho_nodes, [st.weights_db, st.weights_dc], net.sigma_a2)
        J = np.empty((2, 2))
        for j, dK in enumerate((dKb, dKc)):
            drbar = -cho_solve(st.chol, dK @ st.rbar, check_finite=False)
            J[:, j] = self.proj @ drbar
        return J - np.eye(2)

    def test_prediction(self, x: np.ndarray, p: float) -> np.ndarray:
        """Posterior-mean prediction f̄ = K(x_test, X) (K + T)⁻¹ y = K_* r̄/T on the fresh test inputs."""
        st = self.state(x, p)
        net = self.net(p)
        geo = geometry(self.data.test, self.data.train, net.sigma_w2, self.spec.D, False)
        (Kstar,) = kernels(geo, st.rho_nodes, [st.weights], net.sigma_a2)
        return Kstar @ st.rbar / net.T

    def errors(self, x: np.ndarray, p: float) -> dict[str, Any]:
        """Train error of the posterior mean, its test error on fresh inputs (noise-free targets), and the
        least-squares projection of its test discrepancy on [H1, H3] of the test inputs (b_test, c_test)."""
        st = self.state(x, p)
        net = self.net(p)
        f_test = self.test_prediction(x, p)
        z = self.data.test.z
        y_test = teacher(z, net.epsilon)
        bc_test = np.linalg.lstsq(np.column_stack([h1(z), h3(z)]), y_test - f_test, rcond=None)[0]
        return {
            "train_mse": float(np.mean(st.rbar**2)),
            "test_mse_measured": float(np.mean((y_test - f_test) ** 2)),
            "b_test": float(bc_test[0]),
            "c_test": float(bc_test[1]),
            "kernel_series_order": self.geometry(net).order,
            "kernel_series_tail_bound": self.geometry(net).tail_bound,
        }


def population_start(net: Network, options: SolverOptions) -> np.ndarray:
    """The finite-D population solution: the finite-sample loop converges to it as P grows."""
    prob = quadrature_problem(NetworkAt(net, None), panel_count(net, options.quadrature_order))
    gp = np.array([gp_residual_b(net.eta, net.sigma_w2), net.epsilon])
    res = solve_at(prob, 0.0, gp, options.model_copy(update={"method": "newton"}))
    return res.x if res.converged else gp


def evaluator(spec: FiniteSampleSpec, parameter: str | None, options: SolverOptions) -> Evaluator:
    """A new evaluator of ``spec`` with ``parameter`` standing for the control value."""
    return Evaluator(spec, NetworkAt(network_of(spec), parameter), options)
