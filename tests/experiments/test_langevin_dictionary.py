"""The Langevin dictionary: a paper's update p ← p − η(wd·p + ∇L) + √(2Tη)ξ (summed or mean squared loss, ½ or
not) samples the posterior that ``posterior_of`` names, with the step ``η·T``. Checked on Bayesian linear
regression, where everything is Gaussian: the drift identity, the recursion step by step, the exact stationary
law of the paper's AR(1) recursion (equal to the Target's posterior in the small-step limit), and a sampler run."""

from __future__ import annotations

import blackjax.mcmc.diffusions as diffusions
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from blackjax.util import generate_gaussian_noise

from solvers.experiments import PaperLangevin, SamplerOptions, paper_run_for, posterior_of, sample
from solvers.experiments.target import Target
from tests.experiments.targets import assert_moments, langevin_stationary_cov

RNG = np.random.default_rng(5)
X = RNG.normal(size=(25, 3))
Y = X @ np.array([0.5, -1.0, 2.0]) + 0.3 * RNG.normal(size=25)
N_DATA, DIM = X.shape

CONVENTIONS = [("sum", 0.5), ("sum", 1.0), ("mean", 0.5), ("mean", 1.0)]


def paper_loss(p, factor, norm):
    """The scripts' loss: factor · Σ (y − f)² for a summed loss (norm = 1), factor · mean (y − f)² (norm = P)."""
    return factor * jnp.sum((jnp.asarray(Y) - jnp.asarray(X) @ p) ** 2) / norm


def paper_drift_matrix(run: PaperLangevin) -> tuple[np.ndarray, np.ndarray]:
    """The paper's update is p ← p − η(A p − b) + √(2Tη)ξ with A = wd I + (2c/P^m) XᵀX, b = (2c/P^m) Xᵀy."""
    scale = 2 * run.squared_error_factor / (N_DATA if run.loss == "mean" else 1)
    return run.weight_decay * np.eye(DIM) + scale * X.T @ X, scale * X.T @ Y


def regression_target(prior_variance: float, noise_variance: float) -> Target:
    x, y = jnp.asarray(X), jnp.asarray(Y)
    return Target(
        dim=DIM,
        log_prior=lambda p: -jnp.sum(p**2) / (2 * prior_variance),
        log_likelihood=lambda p: -jnp.sum((y - x @ p) ** 2) / (2 * noise_variance),
        init={"prior": lambda k: jax.random.normal(k, (DIM,))},
        estimators=lambda p: {"x": p},
    )


def exact_posterior(prior_variance: float, noise_variance: float) -> tuple[np.ndarray, np.ndarray]:
    cov = np.linalg.inv(np.eye(DIM) / prior_variance + X.T @ X / noise_variance)
    return cov @ X.T @ Y / noise_variance, cov


def run_for(loss: str, factor: float) -> PaperLangevin:
    return PaperLangevin(learning_rate=2e-3 if loss == "sum" else 5e-2, temperature=0.05, weight_decay=0.2,
                         loss=loss, n_data=N_DATA, squared_error_factor=factor)


@jax.jit
def _both_updates(points, p0, prior_variance, noise_variance, step, eta, t, wd, factor, norm):
    """The drift T∇log π vs −(wd p + ∇L) at ``points``, and 300 steps of BlackJAX's Langevin integrator on the
    Target (step h) beside the paper's literal update, driven by the same noise. One compilation for every
    convention: the convention's numbers are arguments."""
    target = regression_target(prior_variance, noise_variance)
    ours = jax.vmap(lambda p: t * jax.grad(target.logdensity)(p))(points)
    papers = jax.vmap(lambda p: -(wd * p + jax.grad(paper_loss)(p, factor, norm)))(points)
    integrator = diffusions.overdamped_langevin(jax.value_and_grad(target.logdensity))

    def one(carry, key):
        state, paper = carry
        state = integrator(key, state, step)
        xi = generate_gaussian_noise(key, paper)
        paper = paper - eta * (wd * paper + jax.grad(paper_loss)(paper, factor, norm)) + jnp.sqrt(2 * t * eta) * xi
        return (state, paper), (state.position, paper)

    state = diffusions.DiffusionState(p0, *jax.value_and_grad(target.logdensity)(p0))
    _, (path, paper_path) = jax.lax.scan(one, (state, p0), jax.random.split(jax.random.key(0), 300))
    return ours, papers, path, paper_path


@pytest.mark.parametrize(("loss", "factor"), CONVENTIONS)
def test_drift_and_recursion_are_the_papers(loss, factor):
    run = run_for(loss, factor)
    post = posterior_of(run)
    assert post.step_size == pytest.approx(run.learning_rate * run.temperature, rel=1e-15)
    norm = N_DATA if loss == "mean" else 1
    ours, papers, path, paper_path = _both_updates(
        jnp.asarray(RNG.normal(size=(5, DIM))), jnp.asarray(RNG.normal(size=DIM)), post.prior_variance,
        post.noise_variance, post.step_size, run.learning_rate, run.temperature, run.weight_decay, factor, norm)
    # drift identity: T ∇log π(p) = −(wd p + ∇L(p)) at any p
    np.testing.assert_allclose(ours, papers, rtol=1e-12, atol=1e-12)
    # the recursions agree step by step, and move
    np.testing.assert_allclose(path, paper_path, rtol=1e-9, atol=1e-12)
    assert np.abs(np.diff(np.asarray(paper_path), axis=0)).min() > 0


