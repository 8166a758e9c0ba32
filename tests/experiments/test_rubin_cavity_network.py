"""The rubin_cavity network: its log-posterior, the integrated-out readout, the shared data set, and
the sampled posterior on both sides of the theory's transition."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import erf
from scipy.stats import multivariate_normal

from solvers.core.options import SolverOptions
from solvers.theories.rubin_cavity import THEORY
from solvers.theories.rubin_cavity.experiment import ExperimentSizes, build_target, theory_observables
from solvers.theories.rubin_cavity.finite_sample.data import sample
from solvers.theories.rubin_cavity.specs import FiniteSampleSpec, PotentialSpec, SelfConsistentSpec
from tests.experiments.sampling_helpers import product, run_nuts

jax.config.update("jax_enable_x64", True)


def _finite(**fields: object) -> FiniteSampleSpec:
    body = {"theory": "rubin_cavity", "mode": "finite_sample", "D": 5, "N": 3, "P": 7, "P_test": 4, "T": 0.4,
            "s_a2": 0.3, "sigma_w2": 0.7, "epsilon": -0.3, "seed": 3, **fields}
    return FiniteSampleSpec.model_validate(body)


def _inputs(spec: FiniteSampleSpec) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(spec.seed)  # the documented stream: training inputs, then test inputs
    return rng.standard_normal((spec.P, spec.D)), rng.standard_normal((spec.P_test, spec.D))


def _teacher(z: np.ndarray, eps: float) -> np.ndarray:
    return z + eps * (z**3 - 3 * z)


@pytest.mark.parametrize("N", [3, 9])  # N < P and N ≥ P: both Cholesky forms
def test_log_posterior_equals_the_formula(N: int) -> None:
    spec = _finite(N=N)
    target = build_target(spec)
    X, _ = _inputs(spec)
    y = _teacher(X[:, 0], spec.epsilon)
    rng = np.random.default_rng(0)
    for _ in range(3):
        theta = rng.standard_normal(target.dim) * 0.5
        W = theta.reshape(N, spec.D)
        prior = -spec.D / (2 * spec.sigma_w2) * np.sum(W**2)
        phi = erf(X @ W.T)
        lik = multivariate_normal(np.zeros(spec.P), spec.s_a2 * phi @ phi.T + spec.T * np.eye(spec.P)).logpdf(y)
        assert float(target.log_prior(jnp.asarray(theta))) == pytest.approx(prior, rel=1e-12)
        assert float(target.log_likelihood(jnp.asarray(theta))) == pytest.approx(lik, rel=1e-10)


def test_integrated_readout_equals_monte_carlo_over_the_readout() -> None:
    """Evidence and (b, c) against 4·10⁵ readout draws a ~ N(0, s_a2 I), weighted by the likelihood."""
    spec = _finite(N=2, P=6)
    target = build_target(spec)
    X, _ = _inputs(spec)
    z = X[:, 0]
    y = _teacher(z, spec.epsilon)
    theta = np.random.default_rng(1).standard_normal(target.dim) * 0.6
    phi = erf(X @ theta.reshape(2, spec.D).T)
    a = np.random.default_rng(2).standard_normal((400_000, 2)) * np.sqrt(spec.s_a2)
    f = a @ phi.T
    like = np.exp(-0.5 * np.sum((y - f) ** 2, 1) / spec.T) / (2 * np.pi * spec.T) ** (spec.P / 2)
    evidence, se = like.mean(), like.std() / np.sqrt(like.size)
    assert abs(np.exp(float(target.log_likelihood(jnp.asarray(theta)))) - evidence) < 5 * se

    H = np.column_stack([z, z**3 - 3 * z])
    bc_draws = (y - f) @ np.linalg.pinv(H).T  # (draws, 2): projection of each residual
    w = like / like.sum()
    est = target.estimators(jnp.asarray(theta))
    bc_mc = w @ bc_draws
    bc_se = np.sqrt(w**2 @ (bc_draws - bc_mc) ** 2)  # self-normalised importance-sampling error
    assert abs(float(est["b"]) - bc_mc[0]) < 5 * bc_se[0]
    assert abs(float(est["c"]) - bc_mc[1]) < 5 * bc_se[1]


def test_network_sees_the_theory_training_set() -> None:
    spec = _finite(P=11, D=6, seed=9)
    target = build_target(spec)
    data = sample(spec.P, spec.D, spec.P_test, spec.seed)
    X, Xt = _inputs(spec)
    assert np.array_equal(X[:, 0], data.train.z) and np.array_equal(Xt[:, 0], data.test.z)
    # the estimators' ρ is w·e₁ with e₁ the theory's teacher direction: a weight along e₁ has R = |w|²
    theta = np.zeros(target.dim)
    theta[:: spec.D] = 0.8
    est = target.estimators(jnp.asarray(theta))
    assert float(est["R"]) == pytest.approx(0.64)
    assert float(est["weight_covariance.perpendicular"]) == 0.0
    assert float(est["aligned_fraction"]) == 1.0


def test_test_set_projection_is_the_least_squares_fit_of_the_test_discrepancy() -> None:
    """b_test, c_test: the readout's posterior mean by numpy, the discrepancy on the test inputs, np.linalg.lstsq."""
    spec = _finite(N=4, P=30, P_test=25)
    target = build_target(spec)
    X, Xt = _inputs(spec)
    theta = np.random.default_rng(4).standard_normal(target.dim) * 0.5
    W = theta.reshape(4, spec.D)
    phi, phi_t = erf(X @ W.T), erf(Xt @ W.T)
    y = _teacher(X[:, 0], spec.epsilon)
    mean = np.linalg.solve(np.eye(4) / spec.s_a2 + phi.T @ phi / spec.T, phi.T @ y) / spec.T
    z = Xt[:, 0]
    bc = np.linalg.lstsq(np.column_stack([z, z**3 - 3 * z]), _teacher(z, spec.epsilon) - phi_t @ mean, rcond=None)[0]
    est = target.estimators(jnp.asarray(theta))
    assert float(est["b_test"]) == pytest.approx(bc[0], rel=1e-10)
    assert float(est["c_test"]) == pytest.approx(bc[1], rel=1e-10)


