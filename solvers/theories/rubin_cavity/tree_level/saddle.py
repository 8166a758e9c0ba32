"""Tree level at D → ∞: the mixture saddle point of the population theory with the variance term.

As in the cavity saddle (:mod:`..self_consistent.saddle`), p(ρ) ∝ exp(−D f(ρ)) puts a Gaussian of variance
1/(D f''(0)) at ρ = 0 and a mass ω at the deepest aligned well ρ*, and the closure

    M = (1 − ω) η (4/π)/((1 + 2σ_w²) f''(0)) e₁e₁ᵀ + ω η D A(ρ*),   [b, √6 c] = (I + M)⁻¹ [1, √6 ε],

with the box complementarity mid(ω, ω − 1, Δ) = 0 for the depth gap Δ = f(ρ*) − f(0). At tree level f also
depends on the kernel, through the learnabilities ℓ = M(I + M)⁻¹ of the target modes and ℓ⊥ of the linear
modes x_j ⊥ e (m⊥ = η (4/π) σ_w²/(1 + 2σ_w²): the centre carries all but ω = O(1/(ηD)) of the mass), so the
unknowns are M itself and ω: x = (M11, M13, M33, ω), and (b, c) follow from M. The states are the cavity
saddle's :class:`SaddleState` (the events, phases and report of the cavity saddle apply unchanged); the
Jacobian is left to the engine's finite differences.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import brentq

from solvers.core.errors import is_numerical
from solvers.core.newton import newton
from solvers.core.options import SolverOptions
from solvers.theories.rubin_cavity.common.closure import residual_coefficients
from solvers.theories.rubin_cavity.common.erf_projections import FOUR_OVER_PI
from solvers.theories.rubin_cavity.common.guards import CANDIDATES
from solvers.theories.rubin_cavity.common.network import Network
from solvers.theories.rubin_cavity.common.variance_term import Learnability
from solvers.theories.rubin_cavity.self_consistent import saddle as cavity
from solvers.theories.rubin_cavity.self_consistent.saddle import MEMO_ENTRIES, SaddleState

NAMES = ("M11", "M13", "M33", "omega")


@dataclass(frozen=True)
class TreeLevelState:
    """The cavity saddle's state at x, with the M and learnabilities it was evaluated at."""

    saddle: SaddleState
    M_in: np.ndarray
    learned: Learnability

    @property
    def residual(self) -> np.ndarray:
        st = self.saddle
        return np.array([st.M[0, 0], st.M[0, 1], st.M[1, 1], st.omega - st.complementarity])


def matrix(x: np.ndarray) -> np.ndarray:
    return np.array([[x[0], x[1]], [x[1], x[2]]], dtype=float)


def perpendicular_m(net: Network) -> float:
    """m⊥ of the D → ∞ saddle: the linear modes x_j ⊥ e see the centre's norm, ⟨1/h⟩ = 1/(1 + 2σ_w²)."""
    return net.perpendicular_m(1.0 / (1.0 + 2.0 * net.sigma_w2))


def evaluate(net: Network, x: np.ndarray) -> TreeLevelState:
    M_in = matrix(x)
    omega = float(x[3])
    b, c = residual_coefficients(M_in, net.epsilon)
    learned = Learnability.of(M_in, perpendicular_m(net))
    return TreeLevelState(cavity.state_in(net, b, c, omega, net.tree_level(b, c, learned)), M_in, learned)


class StateMemo:
    """The states one problem has computed, by (p, x); one memo per bound problem."""

    def __init__(self, network_at: Callable[[float], Network]):
        self.network_at = network_at
        self._states: dict[tuple[float, ...], TreeLevelState] = {}

    def __call__(self, x: np.ndarray, p: float) -> TreeLevelState:
        key = (float(p), *(float(v) for v in x))
        st = self._states.get(key)
        if st is None:
            if len(self._states) >= MEMO_ENTRIES:
                self._states.clear()
            st = self._states[key] = evaluate(self.network_at(p), np.array(key[1:]))
        return st


def nngp_start(net: Network) -> np.ndarray:
    """The NNGP limit (Algorithm 1's initial condition): the prior kernel, M11 = η (4/π) σ_w²/(1 + 2σ_w²)."""
    return np.array([net.perpendicular_m(1.0 / (1.0 + 2.0 * net.sigma_w2)), 0.0, 0.0, 0.0])


