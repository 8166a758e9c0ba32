"""The finite network handed to the samplers: its log-density against a direct NumPy formula."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from solvers.core.options import SolverOptions
from solvers.theories import get
from solvers.theories.base import ExperimentRefused
from solvers.theories.mean_field_ard.data import dataset
from solvers.theories.mean_field_ard.experiment import ExperimentSizes, build_target, theory_observables
from solvers.theories.mean_field_ard.spec import MeanFieldARDSpec


def spec(**kw: object) -> MeanFieldARDSpec:
    base = {"theory": "mean_field_ard", "d": 6, "N": 5, "kappa": 0.3, "sigma_w2": 1.5, "sigma_a2": 0.7, "P": 40,
            "gamma": 0.7, "solver": "particles", "target": {"kind": "parity", "k": 2},
            "data": {"seed": 3, "P_test": 50}}
    return MeanFieldARDSpec.model_validate(base | kw)


@pytest.mark.parametrize("activation", ["relu", "erf", "tanh"])
def test_log_density_matches_numpy(activation: str) -> None:
    s = spec(activation=activation)
    target = build_target(s, seed=3)
    data = dataset(s)
    rng = np.random.default_rng(0)
    theta = rng.standard_normal(target.dim) * 0.5
    W, a = theta[: s.N * s.d].reshape(s.N, s.d), theta[s.N * s.d :]
    phi = {"relu": lambda z: np.maximum(z, 0), "erf": lambda z: np.vectorize(math.erf)(z), "tanh": np.tanh}[activation]
    f = s.N ** (-s.gamma) * phi(data.X @ W.T) @ a
    log_prior = -s.d / (2 * s.sigma_w2) * np.sum(W**2) - np.sum(a**2) / (2 * s.sigma_a2)
    log_lik = -np.mean((data.y - f) ** 2) / (2 * s.kappa**2)
    with jax.enable_x64(True):
        th = jnp.asarray(theta)
        assert float(target.log_prior(th)) == pytest.approx(log_prior, rel=1e-5)
        assert float(target.log_likelihood(th)) == pytest.approx(log_lik, rel=1e-5)
        assert float(target.logdensity(th)) == pytest.approx(log_prior + log_lik, rel=1e-5)
        # the minibatch estimate averages to the full log-likelihood over a partition of the data
        idx = np.arange(target.n_data).reshape(8, 5)
        mb = np.mean([float(target.minibatch_log_likelihood(th, jnp.asarray(i))) for i in idx])
        assert mb == pytest.approx(log_lik, rel=1e-5)
        est = target.estimators(th)
        ft = s.N ** (-s.gamma) * phi(data.X_test @ W.T) @ a
        assert float(est["test_mse"]) == pytest.approx(np.mean((data.y_test - ft) ** 2), rel=1e-5)
        assert float(est["m_S"]) == pytest.approx(np.mean(ft * data.y_test), rel=1e-5, abs=1e-9)


def test_prior_initialiser_has_the_prior_variances() -> None:
    s = spec(N=400)
    target = build_target(s, seed=0)
    theta = np.asarray(target.init["prior"](jax.random.PRNGKey(1)))
    W, a = theta[: s.N * s.d], theta[s.N * s.d :]
    assert np.var(W) == pytest.approx(s.sigma_w2 / s.d, rel=0.1)
    assert np.var(a) == pytest.approx(s.sigma_a2, rel=0.2)
    assert target.info["temperature"] == pytest.approx(2 * s.kappa**2)


def test_population_spec_has_no_experiment() -> None:
    with pytest.raises(ValueError, match="population"):
        build_target(MeanFieldARDSpec.model_validate({"theory": "mean_field_ard", "d": 8, "N": 4, "kappa": 0.1,
                                                      "target": {"kind": "parity", "k": 2}}), seed=0)


def test_sizes_give_the_population_spec_a_training_set_and_derived_is_the_mean_predictor() -> None:
    s = MeanFieldARDSpec.model_validate({"theory": "mean_field_ard", "d": 8, "N": 4, "kappa": 0.1,
                                         "target": {"kind": "parity", "k": 2}, "data": {"P_test": 30}})
    target = build_target(s, ExperimentSizes(P=25))
    assert target.n_data == 25 and target.derived is not None
    with pytest.raises(ValueError, match="P"):
        build_target(spec(), ExperimentSizes(P=41))
    data = dataset(s.model_copy(update={"P": 25}))
    rng = np.random.default_rng(1)
    means = {"f_test": rng.standard_normal(30), "f_train": rng.standard_normal(25)}
    out = target.derived({k: jnp.asarray(v) for k, v in means.items()})
    assert float(out["mean_predictor.test_mse"]) == pytest.approx(np.mean((data.y_test - means["f_test"]) ** 2),
                                                                  rel=1e-5)
    assert float(out["mean_predictor.train_mse"]) == pytest.approx(np.mean((data.y - means["f_train"]) ** 2),
                                                                   rel=1e-5)


def test_theory_observables_name_the_estimators() -> None:
    """Every branch's prediction is its report's value under the estimator's name."""
    s = MeanFieldARDSpec.model_validate({"theory": "mean_field_ard", "model": "mf", "d": 16, "N": 64, "kappa": 0.05,
                                         "P": 256, "target": {"kind": "parity", "k": 2},
                                         "data": {"seed": 0, "P_test": 500}})
    catalogue = get("mean_field_ard").solve(s, SolverOptions())
    for branch in (None, *(b.name for b in catalogue.branches)):
        found = catalogue.equilibrium_branch if branch is None else catalogue.get(branch)
        op, obs = found.report.order_parameters, found.report.observables
        assert theory_observables(catalogue, branch=branch) == {
            "m_S": op["m_S"], "mean_predictor.test_mse": obs["test_mse"],
            "mean_predictor.train_mse": obs["train_mse"], "test_error01": obs["test_error01_gibbs"]}
    with pytest.raises(KeyError):
        theory_observables(catalogue, branch="none")


