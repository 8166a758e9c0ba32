"""One temperature of the unreduced tree level, and the curve in T by continuation from the NNGP kernel.

A point is solved in stages. Stage k samples particles of the law at a pilot kernel (the NNGP kernel, or the
solution at the previous temperature) and solves the closure on them with the engine's Newton
(:mod:`.problem`); the next stage samples at the kernel just found, so that the last stage's particles are
samples of (nearly) the solution's own law and the reweighting from the pilot is mild (its effective sample
size is reported). The Monte-Carlo error of each observable comes from the chains split into groups: each
group's particles give their own node weights (Bennett ratios) and reweighting at the solution's exponents.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.special import erf, logsumexp

from solvers.core.blas import one_blas_thread
from solvers.core.options import SolverOptions
from solvers.core.solve import solve_at
from solvers.theories.rubin_cavity.common.erf_projections import h1, h3, teacher
from solvers.theories.rubin_cavity.finite_sample.data import draw_inputs
from solvers.theories.rubin_cavity.finite_sample.unreduced.law import Couplings, nngp_kernel
from solvers.theories.rubin_cavity.finite_sample.unreduced.problem import ParticleClosure
from solvers.theories.rubin_cavity.finite_sample.unreduced.sampler import (
    Particles,
    SamplerSettings,
    node_log_z,
    node_masses,
    sample,
)

#: Newton's tolerance on the exponents (which are O(1)–O(100)): far below the Monte-Carlo error of any observable.
OPTIONS = SolverOptions(method="newton", tol_abs=1e-8, tol_rel=1e-9, max_iterations=60)
#: Chain groups of the Monte-Carlo error.
GROUPS = 4
#: |ρ| above which a neuron counts as aligned (the network benchmark's threshold).
ALIGNED = 0.5


@dataclass(frozen=True)
class Setting:
    P: int
    D: int
    N: float
    s_a2: float
    sigma_w2: float
    epsilon: float
    P_test: int = 500
    seed: int = 0


@dataclass
class Inputs:
    X: np.ndarray
    y: np.ndarray
    Xt: np.ndarray
    yt: np.ndarray

    @classmethod
    def of(cls, s: Setting) -> Inputs:
        X, Xt = draw_inputs(s.P, s.D, s.P_test, s.seed)
        return cls(X, teacher(X[:, 0], s.epsilon), Xt, teacher(Xt[:, 0], s.epsilon))


@dataclass
class Point:
    T: float
    converged: bool
    K: np.ndarray
    observables: dict[str, Any]
    diagnostics: dict[str, Any] = field(default_factory=dict)


def _projection(z: np.ndarray, r: np.ndarray) -> np.ndarray:
    return np.linalg.lstsq(np.column_stack([h1(z), h3(z)]), r, rcond=None)[0]


def observables(setting: Setting, data: Inputs, closure: ParticleClosure, x: np.ndarray, T: float,
                log_w: np.ndarray | None = None) -> dict[str, float]:
    """R, (b, c) on the training set and on fresh inputs, and the weight statistics of the law with exponents x."""
    if log_w is None:
        log_w = closure.log_base + x
    W = np.exp(log_w - logsumexp(log_w))
    Wp = closure.particles.W
    K = setting.N * setting.s_a2 * (closure.phi.T * W) @ closure.phi
    cp = Couplings.of(K, data.y, T, setting.s_a2)
    b, c = _projection(data.X[:, 0], T * cp.tbar)
    phi_t = erf(Wp @ data.Xt.T)
    f_test = setting.N * setting.s_a2 * ((phi_t.T * W) @ closure.phi) @ cp.tbar
    bt, ct = _projection(data.Xt[:, 0], data.yt - f_test)
    rho2 = Wp[:, 0] ** 2
    return {
        "R": float(W @ rho2),
        "b": float(b), "c": float(c), "b_test": float(bt), "c_test": float(ct),
        "cubic_fraction": float(1.0 - c / setting.epsilon), "cubic_fraction_test": float(1.0 - ct / setting.epsilon),
        "perpendicular": float(W @ np.sum(Wp[:, 1:] ** 2, axis=1)) / max(setting.D - 1, 1),
        "aligned_fraction": float(W @ (np.abs(Wp[:, 0]) > ALIGNED)),
        "test_mse_measured": float(np.mean((data.yt - f_test) ** 2)),
        "train_mse": float(np.mean((T * cp.tbar) ** 2)),
    }


def group_log_bases(setting: Setting, data: Inputs, closure: ParticleClosure, pilot: Couplings) -> list[np.ndarray]:
    """log c_i of each of GROUPS disjoint groups of chains (−∞ outside the group): each group's own node weights
    (Bennett ratios from its chains alone) and reweighting from the pilot. They depend on the particles and the
    pilot only, so one set serves every exponent vector x solved on these particles."""
    pts = closure.particles
    J = len(pts.rho_nodes)
    W_all, E_all, node_all, chain_all = pts.every
    # the trapezoid weights (up to the common h) and the prior of ρ, then each group's own Z_j
    log_prior = np.log(np.where(np.arange(J) == 0, 1.0, 2.0)) - 0.5 * pts.rho_nodes**2 * setting.D / setting.sigma_w2
    out = []
    for g in range(GROUPS):
        mask = pts.chain % GROUPS == g
        sel = chain_all % GROUPS == g
        log_z = node_log_z(pilot, data.X, W_all[sel], node_all[sel], pts.rho_nodes, E_all[sel])
        counts = np.bincount(pts.node[mask], minlength=J)
        base = np.full(len(pts.node), -np.inf)
        base[mask] = (log_prior + log_z)[pts.node[mask]] - np.log(counts[pts.node[mask]]) - pts.E_pilot[mask]
        out.append(base)
    return out


def monte_carlo_errors(setting: Setting, data: Inputs, closure: ParticleClosure, pilot: Couplings, x: np.ndarray,
                       T: float, bases: list[np.ndarray] | None = None) -> dict[str, float]:
    """Standard errors from GROUPS disjoint groups of chains, each a complete estimate at the solution's exponents
    (``bases``: :func:`group_log_bases`, computed here when not given)."""
    if bases is None:
        bases = group_log_bases(setting, data, closure, pilot)
    values = [observables(setting, data, closure, x, T, base + x) for base in bases]
    return {k: float(np.std([v[k] for v in values], ddof=1) / np.sqrt(GROUPS)) for k in values[0]}


def free_entropy(setting: Setting, data: Inputs, closure: ParticleClosure, pilot: Couplings, x: np.ndarray,
                 T: float, prior_draws: int = 4000, log_z0: float | None = None) -> float:
    """Ψ(K) = log N(y; 0, K + T) − Tr[G K] + N log z(K), G = ½(t̄t̄ᵀ − (K + T)⁻¹), z = ∫ p0 exp E: the tree level's
    log evidence at the solution's kernel. Its K-gradient vanishes exactly at the closure, and between solutions
    the equilibrium is the one with the larger Ψ. log z comes from the particles' node weights (relative to node 0)
    and Z_0 of the pilot (``log_z0``, :func:`pilot_log_z0` when not given)."""
    K = closure.kernel(x)
    cp = Couplings.of(K, data.y, T, setting.s_a2)
    M = K + T * np.eye(len(data.y))
    logdet = np.linalg.slogdet(M)[1]
    log_evidence = -0.5 * data.y @ cp.tbar - 0.5 * logdet - 0.5 * len(data.y) * np.log(2 * np.pi)
    trace_GK = 0.5 * (cp.tbar @ K @ cp.tbar - np.sum(cp.A * K))
    if log_z0 is None:
        log_z0 = pilot_log_z0(setting, data, pilot, prior_draws)
    # log_base carries the trapezoid weight, −ρ²D/(2σ_w²) and log Z_j/Z_0 (see the sampler): add Z_0 and the
    # normalisation of the prior of ρ
    D = setting.D
    log_z = float(logsumexp(closure.log_base + x)) + log_z0 - 0.5 * np.log(2 * np.pi * setting.sigma_w2 / D)
    return float(log_evidence - trace_GK + setting.N * log_z)


def pilot_log_z0(setting: Setting, data: Inputs, pilot: Couplings, prior_draws: int = 4000) -> float:
    """log Z_0 of the pilot law (node ρ = 0) by importance sampling from the prior, where E hardly varies."""
    D = setting.D
    rng = np.random.default_rng(12345)
    W0 = np.zeros((prior_draws, D))
    W0[:, 1:] = np.sqrt(setting.sigma_w2 / D) * rng.standard_normal((prior_draws, D - 1))
    return float(logsumexp(pilot.exponent(erf(W0 @ data.X.T))) - np.log(prior_draws))


def reweighting_ess(particles: Particles, x: np.ndarray, closure: ParticleClosure) -> float:
    """The mass-weighted fraction of each node's samples that the reweighting from the pilot keeps (Kish)."""
    J = len(particles.rho_nodes)
    mass = node_masses(closure.log_base + x, particles.node, J)
    frac = np.zeros(J)
    for j in range(J):
        d = (x - particles.E_pilot)[particles.node == j]
        w = np.exp(d - d.max())
        frac[j] = w.sum() ** 2 / (w @ w) / len(d)
    return float(mass @ frac)


