"""The kernel_renormalization network: its log-posterior, the integrated-out readout, and sampled
posteriors against the NNGP limit and the exact finite-width linear network."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import multivariate_normal

from solvers.core.options import SolverOptions
from solvers.theories.kernel_renormalization import THEORY
from solvers.theories.kernel_renormalization.experiment import ExperimentSizes, build_target, theory_observables
from solvers.theories.kernel_renormalization.spec import KernelRenormalizationSpec
from tests.experiments.sampling_helpers import product, run_nuts
from tests.payloads import solve_json
from tests.theories.test_kernel_renormalization_common import arrays, recipe_data
from tests.theories.test_kernel_renormalization_exact_linear import ExactLinear

jax.config.update("jax_enable_x64", True)


def _spec(data: dict, **fields: object) -> KernelRenormalizationSpec:
    body = {"theory": "kernel_renormalization", "activation": "erf", "N1": 3, "T": 0.3, **fields, "data": data}
    return KernelRenormalizationSpec.model_validate(body)


def _small_data(P: int = 6, N0: int = 4, P_test: int = 3, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    X, Xt = rng.standard_normal((P, N0)), rng.standard_normal((P_test, N0))
    y = np.sign(X[:, 0] + 0.3)
    y[:2] = [1.0, -1.0]
    return arrays(X, y, Xt, np.sign(Xt[:, 0]))


def _np_sigma(name: str, h: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return {"erf": erf, "relu": lambda z: np.maximum(z, 0.0), "linear": lambda z: z}[name](h)


def _np_features(spec: KernelRenormalizationSpec, weights: list[np.ndarray], X: np.ndarray) -> np.ndarray:
    phi = _np_sigma(spec.activation, X @ weights[0].T / np.sqrt(X.shape[1]))
    for W in weights[1:]:
        phi = _np_sigma(spec.activation, phi @ W.T / np.sqrt(spec.N1))
    return phi


# ---- the formula -------------------------------------------------------------------------------
@pytest.mark.parametrize("activation", ["erf", "relu", "linear"])
@pytest.mark.parametrize(("depth", "N1"), [(1, 3), (1, 9), (2, 4)])  # N1 < P and N1 ≥ P: both Cholesky forms
def test_log_posterior_equals_the_formula(activation: str, depth: int, N1: int) -> None:
    data = _small_data()
    spec = _spec(data, activation=activation, depth=depth, N1=N1, lambda0=1.7, lambda1=0.6)
    target = build_target(spec)
    X, y = np.array(data["X"]), np.array(data["y"])
    rng = np.random.default_rng(1)
    for _ in range(3):
        theta = rng.standard_normal(target.dim)
        sizes = [N1 * X.shape[1]] + [N1 * N1] * (depth - 1)
        cuts = np.cumsum([0, *sizes])
        weights = [theta[cuts[0] : cuts[1]].reshape(N1, X.shape[1])]
        weights += [theta[cuts[i] : cuts[i + 1]].reshape(N1, N1) for i in range(1, depth)]
        prior = -0.5 * 1.7 * np.sum(weights[0] ** 2) - 0.5 * 0.6 * sum(np.sum(W**2) for W in weights[1:])
        # f = v·φ/√N1 with v ~ N(0, 1/λ1): y ~ N(0, φφᵀ/(λ1 N1) + T I)
        phi = _np_features(spec, weights, X)
        cov = phi @ phi.T / (0.6 * N1) + 0.3 * np.eye(len(y))
        lik = multivariate_normal(np.zeros(len(y)), cov).logpdf(y)
        assert float(target.log_prior(jnp.asarray(theta))) == pytest.approx(prior, rel=1e-12)
        assert float(target.log_likelihood(jnp.asarray(theta))) == pytest.approx(lik, rel=1e-10)
        assert float(target.logdensity(jnp.asarray(theta))) == pytest.approx(prior + lik, rel=1e-10)


def test_integrated_readout_equals_brute_force_quadrature() -> None:
    """Two readout weights: the marginal likelihood and the Rao–Blackwellised estimators against a
    120 × 120 Gauss–Hermite integral over v ~ N(0, I/λ1)."""
    data = _small_data(P=3, N0=2, P_test=2, seed=4)
    lam1, T, N1 = 0.8, 0.5, 2
    spec = _spec(data, activation="erf", N1=N1, T=T, lambda1=lam1)
    target = build_target(spec)
    X, y = np.array(data["X"]), np.array(data["y"])
    Xt, yt = np.array(data["X_test"]), np.array(data["y_test"])
    theta = np.random.default_rng(2).standard_normal(target.dim)
    W = theta.reshape(N1, 2)
    phi, phi_t = _np_features(spec, [W], X), _np_features(spec, [W], Xt)

    z, w = np.polynomial.hermite_e.hermegauss(120)
    w = w / np.sqrt(2 * np.pi)
    V = np.stack(np.meshgrid(z, z, indexing="ij"), -1).reshape(-1, 2) / np.sqrt(lam1)
    weight = np.outer(w, w).ravel()
    f = V @ phi.T / np.sqrt(N1)  # (nodes, P)
    like = np.exp(-0.5 * np.sum((y - f) ** 2, 1) / T) / (2 * np.pi * T) ** (len(y) / 2)
    evidence = float(weight @ like)
    post = weight * like / evidence
    ft = V @ phi_t.T / np.sqrt(N1)
    assert float(target.log_likelihood(jnp.asarray(theta))) == pytest.approx(np.log(evidence), rel=1e-10)

    est = {k: np.asarray(v) for k, v in target.estimators(jnp.asarray(theta)).items()}
    assert est["test_mean"] == pytest.approx(post @ ft, rel=1e-9, abs=1e-12)
    assert est["test_second_moment"] == pytest.approx(post @ ft**2, rel=1e-9)
    assert est["generalization_error"] == pytest.approx(float(post @ np.mean((yt - ft) ** 2, 1)), rel=1e-9)
    assert est["train_error"] == pytest.approx(float(post @ np.mean((y - f) ** 2, 1)), rel=1e-9)
    assert est["Qbar"] == pytest.approx(lam1 * float(post @ np.sum(V**2, 1)) / N1, rel=1e-9)


def test_theory_names_match_the_estimators() -> None:
    spec = _spec(arrays(*recipe_data(P=12, N0=5, P_test=7)), N1=6)
    sizes = ExperimentSizes(test_points=4)
    target = build_target(spec, sizes)
    est = target.estimators(target.init["prior"](jax.random.PRNGKey(0)))
    assert target.derived is not None
    names = {**est, **target.derived(est)}
    theory = theory_observables(solve_json(THEORY, spec, SolverOptions()), sizes=sizes)
    assert set(theory) == set(names)
    for key, value in theory.items():
        assert np.shape(value) == np.shape(names[key]), key


def test_invalid_networks_are_refused() -> None:
    with pytest.raises(ValueError, match="T"):
        build_target(_spec(_small_data(), T=0.0))
    with pytest.raises(ValueError, match="N1"):
        build_target(_spec(_small_data(), N1=10**7))


# ---- sampled posteriors --------------------------------------------------------------------------
def _nngp(activation: str, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """E[σ(w·a/√N0) σ(w·b/√N0)], w ~ N(0, I): the arcsine (erf) and arc-cosine (ReLU) kernels, typed afresh."""
    n0 = A.shape[1]
    c, ca, cb = A @ B.T / n0, np.sum(A * A, 1) / n0, np.sum(B * B, 1) / n0
    if activation == "erf":
        return 2 / np.pi * np.arcsin(2 * c / np.sqrt(np.outer(1 + 2 * ca, 1 + 2 * cb)))
    norm = np.sqrt(np.outer(ca, cb))
    cos = np.clip(c / norm, -1, 1)
    theta = np.arccos(cos)
    return norm / (2 * np.pi) * (np.sin(theta) + (np.pi - theta) * cos)


def _gp(activation: str, X, y, Xt, T: float, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """GP regression with prior kernel scale·K (λ1 = 1) and noise T: predictive mean and function variance."""
    K, k0, k00 = (scale * _nngp(activation, a, b) for a, b in ((X, X), (Xt, X), (Xt, Xt)))
    A = K + T * np.eye(len(y))
    return k0 @ np.linalg.solve(A, y), np.diag(k00) - np.einsum("ij,ji->i", k0, np.linalg.solve(A, k0.T))


@pytest.mark.slow
def test_wide_network_converges_to_nngp_regression() -> None:
    """P = 4: the sampled predictive mean and variance approach GP regression with the NNGP kernel like
    1/N1, for erf (arcsine kernel) and ReLU (arc-cosine kernel).

    At finite width the network differs from the GP by O(1/N1) (the readout norm Q̄ − 1 = O(P/N1), and
    fluctuations of the finite-width feature kernel). The deviation is measured at N1 = 32 and 128 (four
    independent networks sampled as one product target): N1·(experiment − GP) must agree between the two
    widths within 4 combined standard errors, for the mean, the variance and Q̄ − 1. A limit other than the
    NNGP (a width-independent offset δ) makes N1·deviation grow by 96 δ and fails.
    """
    rng = np.random.default_rng(3)
    X, Xt = rng.standard_normal((4, 3)), rng.standard_normal((3, 3))
    y, yt = np.array([1.0, -1.0, 1.0, -1.0]), np.array([1.0, -1.0, 1.0])
    T, widths, activations = 0.1, (32, 128), ("erf", "relu")
    targets = {
        f"{act}{N1}": build_target(_spec(arrays(X, y, Xt, yt), activation=act, N1=N1, T=T))
        for act in activations
        for N1 in widths
    }
    joint = product(targets)
    run = run_nuts(joint, warmup=150, draws=250)
    derived = run.derived(joint)
    assert run.divergences == 0
    for act in activations:
        gp_mean, gp_var = _gp(act, X, y, Xt, T, 1.0)
        scaled: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        for N1 in widths:
            for name, est, ref in (
                ("test_mean", run.estimate(f"{act}{N1}/test_mean"), gp_mean),
                ("test_variance", derived[f"{act}{N1}/test_variance"], gp_var),
                ("Qbar", run.estimate(f"{act}{N1}/Qbar"), 1.0),
            ):
                assert np.all(est.rhat < 1.05), (act, N1, name, est.rhat)
                scaled.setdefault(name, []).append((N1 * (est.mean - ref), N1 * est.mcse))
        for name, ((a, sa), (b, sb)) in scaled.items():
            assert np.all(np.abs(b - a) <= 4 * np.hypot(sa, sb)), (act, name, a, b, sa, sb)


@pytest.mark.slow
def test_linear_network_matches_the_exact_finite_width_posterior() -> None:
    """Linear σ, N1 = 10, the note's recipe data (P = 30, N0 = 50, T = 0.1): every estimator against the
    exact finite-N1 posterior (quadrature over q = ‖v‖²/N1), within 4 standard errors."""
    X, y, Xt, yt = recipe_data(P_test=10)
    T, N1 = 0.1, 10
    target = build_target(_spec(arrays(X, y, Xt, yt), activation="linear", N1=N1, T=T, lambda0=1.0, lambda1=1.0))
    run = run_nuts(target, warmup=200, draws=300)
    exact = ExactLinear(X, y, Xt, yt, 1.0, 1.0, T).averages(N1)
    pairs = {
        "test_mean": exact["test_mean"],
        "generalization_error": exact["eps"],
        "Qbar": exact["Qbar"],
        "class_distance.delta": exact["delta"],
        "weight_correlations.trace": (exact["tr1"] + exact["tr2"]) / N1,
    }
    assert run.divergences == 0
    for name, value in pairs.items():
        est = run.estimate(name)
        assert np.all(est.rhat < 1.05), (name, est.rhat)
        assert np.all(np.abs(est.z(value)) < 4), (name, est.mean, value, est.z(value))
    assert math.isfinite(run.acceptance) and run.acceptance > 0.5
