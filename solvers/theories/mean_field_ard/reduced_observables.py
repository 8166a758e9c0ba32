"""Order parameters and observables of a reduced (population-limit) parity state."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.special import ndtr

from solvers.theories.mean_field_ard.activations import Activation
from solvers.theories.mean_field_ard.parity_cube import cube
from solvers.theories.mean_field_ard.population import PopulationParity
from solvers.theories.mean_field_ard.reduced_law import Law
from solvers.theories.mean_field_ard.reduced_potential import _features


@lru_cache(maxsize=16)
def best_correlation(activation: str, k: int) -> float:
    """The largest target correlation |J_S|/√Σ a single unit reaches: on the diagonal, noise-free.

    (For ReLU it does not depend on the scale; for a smooth φ the best diagonal scale is taken.)
    """
    act = Activation(activation)
    s = np.geomspace(1e-2, 1e2, 400)
    Y = np.column_stack([np.repeat(s[:, None], k, axis=1), np.full(s.size, math.log(1e-12))])
    f = _features(act, cube(k), Y)
    return float(np.max(np.abs(f.J_S) / np.sqrt(f.Sigma)))


def specialised(law: Law, activation: str, k: int) -> np.ndarray:
    """Nodes whose unit correlates with the target at least half as well as the best single unit can."""
    corr = np.abs(law.J_S) / np.sqrt(np.maximum(law.f.Sigma, 1e-300))
    return corr >= 0.5 * best_correlation(activation, k)


def summary(pop: PopulationParity, x: np.ndarray) -> dict[str, float]:
    """The state's named quantities (population limit)."""
    L = pop.state(x)
    net = pop.net
    t, rho_rel, rho_irr = pop.unpack(x)
    m = pop.moments(L)
    m_S = t * m["lambda_S"] / net.ridge
    # E[a²|w] = 1/Λ + ⟨a|w⟩², ⟨a|w⟩ = t J_S/(κ² N^γ Λ)
    a2 = 1.0 / L.lam + (t * L.J_S / (net.kappa**2 * net.N**net.gamma * L.lam)) ** 2
    chi = net.N ** (1.0 - 2.0 * net.gamma) / net.kappa**2 * L.mean(a2 * L.J_S**2)
    # Posterior (Gibbs) variance of f(x), x-averaged: N^{1−2γ} E[E[a²|w] Σ(w)] − m_S²/N
    var_f = max(net.N ** (1.0 - 2.0 * net.gamma) * L.mean(a2 * L.f.Sigma) - m_S**2 / net.N, 0.0)
    gibbs01 = float(ndtr(-m_S / math.sqrt(var_f))) if var_f > 0 else (0.0 if m_S > 0 else 0.5)
    w4 = L.mean(L.f.wS2**2)
    return {
        "t": t,
        "m_S": m_S,
        "rho_relevant": rho_rel,
        "rho_irrelevant": rho_irr,
        "lambda_S_over_ridge": m["lambda_S"] / net.ridge,
        "w2_relevant": m["m2_rel"],
        "w2_irrelevant": m["m2_irr"],
        "w4_relevant_norm": w4,
        "chi_SS": chi,
        "gibbs_variance": var_f,
        "test_error01_gibbs": gibbs01,
        "aligned_well_mass": L.aligned_mass,
        "specialised_fraction": L.mean(specialised(L, net.activation.name, net.k).astype(float)),
        "log_Z": L.log_Z,
    }