def test_the_theory_refuses_a_population_experiment_naming_sizes_p() -> None:
    theory = get("mean_field_ard")
    population = spec(P=None, solver="reduced")
    with pytest.raises(ExperimentRefused) as refused:
        theory.check_experiment(population, ExperimentSizes())
    assert refused.value.loc == ("sizes", "P")
    with pytest.raises(ExperimentRefused) as refused:
        theory.check_experiment(spec(), ExperimentSizes(P=41))
    assert refused.value.loc == ("sizes", "P")
    declared = theory.check_experiment(population, ExperimentSizes(P=30))
    assert declared["experiment_parameters"] == (("model", "N"), 5.0 * 7)
    assert declared["experiment_data"] == (("sizes", "P"), (30.0 + 50) * 6)
    assert theory.experiment(population, ExperimentSizes(P=30)).n_data == 30


@pytest.mark.slow
def test_flat_likelihood_samples_the_prior() -> None:
    """κ → ∞: the posterior is the prior, where E_θ f(x)² = N^{1−2γ} σ_a² E relu(w·x)² = σ_a² σ_w²/2 on the
    hypercube (w·x ~ N(0, σ_w²) exactly) and E_θ f = 0: the Gibbs test MSE is 1 + σ_a² σ_w²/2 and m_S = 0,
    compared within 4 Monte-Carlo standard errors (MALA, 4 chains)."""
    from solvers.experiments import SamplerOptions, sample

    s = spec(N=6, kappa=1e3, gamma=0.5, P=8, data={"seed": 3, "P_test": 8})
    # the chains start from prior draws, i.e. in the stationary law: no warmup is needed
    run = sample(build_target(s), SamplerOptions(method="mala", chains=4, warmup=0, step_size=0.05, draws=800,
                                                 thin=2, seed=2))
    est = run.result.estimates
    exact = 1.0 + s.sigma_a2 * s.sigma_w2 / 2.0
    assert abs(float(est["test_mse"].mean) - exact) < 4 * float(est["test_mse"].stderr)
    assert abs(float(est["m_S"].mean)) < 4 * float(est["m_S"].stderr)
    assert float(est["test_mse"].rhat) < 1.05