def gfl_start(net: Network) -> np.ndarray:
    """The GFL branch (ω = 0, c = ε) up to one monotone scalar root; the NNGP limit where that degenerates.

    With ω = 0, M = m e₁e₁ᵀ, b = 1/(1 + m), ℓ11 = 1 − b, and f''(0) = a0 + a1 b − β b² is exactly quadratic in
    b (the variance term adds κ V'(0), linear in ℓ11). m = C/f''(0), C = η (4/π)/(1 + 2σ_w²), becomes
    φ(b) = b (1 + C/f''(0)) − 1 = 0, increasing from −1 to +∞ on 0 < b < b_max (f''(0) > 0) when a0 > 0.
    """
    try:
        return _gfl(net)
    except CANDIDATES as exc:
        if not is_numerical(exc):
            raise
        return nngp_start(net)


def _gfl(net: Network) -> np.ndarray:
    perp = Learnability.of(np.zeros((2, 2)), perpendicular_m(net)).perp

    def curvature(b: float) -> float:
        return net.tree_level(b, net.epsilon, Learnability(1.0 - b, 0.0, 0.0, perp)).center_curvature()

    f0, f_half, f1 = curvature(0.0), curvature(0.5), curvature(1.0)
    # f(b) = a0 + a1 b − β b²: f(1) + f(0) − 2 f(1/2) = −β/2
    a0, beta = f0, -2.0 * (f1 + f0 - 2.0 * f_half)
    a1 = f1 - f0 + beta
    if not a0 > 0:
        return nngp_start(net)
    C = net.eta * FOUR_OVER_PI / (1.0 + 2.0 * net.sigma_w2)
    if beta > 0:
        b_max = (a1 + math.sqrt(a1 * a1 + 4.0 * beta * a0)) / (2.0 * beta)
    else:
        b_max = math.inf if a1 >= 0 else a0 / -a1
    hi = min(1.0, b_max * (1.0 - 1e-15))

    def phi(b: float) -> float:
        k = a0 + a1 * b - beta * b * b
        return b * (1.0 + C / k) - 1.0 if k > 0 else math.inf

    if phi(hi) <= 0:
        return np.array([1.0 / hi - 1.0, 0.0, 0.0, 0.0])
    b = brentq(phi, 0.0, hi, xtol=1e-15, rtol=1e-15)
    return np.array([1.0 / b - 1.0, 0.0, 0.0, 0.0])


def mean_field_start(net: Network, options: SolverOptions) -> np.ndarray | None:
    """(M, ω) of the cavity mean-field saddle point (κ = 0), solved by the engine's Newton from the cavity's GFL,
    mixed and aligned starts; the tree level differs from it by O(κ). None when no start converges."""
    mf = replace(net, treatment="cavity", scaling="mean_field")

    def F(x: np.ndarray) -> np.ndarray:
        st = cavity.evaluate(mf, x)
        return np.array([st.b_new - x[0], st.c_new - x[1], -st.complementarity])

    gfl = cavity.gfl_start(mf)
    for x0 in (gfl, np.array([0.9 * gfl[0], 0.97 * net.epsilon, 1.0 / max(net.n_eff, 1.0)]),
               np.array([0.05, 0.5 * net.epsilon, 1.0])):
        res = newton(F, x0, options, jacobian=lambda x: cavity.jacobian(mf, x),
                     project=lambda x: np.array([max(x[0], 1e-12), x[1], min(max(x[2], 0.0), 1.0)]))
        if res.converged:
            st = cavity.evaluate(mf, res.x)
            return np.array([st.M[0, 0], st.M[0, 1], st.M[1, 1], st.omega])
    return None


def guesses(net: Network, options: SolverOptions) -> dict[str, np.ndarray]:
    """Named starts: the GFL state in closed form, and the mean-field solution (the tree level without its
    variance term). The NNGP limit is where the annealing in χ starts (:mod:`.annealing`); as a start at the
    spec's own χ it stalls on the complementarity's kinks once the aligned mass is large, so it is not one."""
    out = {"uninformative": gfl_start(net)}
    mf = mean_field_start(net, options)
    if mf is not None:
        out["mean_field"] = mf
    return out
