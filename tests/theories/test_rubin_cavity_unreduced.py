"""The unreduced tree level of ``finite_sample`` against computations that share none of its numerics.

* brute force at D = 2: the single-neuron law on a fine (ρ, w⊥) grid, its closure solved by scipy's root finder on
  the entries of K, against the particle solver (stratified MALA, Bennett node weights, Newton on exponents);
* the GP limit (N → ∞ at fixed N s_a2): the law is the prior, the kernel Williams' arcsin kernel, the predictor the
  GP's;
* the single-neuron expectations at a fixed kernel, against the same grid;
* the served treatment's stated standard errors against the spread over independent particle sets.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import root
from scipy.special import erf

from solvers.core.options import SolverOptions
from solvers.theories import get
from solvers.theories.rubin_cavity import FiniteSampleSpec
from solvers.theories.rubin_cavity.finite_sample.unreduced.law import Couplings, nngp_kernel
from solvers.theories.rubin_cavity.finite_sample.unreduced.problem import ParticleClosure
from solvers.theories.rubin_cavity.finite_sample.unreduced.sampler import SamplerSettings, sample
from solvers.theories.rubin_cavity.finite_sample.unreduced.solve import Inputs, Setting, solve_point

SMALL = Setting(P=6, D=2, N=4.0, s_a2=0.3, sigma_w2=0.5, epsilon=-0.3, P_test=50, seed=3)
T_SMALL = 0.2
SAMPLER = SamplerSettings(rho_max=2.5, nodes=16, chains=12, samples=12, burn_in=150, thin=4, seed=1)


def grid_law(X: np.ndarray, y: np.ndarray, K: np.ndarray, T: float, s: Setting, n: int = 801):
    """Nodes w on a uniform grid of [−4σ, 4σ]² beyond which the tilted law has no mass here, with their weights."""
    sd = math.sqrt(s.sigma_w2 / s.D)
    r = np.linspace(-7 * sd, 7 * sd, n)
    W = np.stack(np.meshgrid(r, r, indexing="ij"), axis=-1).reshape(-1, 2)
    phi = erf(W @ X.T)
    A = np.linalg.inv(K + T * np.eye(len(y)))
    tbar = A @ y
    E = 0.5 * s.s_a2 * ((phi @ tbar) ** 2 - np.einsum("ij,jk,ik->i", phi, A, phi))
    logp = -0.5 * np.sum(W * W, axis=1) / sd**2 + E
    p = np.exp(logp - logp.max())
    return W, phi, p / p.sum()


def brute_force_free_entropy(data: Inputs, s: Setting, K: np.ndarray, T: float, n: int = 801) -> float:
    """log N(y; 0, K + T) − ½ Tr[(t̄t̄ᵀ − (K + T)⁻¹) K] + N log ∫ p0(w) exp E(w) dw, the integral on the grid."""
    sd = math.sqrt(s.sigma_w2 / s.D)
    r = np.linspace(-7 * sd, 7 * sd, n)
    W = np.stack(np.meshgrid(r, r, indexing="ij"), axis=-1).reshape(-1, 2)
    phi = erf(W @ data.X.T)
    M = K + T * np.eye(s.P)
    A = np.linalg.inv(M)
    tbar = A @ data.y
    E = 0.5 * s.s_a2 * ((phi @ tbar) ** 2 - np.einsum("ij,jk,ik->i", phi, A, phi))
    log_p0 = -0.5 * np.sum(W * W, axis=1) / sd**2 - np.log(2 * np.pi * sd**2)
    log_z = float(np.log(np.sum(np.exp(log_p0 + E)) * (r[1] - r[0]) ** 2))
    evidence = -0.5 * data.y @ tbar - 0.5 * np.linalg.slogdet(M)[1] - 0.5 * s.P * math.log(2 * math.pi)
    return float(evidence - 0.5 * (tbar @ K @ tbar - np.sum(A * K)) + s.N * log_z)


def brute_force_fixed_point(data: Inputs, s: Setting, T: float) -> tuple[np.ndarray, np.ndarray]:
    P = s.P
    iu = np.triu_indices(P)

    def kernel_of(k: np.ndarray) -> np.ndarray:
        K = np.zeros((P, P))
        K[iu] = k
        return K + np.triu(K, 1).T

    def F(k: np.ndarray) -> np.ndarray:
        _, phi, p = grid_law(data.X, data.y, kernel_of(k), T, s, n=301)
        return (s.N * s.s_a2 * (phi.T * p) @ phi)[iu] - k

    K0 = nngp_kernel(data.X, data.X, s.sigma_w2, s.N * s.s_a2)
    sol = root(F, K0[iu], method="hybr", tol=1e-11)
    assert sol.success, sol.message
    K = kernel_of(sol.x)
    W, _, p = grid_law(data.X, data.y, K, T, s)
    return K, p @ W[:, 0] ** 2


def test_single_neuron_expectations_match_grid_quadrature() -> None:
    data = Inputs.of(SMALL)
    rng = np.random.default_rng(0)
    B = rng.standard_normal((SMALL.P, SMALL.P))
    K = 0.3 * B @ B.T / SMALL.P + nngp_kernel(data.X, data.X, SMALL.sigma_w2, SMALL.N * SMALL.s_a2)
    W, phi, p = grid_law(data.X, data.y, K, T_SMALL, SMALL)
    exact_R = float(p @ W[:, 0] ** 2)
    exact_C = (phi.T * p) @ phi
    cp = Couplings.of(K, data.y, T_SMALL, SMALL.s_a2)
    particles = sample(cp, data.X, SMALL.sigma_w2, SAMPLER)
    closure = ParticleClosure(particles, data.X, data.y, SMALL.N, SMALL.s_a2)
    w = closure.weights(particles.E_pilot)
    R = float(w @ particles.W[:, 0] ** 2)
    C = (closure.phi.T * w) @ closure.phi
    # The law is tilted well away from the prior here (else the check would be the prior's)
    prior_R = SMALL.sigma_w2 / SMALL.D
    assert abs(exact_R / prior_R - 1.0) > 0.2
    assert pytest.approx(exact_R, rel=0.02) == R
    assert np.linalg.norm(C - exact_C) < 0.02 * np.linalg.norm(exact_C)


def test_closure_matches_brute_force_fixed_point_at_d2() -> None:
    data = Inputs.of(SMALL)
    K_exact, R_exact = brute_force_fixed_point(data, SMALL, T_SMALL)
    pilot = nngp_kernel(data.X, data.X, SMALL.sigma_w2, SMALL.N * SMALL.s_a2)
    pt = solve_point(SMALL, data, T_SMALL, pilot, SAMPLER, stages=2)
    assert pt.converged
    se = pt.diagnostics["standard_errors"]
    # The Monte-Carlo error is small enough that a 5 % shift is many standard errors.
    assert se["R"] < 0.0125 * R_exact
    assert pt.observables["R"] == pytest.approx(R_exact, abs=max(4 * se["R"], 0.005 * R_exact), rel=0)
    b_exact, c_exact = np.linalg.lstsq(np.column_stack([data.X[:, 0], data.X[:, 0] ** 3 - 3 * data.X[:, 0]]),
                                       T_SMALL * np.linalg.solve(K_exact + T_SMALL * np.eye(SMALL.P), data.y),
                                       rcond=None)[0]
    for name, exact in (("b", b_exact), ("c", c_exact)):
        assert se[name] < 0.0125 * abs(exact)  # so that a 5 % shift is at least four standard errors
        assert pt.observables[name] == pytest.approx(exact, abs=max(3 * se[name], 0.005 * abs(exact)))
    # The free entropy (log evidence at tree level) that ranks solutions: 0.03 apart here, a 5 % shift is 0.26.
    assert pt.observables["free_entropy"] == pytest.approx(brute_force_free_entropy(data, SMALL, K_exact, T_SMALL),
                                                           abs=0.1)
    # K entry by entry carries the particles' noise (about 2 % in Frobenius norm here); E[φφᵀ] at a fixed kernel
    # is checked against the grid in the test above.


def test_gp_limit_is_the_arcsin_kernel_and_its_predictor() -> None:
    """N → ∞ at fixed N s_a2: E = O(s_a2) → 0, the law is the prior and K Williams' kernel."""
    s = Setting(P=40, D=8, N=1e7, s_a2=1e-7, sigma_w2=0.5, epsilon=-0.3, P_test=50, seed=2)
    data = Inputs.of(s)
    K_gp = nngp_kernel(data.X, data.X, s.sigma_w2, s.N * s.s_a2)
    sampler = SamplerSettings(rho_max=1.25, nodes=11, chains=16, samples=12, burn_in=100, thin=4)
    # A deliberately wrong pilot (twice the kernel): the closure must still return the prior's kernel.
    pt = solve_point(s, data, 0.5, 2.0 * K_gp, sampler, stages=1)
    assert pt.converged
    # K itself carries the particles' Monte-Carlo noise entry by entry (about 10 % in Frobenius norm here); the
    # predictor averages it out, and R depends on the node weights alone.
    assert pt.observables["R"] == pytest.approx(s.sigma_w2 / s.D, rel=0.03)
    rbar = 0.5 * np.linalg.solve(K_gp + 0.5 * np.eye(s.P), data.y)
    z = data.X[:, 0]
    b_gp, c_gp = np.linalg.lstsq(np.column_stack([z, z**3 - 3 * z]), rbar, rcond=None)[0]
    assert pt.observables["b"] == pytest.approx(b_gp, rel=0.02)
    assert pt.observables["c"] == pytest.approx(c_gp, rel=0.02)