def test_theory_names_match_the_estimators() -> None:
    for spec in (
        _finite(D=8, N=4, P=40, P_test=20),
        SelfConsistentSpec.model_validate({"theory": "rubin_cavity", "mode": "self_consistent", "D": 8, "N": 4,
                                           "P": 40, "T": 0.5, "s_a2": 0.01}),
    ):
        target = build_target(spec, ExperimentSizes(P_test=20))
        est = target.estimators(target.init["prior"](jax.random.PRNGKey(0)))
        assert target.derived is not None
        names = {**est, **target.derived(est)}
        theory = theory_observables(THEORY.solve(spec, SolverOptions()))
        assert {"b", "c", "R", "test_mse"} <= set(theory) <= set(names), (set(theory), set(names))


def test_invalid_networks_are_refused() -> None:
    with pytest.raises(ValueError, match="mode"):
        build_target(PotentialSpec.model_validate({"theory": "rubin_cavity", "mode": "potential"}))
    with pytest.raises(ValueError, match="N"):
        build_target(_finite(N=2.5))


@pytest.mark.slow
def test_aligned_neurons_appear_past_the_transition() -> None:
    """D = 40, N = 20, P = 240, σ_w² = 0.5, s_a2 = 2.08/N², ε = −0.3 (u/η = P/(TN) as in the paper's setting).

    The finite_sample theory on the same data puts the transition between T = 0.35 (GFL) and T = 0.3
    (GMFL-I). Below it (T = 1, u = 7.5) no neuron aligns and R stays at the prior scale O(1/D); above it
    (T = 0.2, u = 187) aligned wells at |ρ| ≈ 1 are populated and R grows to O(1) per aligned neuron (ρ² ≈ 1).
    """
    base = {"D": 40, "N": 20, "P": 240, "P_test": 100, "s_a2": 2.08 / 400, "sigma_w2": 0.5, "epsilon": -0.3,
            "seed": 0}
    sizes = ExperimentSizes(aligned_threshold=0.6, rho_bins=20, rho_range=1.5)
    targets = {"below": build_target(_finite(**base, T=1.0), sizes), "above": build_target(_finite(**base, T=0.2),
                                                                                              sizes)}
    run = run_nuts(product(targets), warmup=150, draws=150)
    assert run.divergences == 0
    R = {k: run.estimate(f"{k}/R") for k in targets}
    aligned = {k: run.estimate(f"{k}/aligned_fraction") for k in targets}
    hist = {k: run.estimate(f"{k}/rho_histogram") for k in targets}
    for k in targets:
        assert R[k].rhat < 1.05 and aligned[k].rhat < 1.05, (k, R[k], aligned[k])
    prior_R, N = 0.5 / 40, 20
    # below: no aligned neuron, R of the prior's order (the GFL centre well is only wider by an O(1) factor)
    assert N * aligned["below"].mean < 0.25 + 4 * N * aligned["below"].mcse
    assert R["below"].mean < 8 * prior_R
    # above: on average at least one aligned neuron, R more than twice as large as below
    assert N * aligned["above"].mean > 1.0 + 4 * N * aligned["above"].mcse
    assert R["above"].mean - 2 * R["below"].mean > 4 * np.hypot(R["above"].mcse, 2 * R["below"].mcse)
    # the aligned wells are separate: bins of width 0.15; |ρ| in [0.45, 0.6) is emptier than [0.9, 1.2)
    h = hist["above"].mean
    edges = np.linspace(-1.5, 1.5, 21)
    centres = 0.5 * (edges[1:] + edges[:-1])
    gap, well = (np.abs(centres) > 0.45) & (np.abs(centres) < 0.6), (np.abs(centres) > 0.9) & (np.abs(centres) < 1.2)
    assert h[gap].sum() < h[well].sum()