def solve_point(setting: Setting, data: Inputs, T: float, pilot_K: np.ndarray, sampler: SamplerSettings,
                stages: int = 2) -> Point:
    """The closure at T in ``stages`` stages from the pilot kernel (see the module's docstring)."""
    with one_blas_thread():  # P × P algebra: one thread is faster, and far faster on shared cores
        return _solve_point(setting, data, T, pilot_K, sampler, stages)


def _solve_point(setting: Setting, data: Inputs, T: float, pilot_K: np.ndarray, sampler: SamplerSettings,
                 stages: int) -> Point:
    K = pilot_K
    history = []
    res = None
    for stage in range(stages):
        pilot = Couplings.of(K, data.y, T, setting.s_a2)
        particles = sample(pilot, data.X, setting.sigma_w2, replace(sampler, seed=sampler.seed + 7919 * stage))
        closure = ParticleClosure(particles, data.X, data.y, setting.N, setting.s_a2)
        res = solve_at(closure.problem(particles.E_pilot), T, particles.E_pilot, OPTIONS)
        history.append({"stage": stage, "status": res.status.value, "iterations": res.iterations,
                        "residual": res.residual, "ess_fraction": reweighting_ess(particles, res.x, closure),
                        "min_acceptance": float(particles.acceptance.min())})
        if not res.converged:
            break
        K = closure.kernel(res.x)
    assert res is not None
    obs = observables(setting, data, closure, res.x, T)
    errors = monte_carlo_errors(setting, data, closure, pilot, res.x, T) if res.converged else {}
    if res.converged:
        obs["free_entropy"] = free_entropy(setting, data, closure, pilot, res.x, T)
    masses = node_masses(closure.log_base + res.x, particles.node, len(particles.rho_nodes))
    diagnostics = {"stages": history, "standard_errors": errors, "rho_nodes": particles.rho_nodes.tolist(),
                   "rho_marginal": masses.tolist(), "edge_mass": float(masses[-1]), "particles": len(res.x)}
    return Point(T, bool(res.converged), closure.kernel(res.x) if res.converged else K, obs, diagnostics)


