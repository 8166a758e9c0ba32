"""The analytic Jacobian of the tree-level saddle point in x = (M11, M13, M33, ω).

The potential depends on x through θ = (b, c, ℓ11, ℓ13, ℓ33): with B = (I + M)⁻¹, [b, √6 c] = B y and
ℓ = I − B, so ∂θ/∂M_ij follows from ∂B = −B E_ij B. The closure depends on θ through the centre curvature
f''(0) = 2F'(0), the aligned well s* (F'(s*) = 0, so ∂s*/∂θ = −∂_θF'(s*)/F''(s*)) and, for the
complementarity, the depth gap F(s*) − F(0) (envelope theorem: the well moves, F' = 0 there). On a kink of
mid(ω, ω − 1, Δ) it is the generalised Jacobian of the active piece, as for the cavity saddle.
"""

from __future__ import annotations

import math

import numpy as np

from solvers.theories.rubin_cavity.common.erf_projections import FOUR_OVER_PI, SQRT6, mode_vector, mode_vector_slope
from solvers.theories.rubin_cavity.common.network import Network
from solvers.theories.rubin_cavity.common.tree_level_potential import TreeLevelPotential
from solvers.theories.rubin_cavity.common.variance_term import mode_terms
from solvers.theories.rubin_cavity.self_consistent.saddle import GAP_SCALE
from solvers.theories.rubin_cavity.tree_level.saddle import TreeLevelState

#: M11, M13, M33 as symmetric unit directions.
_E = (np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([[0.0, 0.0], [0.0, 1.0]]))


def theta_of_m(M: np.ndarray, epsilon: float) -> np.ndarray:
    """∂θ/∂(M11, M13, M33), shape (5, 3), θ = (b, c, ℓ11, ℓ13, ℓ33)."""
    B = np.linalg.inv(np.eye(2) + M)
    out = np.empty((5, 3))
    for j, E in enumerate(_E):
        dB = -B @ E @ B
        dr = dB @ np.array([1.0, SQRT6 * epsilon])
        out[:, j] = [dr[0], dr[1] / SQRT6, -dB[0, 0], -dB[0, 1], -dB[1, 1]]
    return out


def _partials(pot: TreeLevelPotential, s: float) -> tuple[np.ndarray, np.ndarray]:
    """(∂F/∂θ, ∂F'/∂θ) at s, θ = (b, c, ℓ11, ℓ13, ℓ33)."""
    half = -0.5 * pot.kappa
    t0, t1 = mode_terms(s, pot.sigma_w2, 0), mode_terms(s, pot.sigma_w2, 1)
    dF = [*pot.dF_dbc(s), half * t0[0], half * t0[1], half * t0[2]]
    dFp = [*pot.dFprime_dbc(s), half * t1[0], half * t1[1], half * t1[2]]
    return np.array(dF, dtype=float), np.array(dFp, dtype=float)


def jacobian(net: Network, x: np.ndarray, st: TreeLevelState) -> np.ndarray:
    """d(G(x) − x)/dx for the fixed-point map G of :func:`..saddle.evaluate` at its state ``st``."""
    sd = st.saddle
    pot = sd.potential
    assert isinstance(pot, TreeLevelPotential)
    omega = sd.omega
    dtheta = theta_of_m(st.M_in, net.epsilon)
    dM_theta = np.zeros((5, 2, 2))  # ∂M_new/∂θ
    dM_omega = np.zeros((2, 2))
    dgap = np.zeros(5)
    if sd.center_curvature > 0:
        C = net.eta * FOUR_OVER_PI / (1.0 + 2.0 * net.sigma_w2)
        k0 = sd.center_curvature
        dk0 = 2.0 * _partials(pot, 0.0)[1]
        dM_theta[:, 0, 0] += -(1.0 - omega) * C / k0**2 * dk0
        dM_omega[0, 0] += -C / k0
    if sd.aligned is not None:
        rho = sd.aligned.rho
        s = rho * rho
        a, da = np.array(mode_vector(rho, net.sigma_w2)), mode_vector_slope(rho, net.sigma_w2)
        dA = np.outer(da, a) + np.outer(a, da)
        dF_s, dFp_s = _partials(pot, s)
        ds = -dFp_s / float(pot.d2F(s))
        dM_theta += omega * net.n_eff * dA[None, :, :] * (ds / (2.0 * rho))[:, None, None]
        dM_omega += net.n_eff * np.outer(a, a)
        dgap = GAP_SCALE * (dF_s - _partials(pot, 0.0)[0])
    J = np.zeros((4, 4))
    dM_x = np.einsum("tij,tk->ijk", dM_theta, dtheta)  # ∂M_new/∂(M11, M13, M33)
    for row, (i, j) in enumerate(((0, 0), (0, 1), (1, 1))):
        J[row, :3] = dM_x[i, j]
        J[row, 3] = dM_omega[i, j]
    mid = sd.complementarity
    if mid == sd.scaled_gap and math.isfinite(mid):
        dmid = np.array([*(dgap @ dtheta), 0.0])
    else:
        dmid = np.array([0.0, 0.0, 0.0, 1.0])
    J[3] = np.array([0.0, 0.0, 0.0, 1.0]) - dmid
    return J - np.eye(4)
