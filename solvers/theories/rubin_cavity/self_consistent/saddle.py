"""``mode: "self_consistent"``, D → ∞ saddle point: (b, c) with a mixture weight that keeps wells degenerate.

As D → ∞, p(ρ) ∝ exp(−D Ŝ(ρ; b, c)) puts its mass on the global minima of Ŝ: a Gaussian of
variance 1/(D Ŝ''(0)) at ρ = 0 and point masses at ±ρ* (the aligned wells). Because the closure
multiplies the kernel by n σ_a²/σ² = η D, the center's O(1/D) spread and an aligned mass ω of
order 1/(η D) both move (b, c) by O(1):

    M = (1 − ω) η (4/π)/((1 + 2σ_w²) Ŝ''(0)) e₁e₁ᵀ + ω η D A(ρ*),   [b, √6 c] = (I + M)⁻¹ [1, √6 ε].

(The center's A13, A33 moments are O(1/D) and dropped.) The aligned mass ω ∈ [0, 1] is the third
unknown, tied to the depth gap Δ = Ŝ(ρ*) − Ŝ(0) by a box complementarity condition: ω = 0 while
the aligned well lies above the center (Δ > 0, GFL), ω = 1 once it lies below (Δ < 0, GMFL-II),
and 0 < ω < 1 only at equal depth (Δ = 0, GMFL-I, where the weight adjusts to keep the wells
degenerate). It is the semismooth equation

    mid(ω, ω − 1, D Δ) = 0,

so Newton and continuation pass GFL → GMFL-I → GMFL-II on one branch, with an analytic
(generalised) Jacobian. The GFL → GMFL-I point (Δ = 0 reached with ω = 0) is the first-order
transition: the population at ρ* appears at finite overlap, not continuously out of ρ = 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from solvers.core.errors import is_numerical
from solvers.theories.rubin_cavity.common.closure import gp_residual_b, residual_coefficients
from solvers.theories.rubin_cavity.common.erf_projections import (
    FOUR_OVER_PI,
    SQRT6,
    mode_matrix_at,
    mode_vector,
    mode_vector_slope,
)
from solvers.theories.rubin_cavity.common.guards import CANDIDATES
from solvers.theories.rubin_cavity.common.network import Network
from solvers.theories.rubin_cavity.common.phases import GFL, GMFL_I, GMFL_II
from solvers.theories.rubin_cavity.common.potential import OverlapPotential, StationaryPoint

#: Mixture weights within this distance of 0 or 1 count as the pure phase.
WEIGHT_EPS = 1e-12
#: The complementarity compares ω with this multiple of Δ; any positive scale has the same solutions, and
#: one keeps the gap term active (informative for Newton) over the O(0.1) depths met in practice.
GAP_SCALE = 1.0
BRANCH = "population"
#: Entries of a problem's memo of states (cleared when full; a sweep revisits only nearby points).
MEMO_ENTRIES = 4096


@dataclass(frozen=True)
class SaddleState:
    """Everything the saddle-point equations compute at one (b, c, ω)."""

    b: float
    c: float
    omega: float
    potential: OverlapPotential
    center_curvature: float  # Ŝ''(0)
    aligned: StationaryPoint | None  # deepest aligned well of Ŝ(·; b, c)
    M: np.ndarray
    b_new: float
    c_new: float
    scaled_gap: float  # D Δ; +inf without aligned well, −inf with an unstable center
    D: float

    @property
    def phase(self) -> str:
        if self.omega <= WEIGHT_EPS:
            return GFL
        return GMFL_II if self.omega >= 1.0 - WEIGHT_EPS else GMFL_I

    @property
    def center_rho2(self) -> float:
        """⟨ρ²⟩ of the center Gaussian, 1/(D Ŝ''(0)) (inf when the center is not a minimum)."""
        return 1.0 / (self.D * self.center_curvature) if self.center_curvature > 0 else math.inf

    @property
    def rho_star(self) -> float:
        return self.aligned.rho if (self.aligned is not None and self.omega > WEIGHT_EPS) else 0.0

    @property
    def R(self) -> float:
        """E[ρ²] of the mixture: (1 − ω)/(D Ŝ''(0)) + ω ρ*²."""
        center = (1.0 - self.omega) * self.center_rho2 if self.omega < 1.0 else 0.0
        aligned = self.omega * self.aligned.rho**2 if (self.aligned is not None and self.omega > 0) else 0.0
        return center + aligned

    @property
    def complementarity(self) -> float:
        """mid(ω, ω − 1, DΔ): zero exactly when (ω, Δ) satisfy the box complementarity."""
        return sorted((self.omega, self.omega - 1.0, self.scaled_gap))[1]

    @property
    def margin(self) -> float:
        """Smallest curvature of a populated well (> 0: every populated well is a local minimum)."""
        curvs = []
        if self.omega < 1.0 - WEIGHT_EPS:
            curvs.append(self.center_curvature)
        if self.omega > WEIGHT_EPS:
            curvs.append(self.aligned.curvature if self.aligned is not None else -1.0)
        return float(min(curvs))


def _center_term(net: Network, kappa0: float) -> float:
    """η (4/π)/((1 + 2σ_w²) Ŝ''(0)): (n σ_a²/σ²) A11 averaged over the center Gaussian, per unit center mass."""
    return net.eta * FOUR_OVER_PI / ((1.0 + 2.0 * net.sigma_w2) * kappa0)


def evaluate(net: Network, x: np.ndarray) -> SaddleState:
    """The saddle-point state at x = (b, c, ω)."""
    return _evaluate(net, float(x[0]), float(x[1]), float(x[2]))


class StateMemo:
    """The states one problem has computed, by (p, x): residual, Jacobian, stability, label and events all ask
    for the state at the same point. One memo per bound problem, never shared between problems."""

    def __init__(self, network_at: Callable[[float], Network]):
        self.network_at = network_at
        self._states: dict[tuple[float, float, float, float], SaddleState] = {}

    def __call__(self, x: np.ndarray, p: float) -> SaddleState:
        key = (float(p), float(x[0]), float(x[1]), float(x[2]))
        st = self._states.get(key)
        if st is None:
            if len(self._states) >= MEMO_ENTRIES:
                self._states.clear()
            st = self._states[key] = _evaluate(self.network_at(p), *key[1:])
        return st


def _evaluate(net: Network, b: float, c: float, omega: float) -> SaddleState:
    return state_in(net, b, c, omega, net.potential(b, c))


def state_in(net: Network, b: float, c: float, omega: float, pot: OverlapPotential) -> SaddleState:
    """The saddle-point state at (b, c, ω) with the per-neuron potential ``pot`` (the cavity's, or the tree
    level's): its centre curvature and deepest aligned well, the closure's M and the map's new (b, c)."""
    kappa0 = pot.center_curvature()
    aligned_pts = [p for p in pot.stationary_points() if p.kind == "aligned"]
    aligned = min(aligned_pts, key=lambda p: p.depth) if aligned_pts else None
    M = np.zeros((2, 2))
    if kappa0 > 0:
        M[0, 0] = (1.0 - omega) * _center_term(net, kappa0)
    if aligned is not None:
        M = M + omega * net.n_eff * mode_matrix_at(aligned.rho, net.sigma_w2)
    b_new, c_new = residual_coefficients(M, net.epsilon)
    if kappa0 <= 0:
        gap = -math.inf
    elif aligned is None:
        gap = math.inf
    else:
        gap = GAP_SCALE * aligned.depth
    return SaddleState(b, c, omega, pot, kappa0, aligned, M, b_new, c_new, gap, net.D)


def jacobian(net: Network, x: np.ndarray, st: SaddleState | None = None) -> np.ndarray:
    """d(G(x) − x)/dx, analytic (the generalised Jacobian of the active piece of mid(·)); ``st`` is the state at x."""
    st = evaluate(net, x) if st is None else st
    omega, pot = st.omega, st.potential
    r = np.array([st.b_new, SQRT6 * st.c_new])
    inv = np.linalg.inv(np.eye(2) + st.M)
    dM = [np.zeros((2, 2)) for _ in range(3)]  # d/db, d/dc, d/dω
    k = 2.0 * net.u / math.pi
    lam_L0 = float(pot._L(0.0)[0]) if pot.standard else 1.0
    if st.center_curvature > 0:
        ct = _center_term(net, st.center_curvature)
        dkappa_db = -4.0 * k * st.b / ((1.0 + 2.0 * net.sigma_w2) * lam_L0)
        dM[0][0, 0] += -(1.0 - omega) * ct / st.center_curvature * dkappa_db
        dM[2][0, 0] += -ct
    dgap = np.zeros(3)
    if st.aligned is not None:
        rho = st.aligned.rho
        s = rho * rho
        a, da = np.array(mode_vector(rho, net.sigma_w2)), mode_vector_slope(rho, net.sigma_w2)
        A = np.outer(a, a)
        dA = np.outer(da, a) + np.outer(a, da)
        d2 = float(pot.d2F(s))
        for j, dFp in enumerate(pot.dFprime_dbc(s)):
            ds = -dFp / d2
            dM[j] += omega * net.n_eff * dA * ds / (2.0 * rho)
        dM[2] += net.n_eff * A
        dgap[:2] = GAP_SCALE * np.array(pot.dF_dbc(s))  # envelope theorem: the well moves, F'(s*) = 0
    J = np.zeros((3, 3))
    for j in range(3):
        dr = -inv @ (dM[j] @ r)
        J[0, j], J[1, j] = dr[0], dr[1] / SQRT6
    mid = st.complementarity
    dmid = dgap if (mid == st.scaled_gap and math.isfinite(mid)) else np.array([0.0, 0.0, 1.0])
    J[2] = np.array([0.0, 0.0, 1.0]) - dmid
    return J - np.eye(3)


def gp_start(net: Network) -> np.ndarray:
    """The GP-limit (u → 0) residual: b = 1/(1 + η (4/π) σ_w²/(1 + 2σ_w²)), c = ε, no aligned mass."""
    return np.array([gp_residual_b(net.eta, net.sigma_w2), net.epsilon, 0.0])


def gfl_start(net: Network) -> np.ndarray:
    """The GFL branch (ω = 0, c = ε) in closed form up to one monotone scalar root.

    With ω = 0 the closure reduces to b = 1/(1 + C/Ŝ''(0)), C = η (4/π)/(1 + 2σ_w²), and
    Ŝ''(0) = κ_p − β b² is a downward parabola in b (β = 4u/(π (1 + 2σ_w²) L0)). On
    0 < b < √(κ_p/β) the function b (1 + C/Ŝ''(0)) − 1 increases from −1 to +∞: one root.
    """
    try:
        return _gfl(net)
    except CANDIDATES as exc:
        if not is_numerical(exc):
            raise
        return gp_start(net)  # extreme parameters: the closed form's bracket degenerates


def _gfl(net: Network) -> np.ndarray:
    pot = net.potential(0.0, net.epsilon)
    kappa_p = pot.center_curvature()
    L0 = float(pot._L(0.0)[0]) if pot.standard else 1.0
    beta = 4.0 * net.u / (math.pi * (1.0 + 2.0 * net.sigma_w2) * L0)
    C = net.eta * FOUR_OVER_PI / (1.0 + 2.0 * net.sigma_w2)
    b_max = math.sqrt(kappa_p / beta) if beta > 0 else math.inf
    hi = min(1.0, b_max * (1.0 - 1e-15))

    def phi(b: float) -> float:
        kappa = kappa_p - beta * b * b
        return b * (1.0 + C / kappa) - 1.0 if kappa > 0 else math.inf

    if phi(hi) <= 0:  # only when b_max > 1 and nothing is learned: b = 1 up to rounding
        return np.array([hi, net.epsilon, 0.0])
    b = brentq(phi, 0.0, hi, xtol=1e-15, rtol=1e-15)
    return np.array([b, net.epsilon, 0.0])
