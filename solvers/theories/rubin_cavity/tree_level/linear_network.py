"""The tree level of a two-layer *linear* network on a data set, the case the 2025 paper solves in closed form.

f(x) = Σ_i a_i w_i·x, a_i ~ N(0, s_a2), w_i ~ N(0, σ_w²/D I), Gaussian likelihood of variance T on (X, y).
The tree-level weight law (readout integrated, log N(y; 0, K_W + T) to first order about K) is Gaussian:

    Σ_w⁻¹ = (D/σ_w²) I − s_a2 Xᵀ (t̄t̄ᵀ − (K + T)⁻¹) X,   K = N s_a2 X Σ_w Xᵀ,   t̄ = (K + T)⁻¹ y,

with the mean output f̄(x*) = N s_a2 x*ᵀ Σ_w Xᵀ t̄. The unknowns are x = the upper triangle of
A = (σ_w²/D) Σ_w⁻¹ (the prior is A = I); an A that is not positive definite is outside the domain (its law
is not normalisable), a NaN residual for the engine.

Under mean-field scaling the directional term s_a2 (Xᵀt̄)(Xᵀt̄)ᵀ is as large as the prior precision, and a
solve from the prior does not reach the solution. The paper's Algorithm 1 anneals from the NNGP limit: with
s_a2 = g/(χN), T = T̃/χ the control parameter is χ (the network at χ = 1 is the one given), and
:func:`anneal` runs the engine's warm-started grid sweep over an increasing list of χ from the prior.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.sweep import Sweep, run_sweep
from solvers.theories.rubin_cavity.common.guards import guarded


@dataclass(frozen=True)
class LinearNetwork:
    X: np.ndarray  # (P, D) training inputs
    y: np.ndarray  # (P,) targets
    N: float
    s_a2: float
    T: float
    sigma_w2: float = 1.0

    @property
    def D(self) -> int:
        return int(self.X.shape[1])

    def at_chi(self, chi: float) -> LinearNetwork:
        """s_a2 → s_a2/χ, T → T/χ: the annealing path (χ = 1 is this network)."""
        return LinearNetwork(self.X, self.y, self.N, self.s_a2 / chi, self.T / chi, self.sigma_w2)


def _unpack(x: np.ndarray, D: int) -> np.ndarray:
    A = np.zeros((D, D))
    A[np.triu_indices(D)] = x
    return A + A.T - np.diag(np.diag(A))


def weight_covariance(net: LinearNetwork, x: np.ndarray) -> np.ndarray:
    """Σ_w of the unknowns x (raises LinAlgError when A is not positive definite)."""
    A = _unpack(x, net.D)
    L = np.linalg.cholesky(A)
    inv = np.linalg.inv(L)
    return (net.sigma_w2 / net.D) * inv.T @ inv


def _dual(net: LinearNetwork, cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(K + T)⁻¹ and t̄ for the weight covariance ``cov``."""
    K = net.N * net.s_a2 * net.X @ cov @ net.X.T
    C = np.linalg.inv(K + net.T * np.eye(len(net.y)))
    return C, C @ net.y


def fixed_point(net: LinearNetwork, x: np.ndarray) -> np.ndarray:
    C, t = _dual(net, weight_covariance(net, x))
    A = np.eye(net.D) - (net.sigma_w2 / net.D) * net.s_a2 * net.X.T @ (np.outer(t, t) - C) @ net.X
    return A[np.triu_indices(net.D)]


def mean_output(net: LinearNetwork, x: np.ndarray, X_new: np.ndarray) -> np.ndarray:
    """The posterior-mean output N s_a2 x*ᵀ Σ_w Xᵀ t̄ at the rows of ``X_new``."""
    cov = weight_covariance(net, x)
    _, t = _dual(net, cov)
    return net.N * net.s_a2 * X_new @ cov @ net.X.T @ t


def prior(D: int) -> np.ndarray:
    return np.eye(D)[np.triu_indices(D)]


def problem(net: LinearNetwork) -> Problem:
    """The tree-level closure with χ as the control parameter."""
    dim = net.D * (net.D + 1) // 2
    return Problem(
        residual=None,
        fixed_point=guarded(lambda x, chi: fixed_point(net.at_chi(chi), x), (dim,)),
        dim=dim,
        starts=lambda chi: {"nngp": prior(net.D)},
        kind="saddle",
        label=lambda x, chi, start: "tree_level",
        scale=np.ones(dim),
    )


def anneal(net: LinearNetwork, chis: Sequence[float], options: SolverOptions | None = None) -> Sweep:
    """Algorithm 1: the tree-level solution along increasing χ, each point warm-started from the last."""
    options = (options or SolverOptions()).model_copy(update={"method": "newton"})
    return run_sweep(problem(net), chis, options, method="grid")
