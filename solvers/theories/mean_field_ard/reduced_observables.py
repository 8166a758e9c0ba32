"""Order parameters and observables of a reduced (population-limit) parity state."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import ndtr

from solvers.theories.mean_field_ard.population import PopulationParity


def summary(pop: PopulationParity, x: np.ndarray) -> dict[str, float]:
    """The state's named quantities (population limit)."""
    L = pop.state(x)
    net = pop.net
    t = pop.unpack(x)[0]
    rho_rel, rho_irr = pop.precisions(x)
    m = pop.moments(L)
    ek = pop.ek(L)
    # population: m_S = t λ_S/c₀ (= 1 − t at the solution); finite P (EK): the learnability λ_S/(λ_S + κ)
    m_S = t * m["lambda_S"] / net.ridge if ek is None else m["lambda_S"] / (m["lambda_S"] + ek.kappa)
    # E[a²|w] = 1/Λ + ⟨a|w⟩², ⟨a|w⟩ = t J_S/(κ² N^γ Λ): E[a² J_S²] = ⟨g⟩ + c ⟨g²⟩, c = t²/(κ⁴ N^{2γ})
    c = t * t / (net.kappa**4 * net.N ** (2.0 * net.gamma))
    chi = net.N ** (1.0 - 2.0 * net.gamma) / net.kappa**2 * (L.mean("g") + c * L.mean("g2"))
    # Posterior (Gibbs) variance of f(x), x-averaged: N^{1−2γ} E[E[a²|w] Σ(w)] − m_S²/N
    var_f = max(net.N ** (1.0 - 2.0 * net.gamma) * (L.mean("SL") + c * L.mean("gSL")) - m_S**2 / net.N, 0.0)
    gibbs01 = float(ndtr(-m_S / math.sqrt(var_f))) if var_f > 0 else (0.0 if m_S > 0 else 0.5)
    w4 = L.mean("wS4")
    return {
        "t": t,
        "m_S": m_S,
        "rho_relevant": rho_rel,
        "rho_irrelevant": rho_irr,
        "lambda_S_over_ridge": m["lambda_S"] / net.ridge,
        "second_moment_relevant": m["m2_rel"],
        "second_moment_irrelevant": m["m2_irr"],
        "w4_relevant_norm": w4,
        "chi_SS": chi,
        "gibbs_variance": var_f,
        "test_error01_gibbs": gibbs01,
        "aligned_well_mass": L.aligned_mass,
        "specialised_fraction": L.mean("spec"),
        "log_Z": L.log_Z,
        **(_finite_p(ek, m_S, net.k) if ek is not None else {}),
    }


def _finite_p(ek: Any, m_S: float, k: int) -> dict[str, float]:
    """EK errors: E₀ (1 − L_S)² on test data, (c₀/κ)² of that on the training set, and the rms spurious overlap
    √(L_A² E_test/P) of the best-learned mode A ≠ S (the mean predictor's dataset-to-dataset spread)."""
    test = ek.E0 * (1.0 - m_S) ** 2
    L = ek.L.copy()
    L[k, 0] = 0.0
    return {
        "ek_test_mse": test,
        "ek_train_mse": (ek.c0 / ek.kappa) ** 2 * test,
        "ek_m_spurious_rms": float(np.max(L)) * math.sqrt(test / ek.P),
        "effective_ridge_ratio": ek.kappa / ek.c0,
        "overfitting_factor": ek.E0,
    }
