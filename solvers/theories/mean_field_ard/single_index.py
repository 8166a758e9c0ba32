"""Population averages of one unit on Gaussian inputs with a single-index residual.

For x ~ N(0, I_d), a unit w = ρ e + w_⊥ (e the target direction, q⊥ = |w_⊥|²) has pre-activation
wᵀx = ρ z + √q⊥ ξ with z = eᵀx and ξ independent standard normals — exactly, at every d. A residual
r(x) = Σ_l r_l He_l(z) then gives

    J_r(w) = E[φ(ρ z + √q⊥ ξ) r(z)],    Σ(w) = E[φ(ρ z + √q⊥ ξ)²],

computed here by a fixed Gauss–Hermite rule in z with the closed-form (ReLU) or Gauss–Hermite
(erf, tanh) smoothing in ξ. These are the population (P → ∞) inputs of the single-neuron potential
(``finite_potential``) on single-index data.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from solvers.theories.mean_field_ard.activations import Activation, hermite_e

#: Gauss–Hermite order in z (exact for polynomials of degree < 2·Z_ORDER times the smoothed φ).
Z_ORDER = 96


@lru_cache(maxsize=4)
def _z_rule(order: int) -> tuple[np.ndarray, np.ndarray]:
    z, w = np.polynomial.hermite_e.hermegauss(order)
    return z, w / math.sqrt(2.0 * math.pi)


def population_terms(act: Activation, rho: np.ndarray, q_perp: np.ndarray,
                     residual: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    """(J_r, Σ) at the pairs (ρ, q⊥) (broadcast), for r(z) = Σ_l r_l He_l(z)."""
    z, w = _z_rule(Z_ORDER)
    rho = np.asarray(rho, dtype=float)[..., None]
    q = np.broadcast_to(np.asarray(q_perp, dtype=float), np.asarray(rho[..., 0]).shape)[..., None]
    s1, s2 = act.smoothed(rho * z, np.maximum(q, 1e-300), orders=0)
    r = sum(c * hermite_e(l, z) for l, c in residual.items())
    return s1[0] @ (w * r), s2[0] @ w
