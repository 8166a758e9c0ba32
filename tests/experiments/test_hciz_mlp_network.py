"""The hciz_mlp teacher–student network: its σ against the theory's Hermite data, its log-posterior,
its estimators at the teacher, and sampled posteriors against the universal and specialised branches."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import erf

from solvers.core.options import SolverOptions
from solvers.numerics.hermite import gauss_legendre_halflines
from solvers.theories.hciz_mlp import THEORY
from solvers.theories.hciz_mlp.experiment import ExperimentSizes, activation, build_target, theory_observables
from solvers.theories.hciz_mlp.spec import HCIZSpec, build_activation
from tests.experiments.sampling_helpers import product, run_nuts
from tests.payloads import solve_json

jax.config.update("jax_enable_x64", True)

DEEP_ACT = {"name": "tanh2", "remove_linear": True, "unit_variance": True}


def _spec(**fields: object) -> HCIZSpec:
    body = {"theory": "hciz_mlp", "activation": "he2_he3", "gamma": 0.5, "alpha": 0.5, "Delta": 0.2, **fields}
    return HCIZSpec.model_validate(body)


@pytest.mark.parametrize(
    "act",
    ["relu", "tanh", "tanh2", "erf", "quadratic", "he2", "he3", "he2_he3", "elu",
     {"name": "relu", "remove_linear": True, "unit_variance": True}, DEEP_ACT, {"hermite": [0.3, -0.5, 0.8, 0.2, 0.1]}],
)
def test_network_activation_has_the_theory_hermite_coefficients(act: object) -> None:
    """μ0…μ3 and E σ² of the network's σ (fixed quadrature) equal the theory's Hermite data for the spec."""
    spec = _spec(activation=act)
    sigma = activation(spec.activation)
    theory = build_activation(spec.activation)
    z, w = gauss_legendre_halflines(400)
    s = np.asarray(sigma(jnp.asarray(z)))
    he = [np.ones_like(z), z, z**2 - 1, z**3 - 3 * z]
    mu = [float(w @ (s * h)) for h in he]
    assert mu == pytest.approx([theory.mu0, theory.mu1, theory.mu2, theory.leading[3]], abs=1e-7)
    assert float(w @ s**2) == pytest.approx(theory.second_moment, rel=1e-7)


def _np_forward(weights: list[np.ndarray], v: np.ndarray, X: np.ndarray, sigma: Callable) -> np.ndarray:
    h = X
    for W in weights:
        h = sigma(h @ W.T / np.sqrt(h.shape[1]))
    return h @ v / np.sqrt(len(v))


@pytest.mark.parametrize(
    ("fields", "sigma"),
    [
        ({"activation": "erf", "readout": "ones"}, erf),
        ({"activation": "he2_he3", "readout": "four_point"}, lambda x: (x**2 - 1) / np.sqrt(2) + (x**3 - 3 * x) / 6),
        ({"activation": "tanh", "readout": "gaussian", "gamma": 0.75}, np.tanh),
    ],
)
def test_log_posterior_equals_the_formula(fields: dict, sigma: Callable) -> None:
    """One hidden layer: regenerate teacher, readouts and data from the documented seed streams."""
    spec, d, seed = _spec(**fields), 8, 5
    target = build_target(spec, ExperimentSizes(d=d, n_test=10), seed=seed)
    k, n = round(spec.gammas[0] * d), round(spec.alpha * d * d)
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)]
    W0 = streams[0].standard_normal((k, d))
    v = _readouts(spec.readout, k, streams[1])
    X = streams[2].standard_normal((n, d))
    y = _np_forward([W0], v, X, sigma) + np.sqrt(spec.Delta) * streams[3].standard_normal(n)
    assert np.allclose(np.abs(v), target.info["v"])
    rng = np.random.default_rng(0)
    for _ in range(3):
        theta = rng.standard_normal(target.dim)
        W = theta.reshape(k, d)
        lik = -0.5 * np.sum((y - _np_forward([W], v, X, sigma)) ** 2) / spec.Delta
        assert float(target.log_prior(jnp.asarray(theta))) == pytest.approx(-0.5 * np.sum(theta**2), rel=1e-12)
        assert float(target.log_likelihood(jnp.asarray(theta))) == pytest.approx(lik, rel=1e-10)
        assert target.minibatch_log_likelihood is not None
        full = target.minibatch_log_likelihood(jnp.asarray(theta), jnp.arange(n))
        assert float(full) == pytest.approx(lik, rel=1e-10)
        half = [target.minibatch_log_likelihood(jnp.asarray(theta), jnp.arange(n)[i::2]) for i in (0, 1)]
        assert 0.5 * float(half[0] + half[1]) == pytest.approx(lik, rel=1e-10)  # unbiased: batches average out


def _readouts(name: str, k: int, rng: np.random.Generator) -> np.ndarray:
    if name == "ones":
        return np.ones(k)
    if name == "gaussian":
        return rng.standard_normal(k)
    return rng.choice(np.array([-3.0, -1.0, 1.0, 3.0]) / np.sqrt(5.0), size=k)


def test_deep_log_likelihood_equals_the_formula() -> None:
    """h₁ = σ(W₁x/√d), h₂ = σ(W₂h₁/√k₁), f = v·h₂/√k₂ with unequal widths."""
    spec = _spec(activation=DEEP_ACT, depth=2, gamma=[0.75, 0.5], readout="ones")
    d, seed = 8, 2
    target = build_target(spec, ExperimentSizes(d=d, n_test=10), seed=seed)
    k1, k2, n = 6, 4, round(spec.alpha * d * d)
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)]
    W0 = [streams[0].standard_normal((k1, d)), streams[0].standard_normal((k2, k1))]
    X = streams[2].standard_normal((n, d))
    z, w = gauss_legendre_halflines(400)
    mu1 = float(w @ (np.tanh(2 * z) * z))
    var = float(w @ np.tanh(2 * z) ** 2) - mu1**2

    def sigma(x: np.ndarray) -> np.ndarray:  # tanh(2x) without its linear part, unit variance
        return (np.tanh(2 * x) - mu1 * x) / np.sqrt(var)

    v = np.ones(k2)
    y = _np_forward(W0, v, X, sigma) + np.sqrt(spec.Delta) * streams[3].standard_normal(n)
    theta = np.random.default_rng(1).standard_normal(target.dim)
    W = [theta[: k1 * d].reshape(k1, d), theta[k1 * d :].reshape(k2, k1)]
    lik = -0.5 * np.sum((y - _np_forward(W, v, X, sigma)) ** 2) / spec.Delta
    assert float(target.log_likelihood(jnp.asarray(theta))) == pytest.approx(lik, rel=1e-10)
    assert target.sampled == (("W1", k1 * d), ("W2", k2 * k1))


@pytest.mark.parametrize(
    "fields", [{"readout": "ones"}, {"readout": "four_point"}, {"depth": 2, "activation": DEEP_ACT}]
)
def test_the_teacher_has_the_theory_self_overlaps(fields: dict) -> None:
    spec = _spec(**fields)
    target = build_target(spec, ExperimentSizes(d=10, n_test=50), seed=1)
    est = target.estimators(target.init["teacher"](jax.random.PRNGKey(0)))
    assert float(est["generalization_error"]) == 0.0
    assert float(est["Q_weighted"]) == pytest.approx(1.0)
    assert float(est["Q_matched"]) == pytest.approx(1.0)
    if spec.depth == 1:
        assert np.allclose(est["Q"], 1.0)
        v_mean = 1.0 if spec.readout == "ones" else 0.0
        assert float(est["R2"]) == pytest.approx(1.0 + spec.gammas[0] * v_mean**2)
    else:
        assert float(est["Q_1"]) == pytest.approx(1.0) and float(est["Q_2"]) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "fields", [{"readout": "ones"}, {"readout": "four_point"}, {"readout": "gaussian"},
               {"depth": 2, "activation": DEEP_ACT, "alpha": 2.0}]
)
def test_theory_names_match_the_estimators(fields: dict) -> None:
    spec = _spec(**fields)
    target = build_target(spec, ExperimentSizes(d=10, n_test=20))
    est = target.estimators(target.init["prior"](jax.random.PRNGKey(0)))
    report = solve_json(THEORY, spec, SolverOptions())
    for branch in [None, *[b["name"] for b in report["branches"]]]:
        theory = theory_observables(report, branch=branch)
        assert "generalization_error" in theory and set(theory) <= set(est), (set(theory), set(est))
        for key, value in theory.items():
            assert np.shape(value) == np.shape(est[key]), key


def test_invalid_networks_are_refused() -> None:
    sizes = ExperimentSizes(d=6)
    with pytest.raises(ValueError, match="weight_prior"):
        build_target(_spec(weight_prior="rademacher"), sizes)
    with pytest.raises(ValueError, match="Delta"):
        build_target(_spec(Delta=0.0), sizes)
    with pytest.raises(ValueError, match="activation"):
        build_target(_spec(activation="sign"), sizes)


# ---- sampled posteriors --------------------------------------------------------------------------
@pytest.mark.slow
def test_prior_start_at_small_alpha_is_the_universal_branch() -> None:
    """he2_he3, γ = 1/2, Δ = 0.1, α = 1/4 (only the universal branch exists), d = 16 (k = 8, n = 64).

    The generalisation error is averaged over 3 independent teachers and data sets (sampled as one
    product target); its error is the spread between them (which contains the Monte-Carlo errors). Finite-
    size allowance K_d/d: the finite network's self-overlap exceeds R_d by 1/d (the diagonal of WᵀW), and
    the matrix-denoising error at finite d carries an O(1/d) bias (≤ 3 mmse/d in its Monte Carlo tests).
    """
    spec = _spec(alpha=0.25, Delta=0.1, readout="ones")
    d, m = 16, 3
    targets = {f"s{i}": build_target(spec, ExperimentSizes(d=d, n_test=2000), seed=i) for i in range(m)}
    run = run_nuts(product(targets), warmup=150, draws=200)
    universal = theory_observables(solve_json(THEORY, spec, SolverOptions()), branch="universal")
    est = [run.estimate(f"s{i}/generalization_error") for i in range(m)]
    assert run.divergences == 0 and all(e.rhat < 1.05 for e in est)
    eps = np.array([float(e.mean) for e in est])
    se = eps.std(ddof=1) / math.sqrt(m)
    K_d = 2.0 * (1 + 0.5) / 2 + 1 / 6  # μ2² R_d/2 + g(1) for He2/√2 + He3/6 (μ2 = √2, g(1) = 1/6), v = 1
    assert abs(eps.mean() - universal["generalization_error"]) < 4 * se + K_d / d, (eps, universal)
    Q = np.array([float(run.estimate(f"s{i}/Q").mean) for i in range(m)])
    assert abs(Q.mean()) < 4 * Q.std(ddof=1) / math.sqrt(m) + 1 / math.sqrt(d)  # no specialisation


@pytest.mark.slow
def test_teacher_start_at_large_alpha_is_the_specialised_branch() -> None:
    """Same network at α = 3 (n = 768) from the teacher: Q ≈ 1 and ε* near the specialised branch.

    Finite-size allowance 1/d on Q: the posterior spread of each unit's d weights around the teacher's.
    """
    spec = _spec(alpha=3.0, Delta=0.1, readout="ones")
    d = 16
    run = run_nuts(build_target(spec, ExperimentSizes(d=d, n_test=2000), seed=0), init="teacher", warmup=150,
                   draws=150)
    report = solve_json(THEORY, spec, SolverOptions())
    special, universal = (theory_observables(report, branch=b) for b in ("specialized", "universal"))
    Q, eps = run.estimate("Q"), run.estimate("generalization_error")
    assert run.divergences == 0 and Q.rhat < 1.05 and eps.rhat < 1.05
    assert float(Q.mean) > special["Q"] - 4 * float(Q.mcse) - 1 / d
    # far closer to the specialised branch than to the universal one
    assert abs(float(eps.mean) - special["generalization_error"]) < 0.1 * universal["generalization_error"]
