"""Observables of a particle solve, with Monte-Carlo standard errors from independent particle groups."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from solvers.theories.mean_field_ard.activations import Activation, hermite_e
from solvers.theories.mean_field_ard.data import (
    Dataset,
    hermite_normalised,
    spurious_hermite,
    spurious_parities,
    walsh,
)
from solvers.theories.mean_field_ard.particle_sampler import GROUPS, Physics
from solvers.theories.mean_field_ard.particles import ParticleState, measurements
from solvers.theories.mean_field_ard.spec import MeanFieldARDSpec, ParityTarget, SingleIndexTarget
from solvers.theories.mean_field_ard.specialisation import best_correlation


@lru_cache(maxsize=16)
def best_single_index_correlation(activation: str, coefficients: tuple[tuple[int, float], ...]) -> float:
    """max over unit directions w = ρ e_1 + w_⊥ of |corr(φ(wᵀx), y)| (Gauss–Hermite in z and in the ⊥ part)."""
    act = Activation(activation)
    z, wz = np.polynomial.hermite_e.hermegauss(80)
    wz = wz / math.sqrt(2.0 * math.pi)
    y = sum(c * hermite_e(l, z) for l, c in coefficients)
    ey2 = float(wz @ (y * y))
    best = 0.0
    for scale in np.geomspace(0.05, 20.0, 60):
        for frac in np.linspace(0.0, 1.0, 21):
            rho, q = scale * math.sqrt(frac), scale * scale * (1.0 - frac)
            s1, s2 = act.smoothed(rho * z, max(q, 1e-14), orders=0)
            num = float(wz @ (s1[0] * y))
            den = math.sqrt(max(float(wz @ s2[0]) * ey2, 1e-300))
            best = max(best, abs(num) / den)
    return best


def _groups(n: int) -> np.ndarray:
    return np.arange(n) % GROUPS


def _mean_se(per_group: np.ndarray) -> tuple[float, float]:
    return float(np.mean(per_group)), float(np.std(per_group, ddof=1) / math.sqrt(per_group.size))


def _debiased_mse(f_groups: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """E_x (y − f̄)² of the particles' mean predictor with its Monte-Carlo noise removed, and a jackknife error.

    The particle estimate f̂ = mean of the G group means has E (y − f̂)² = (y − f̄)² + Var f̂, and
    Var f̂ = s²_groups/G, so (y − f̂)² − s²/G is unbiased for (y − f̄)².
    """
    G = f_groups.shape[0]

    def estimate(fg: np.ndarray) -> float:
        m = fg.mean(axis=0)
        return float(np.mean((y - m) ** 2 - fg.var(axis=0, ddof=1) / fg.shape[0]))

    full = estimate(f_groups)
    loo = np.array([estimate(np.delete(f_groups, i, axis=0)) for i in range(G)])
    se = math.sqrt((G - 1) / G * float(np.sum((loo - loo.mean()) ** 2)))
    return full, se


def observables(spec: MeanFieldARDSpec, phys: Physics, state: ParticleState, data: Dataset) -> dict[str, object]:
    """The contract's observables (and the ARD profile) from the particles at the solution."""
    target = spec.target
    if isinstance(target, ParityTarget):
        chi = walsh(data.X_test, tuple(range(target.k)))
        best = best_correlation(spec.activation, target.k)
    else:
        assert isinstance(target, SingleIndexTarget)
        chi = data.y_test / math.sqrt(max(float(np.mean(data.y_test**2)), 1e-300))
        best = best_single_index_correlation(spec.activation, tuple(sorted(target.coefficients.items())))
    meas = measurements(phys, state, data.X, data.y, data.X_test, chi)
    g, a_mean, lam, J_S, Sigma = meas["g"], meas["a_mean"], meas["lam"], meas["J_S"], meas["Sigma"]
    n = g.shape[0]
    grp = _groups(n)
    scale = phys.N ** (1.0 - phys.gamma)
    f_groups = np.stack([scale * g[grp == i].mean(axis=0) for i in range(GROUPS)])  # (GROUPS, P_test)
    f_test = f_groups.mean(axis=0)
    y_t = data.y_test
    ey2 = float(np.mean(y_t * y_t))
    m_S, m_S_se = _mean_se(np.mean(f_groups * (y_t / ey2)[None, :], axis=1))
    mse, mse_se = _debiased_mse(f_groups, y_t)
    err01 = float(np.mean(np.sign(f_test) != np.sign(y_t)))
    train_mse = float(np.mean((data.y - state.fbar) ** 2))
    a2 = 1.0 / lam + a_mean**2
    chi_ss, chi_se = _mean_se(np.array([
        phys.N ** (1.0 - 2.0 * phys.gamma) / phys.kappa**2 * np.mean((a2 * J_S**2)[grp == i]) for i in range(GROUPS)
    ]))
    # competing modes
    if isinstance(target, ParityTarget):
        modes = [walsh(data.X_test, A) for A in spurious_parities(spec.d, target.k)]
    else:
        modes = [hermite_normalised(l, data.X_test[:, j]) for _, j, l in spurious_hermite(spec.d, target)]
    overlaps = np.array([float(np.mean(f_test * m)) for m in modes]) if modes else np.zeros(1)
    W = meas["W"]
    w2 = np.mean(W**2, axis=0)
    if spec.model == "mf_ard" and spec.ard_settings.precisions == "per_unit":
        # each unit's own precision has the posterior mean (α₀ + ½)/(β₀ + w_j²/2) given its weight
        rho_profile = np.mean((spec.ard_settings.alpha0 + 0.5) / (spec.beta0 + 0.5 * W**2), axis=0)
    else:
        rho_profile = state.rho
    rel = list(range(target.k)) if isinstance(target, ParityTarget) else [0]
    irr = [j for j in range(spec.d) if j not in rel]
    corr = np.abs(J_S) / np.sqrt(np.maximum(Sigma, 1e-300))
    out: dict[str, object] = {
        "m_S_stderr": m_S_se,
        "test_mse": mse,
        "test_mse_stderr": mse_se,
        "test_error01": err01,
        "train_mse": train_mse,
        "chi_SS": chi_ss,
        "chi_SS_stderr": chi_se,
        "m_spurious_max": float(np.max(np.abs(overlaps))),
        "rho_profile": [float(r) for r in rho_profile],
        "second_moment_profile": [float(v) for v in w2],
        "second_moment_relevant": float(np.mean(w2[rel])),
        "second_moment_relevant_stderr": _mean_se(
            np.array([np.mean(W[grp == i][:, rel] ** 2) for i in range(GROUPS)]))[1],
        "second_moment_irrelevant": float(np.mean(w2[irr])) if irr else None,
        "second_moment_irrelevant_stderr": _mean_se(
            np.array([np.mean(W[grp == i][:, irr] ** 2) for i in range(GROUPS)]))[1] if irr else None,
        "specialised_fraction": float(np.mean(corr >= 0.5 * best)),
        "mc_note": "standard errors over independent particle groups; the finite test set adds its own sampling error",
    }
    if isinstance(target, ParityTarget):
        walsh_sum = m_S**2 + float(np.sum(overlaps**2))
        mean_f2 = float(np.mean(f_test**2))
        out["parseval"] = {"walsh_sum": walsh_sum, "mean_f2": mean_f2, "unresolved_power": mean_f2 - walsh_sum,
                           "modes": 1 + len(modes)}
    out["_m_S"] = m_S
    out["_rel"] = rel
    return out