@jax.jit
def _hessian(prior_variance, noise_variance):
    return jax.hessian(regression_target(prior_variance, noise_variance).logdensity)(jnp.zeros(DIM))


@pytest.mark.parametrize(("loss", "factor"), CONVENTIONS)
def test_stationary_law_of_the_papers_update_is_the_targets_posterior(loss, factor):
    run = run_for(loss, factor)
    post = posterior_of(run)
    mean, cov = exact_posterior(post.prior_variance, post.noise_variance)
    a, b = paper_drift_matrix(run)
    # the paper's AR(1): p − m ← (I − ηA)(p − m) + √(2Tη)ξ, m = A⁻¹b, S = (I − ηA) S (I − ηA) + 2Tη I
    eta, t = run.learning_rate, run.temperature
    np.testing.assert_allclose(np.linalg.solve(a, b), mean, rtol=1e-10)
    s_paper = t * np.linalg.inv(a - 0.5 * eta * a @ a)
    m = np.eye(DIM) - eta * a
    np.testing.assert_allclose(m @ s_paper @ m + 2 * t * eta * np.eye(DIM), s_paper, rtol=1e-10)
    # the same law as SaddleLab's recursion on the Target (precision from the Target's own Hessian) ...
    precision = -np.asarray(_hessian(post.prior_variance, post.noise_variance))
    np.testing.assert_allclose(langevin_stationary_cov(precision, post.step_size), s_paper, rtol=1e-10)
    # ... which is the Target's posterior as η → 0, with the O(η) bias S = Σ + (ηT/2) I + O(η²)
    np.testing.assert_allclose(t * np.linalg.inv(a), cov, rtol=1e-10)
    small = eta / 1000
    bias = (t * np.linalg.inv(a - 0.5 * small * a @ a) - cov) / small
    np.testing.assert_allclose(bias, 0.5 * t * np.eye(DIM), atol=1e-2 * t)


def test_langevin_run_in_the_papers_units_samples_the_papers_law():
    run = run_for("mean", 0.5)
    post = posterior_of(run)
    target = regression_target(post.prior_variance, post.noise_variance)
    mean, _ = exact_posterior(post.prior_variance, post.noise_variance)
    a, _ = paper_drift_matrix(run)
    s_paper = run.temperature * np.linalg.inv(a - 0.5 * run.learning_rate * a @ a)
    options = SamplerOptions(method="langevin", learning_rate=run.learning_rate, temperature=run.temperature,
                             chains=4, warmup=1000, draws=3000, thin=5, seed=31, block_size=1000)
    result = sample(target, options)
    assert result.result.sampler.step_size == pytest.approx(post.step_size)
    assert_moments(result.draws.estimates["x"], mean, s_paper)


def test_published_conventions():
    # Rubin et al. scripts: summed squared error without ½ at temperature T = 2σ², wd = T/v  [theory notes]
    sigma2, v, p = 0.3, 1.7, 700
    rubin = posterior_of(PaperLangevin(1e-3, 2 * sigma2, 2 * sigma2 / v, "sum", p, squared_error_factor=1.0))
    assert rubin.noise_variance == pytest.approx(sigma2) and rubin.prior_variance == pytest.approx(v)
    # mean-field ARD scripts: mean squared error without ½ at T = 2κ²: per-sample noise variance κ² P
    kappa2 = 0.01
    ard = posterior_of(PaperLangevin(1e-3, 2 * kappa2, 1.0, "mean", p, squared_error_factor=1.0))
    assert ard.noise_variance == pytest.approx(kappa2 * p)
    # kernel renormalisation scripts: loss ½Σ(out − y)² + ½λT‖W‖²: noise variance T, prior variance 1/λ
    lam, t = 2.0, 1e-3
    kr = posterior_of(PaperLangevin(1e-3, t, lam * t, "sum", p, squared_error_factor=0.5))
    assert kr.noise_variance == pytest.approx(t) and kr.prior_variance == pytest.approx(1 / lam)


def test_per_block_weight_decay_and_inverse_map():
    run = PaperLangevin(1e-3, 0.2, {"w": 0.5, "a": 4.0}, "mean", 100)
    post = posterior_of(run)
    assert post.prior_variance == {"w": pytest.approx(0.4), "a": pytest.approx(0.05)}
    for loss in ("sum", "mean"):
        original = PaperLangevin(3e-4, 0.02, 0.7, loss, 64, squared_error_factor=1.0)
        p = posterior_of(original)
        back = paper_run_for(p.prior_variance, p.noise_variance, loss=loss, n_data=64, step_size=p.step_size,
                             squared_error_factor=1.0)
        for field in ("learning_rate", "temperature", "weight_decay"):
            assert getattr(back, field) == pytest.approx(getattr(original, field), rel=1e-12)


@pytest.mark.parametrize("bad", [dict(temperature=0.0), dict(weight_decay=-1.0), dict(loss="median"),
                                 dict(n_data=0), dict(learning_rate=float("nan")), dict(weight_decay={"w": 0.0})])
def test_invalid_paper_runs_are_refused(bad):
    args = dict(learning_rate=1e-3, temperature=0.1, weight_decay=1.0, loss="sum", n_data=10) | bad
    with pytest.raises(ValueError):
        PaperLangevin(**args)