def aligned_kernel(setting: Setting, data: Inputs, rho: float, draws: int = 4000, seed: int = 0) -> np.ndarray:
    """N s_a2 E[φφᵀ] for every neuron at ρ = ``rho`` with a prior w⊥: a start on the side of the aligned wells."""
    rng = np.random.default_rng(seed)
    W = np.sqrt(setting.sigma_w2 / setting.D) * rng.standard_normal((draws, setting.D))
    W[:, 0] = rho
    phi = erf(W @ data.X.T)
    return setting.N * setting.s_a2 * phi.T @ phi / draws


def trace(setting: Setting, temperatures: list[float], sampler: SamplerSettings | None = None,
          stages: int = 2, refinements: int = 3, start: np.ndarray | None = None) -> list[Point]:
    """The branch continued in T from ``start`` (default: the NNGP kernel) at the first temperature, each point from
    the previous one.

    A point that does not converge is retried from the last solution at temperatures halfway in between (at most
    ``refinements`` halvings); if that fails too the branch ends there, and the last point says why.
    """
    sampler = sampler or SamplerSettings()
    data = Inputs.of(setting)
    K = nngp_kernel(data.X, data.X, setting.sigma_w2, setting.N * setting.s_a2) if start is None else start
    out: list[Point] = []
    last_T = None
    for T in temperatures:
        targets, tries = [T], 0
        while targets:
            t = targets[-1]
            pt = solve_point(setting, data, t, K, sampler, stages)
            if pt.converged:
                out.append(pt)
                K, last_T = pt.K, t
                targets.pop()
                continue
            if last_T is None or tries >= refinements:
                pt.diagnostics["branch_end"] = "solver_failure"
                out.append(pt)
                return out
            tries += 1
            targets.append(0.5 * (last_T + t))
    return out