def test_served_standard_errors_match_the_spread_over_sampler_seeds() -> None:
    """``treatment: "tree_level_unreduced"`` states batch-means errors (four groups of chains, each group's fixed point
    re-solved). Ten independent particle sets (sampler seeds) give the actual spread of R and b, which the stated
    errors must match within a factor 2 (measured ratios 1.02 for R and 1.40 for b; ten seeds know a spread to about
    ±25 % and four groups an error to about ±40 %, averaged over ten to ±15 %)."""
    theory = get("rubin_cavity")
    R, b, R_se, b_se = [], [], [], []
    for seed in range(10):
        spec = FiniteSampleSpec.model_validate({
            "theory": "rubin_cavity", "mode": "finite_sample", "treatment": "tree_level_unreduced", "P": 20, "D": 4,
            "N": 20.0, "s_a2": 0.05, "T": 0.3, "P_test": 20, "seed": 3,
            "particles": {"nodes": 9, "chains": 8, "samples": 4, "burn_in": 40, "thin": 2, "rho_max": 2.5,
                          "seed": seed}})
        eq = theory.solve(spec, SolverOptions()).equilibrium_branch
        assert eq is not None and eq.converged
        R.append(eq.report.order_parameters["R"])
        b.append(eq.report.order_parameters["b"])
        R_se.append(eq.report.observables["R_stderr"])
        b_se.append(eq.report.observables["b_stderr"])
    for values, errors in ((R, R_se), (b, b_se)):
        ratio = np.std(values, ddof=1) / np.sqrt(np.mean(np.square(errors)))
        assert 0.5 < ratio < 2.0, ratio
