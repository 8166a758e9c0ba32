"""Diagnostics and the honesty of the result: a non-mixing run is reported as such, non-finite log-densities are
counted (never raised) and rejected, gradient evaluations are counted exactly (against an independent counter in
the log-density's backward pass), a stuck chain and a one-chain run are not called converged, the time limit
returns the draws so far, and the ArviZ output agrees with the estimates. The figures themselves (MCSE, bulk and
tail ESS, rank R-hat) are checked against the definitions written out in ``reference_diagnostics`` and against the
closed-form autocorrelation time of an AR(1) chain."""

from __future__ import annotations

import math
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from solvers.experiments import SamplerOptions, Status, diagnostics, sample, summarize, to_inference_data
from solvers.experiments.target import Target
from tests.experiments import reference_diagnostics as ref
from tests.experiments.targets import ADJUSTED, BLOCK, LANGEVIN, LANGEVIN_STEP, N_SE, PRODUCT, mcse_mean

SEPARATION = 6.0
#: E[x | x < 1] for a standard normal: −φ(1)/Φ(1)
TRUNCATED_MEAN = -math.exp(-0.5) / math.sqrt(2 * math.pi) / (0.5 * (1 + math.erf(1 / math.sqrt(2))))


def awkward(counter: list[int]) -> Target:
    """Three independent coordinates: x₀ ~ ½N(−6, 1) + ½N(6, 1) (bimodal; "modes" starts each chain in a random
    mode), x₁ ~ N(0, 1) restricted to x₁ < 1 (the log-density is NaN beyond), x₂ ~ N(0, 1). Every gradient
    evaluation is counted in the backward pass of the Gaussian part (a host callback, independent of the samplers'
    bookkeeping; exact for methods whose chains evaluate gradients in lockstep — all but NUTS, whose vectorised
    trajectories run as long as the longest chain's, so NUTS is counted with one chain)."""

    @jax.custom_vjp
    def half_square(x):
        return 0.5 * jnp.sum(x**2)

    def fwd(x):
        return half_square(x), x

    def bwd(x, g):
        # one count per chain, whether the callback sees one chain or all of them at once (vmap)
        jax.debug.callback(lambda v: counter.append(np.size(v) // 2), x)
        return (g * x,)

    half_square.defvjp(fwd, bwd)

    def log_prior(x):
        bimodal = jnp.logaddexp(-0.5 * (x[0] - SEPARATION) ** 2, -0.5 * (x[0] + SEPARATION) ** 2)
        return jnp.where(x[1] < 1.0, bimodal - half_square(x[1:]), jnp.nan)

    def modes(k):
        k1, k2 = jax.random.split(k)
        side = jnp.where(jax.random.bernoulli(k1), 1.0, -1.0)
        return jnp.array([side * SEPARATION, -0.5, 0.0]) + 0.1 * jax.random.normal(k2, (3,))

    return Target(dim=3, log_prior=log_prior, log_likelihood=lambda x: 0.0 * x[0], init={"modes": modes},
                  estimators=lambda x: {"x0": x[0], "x1": x[1], "x2": x[2], "one": jnp.ones(())})


def _run(method: str, **fields):
    counter: list[int] = []
    options = SamplerOptions(method=method, init="modes", seed=3, **fields)
    run = sample(awkward(counter), options)
    jax.effects_barrier()
    return run, sum(counter)


@pytest.fixture(scope="module")
def mala_run():
    return _run("mala", chains=4, warmup=300, draws=1000, block_size=1000)


def test_chains_in_separate_modes_are_not_converged(mala_run):
    run, _ = mala_run
    x0 = run.draws.estimates["x0"]
    sides = np.sign(x0.mean(axis=1))
    assert set(sides) == {-1.0, 1.0}, "precondition: chains start in both modes"
    assert np.all(np.sign(x0) == sides[:, None]), "no chain crosses the barrier"
    result = run.result
    assert not result.converged and result.status == Status.NOT_CONVERGED
    assert result.estimates["x0"].rhat > 1.2 and result.sampler.max_rhat > 1.01
    assert "R-hat above 1.01: x0" in result.message
    # control: the chains of one mode mix within it, R-hat near 1 (what the chains cannot see, they miss)
    side = max((-1.0, 1.0), key=lambda v: np.sum(sides == v))
    assert np.sum(sides == side) >= 2
    estimate, _ = diagnostics.estimate(x0[sides == side])
    assert estimate.rhat < 1.05 and estimate.ess_bulk >= 400
    # the independent coordinates mix
    assert max(result.estimates[name].rhat for name in ("x1", "x2")) < 1.05


def _check_nonfinite_and_gradients(run, counted):
    x1, x2 = run.draws.estimates["x1"], run.draws.estimates["x2"]
    assert run.result.sampler.nonfinite > 0
    assert run.result.status != Status.NUMERICAL_ERROR
    assert np.all(x1 < 1.0)
    assert abs(x1.mean() - TRUNCATED_MEAN) < N_SE * mcse_mean(x1)
    assert abs(x2.mean()) < N_SE * mcse_mean(x2)
    # gradient evaluations, warmup (with the initial one) and sampling, against the independent count
    assert run.result.gradient_evaluations == counted
    assert 0 < run.result.sampler.warmup_gradient_evaluations < run.result.gradient_evaluations


def test_nonfinite_log_density_is_counted_and_rejected_and_gradients_are_counted(mala_run):
    _check_nonfinite_and_gradients(*mala_run)
    # the constant observable carries no error and does not block the rule
    one = mala_run[0].result.estimates["one"]
    assert one.mean == 1.0 and one.stderr == 0.0 and math.isnan(one.rhat)


@pytest.mark.slow
def test_hmc_nonfinite_and_gradients():
    _check_nonfinite_and_gradients(*_run("hmc", num_integration_steps=7, chains=4, warmup=300, draws=1000,
                                         block_size=1000))


@pytest.mark.slow
def test_nuts_nonfinite_and_gradients():
    _check_nonfinite_and_gradients(*_run("nuts", chains=1, warmup=300, draws=2000, block_size=2000))


def test_unadjusted_langevin_beyond_its_stability_limit_is_a_numerical_error():
    # h λ_max = 2.5 > 2: the recursion diverges to infinity, then NaN
    options = SamplerOptions(**{**LANGEVIN, "step_size": 5 * LANGEVIN_STEP, "warmup": 10, "draws": BLOCK,
                                "block_size": BLOCK, "seed": 5})
    result = sample(PRODUCT, options).result
    assert result.status == Status.NUMERICAL_ERROR and not result.converged
    assert result.sampler.nonfinite > 0
    assert "Non-finite" in result.message


#: MALA on the product target keeping positions (the tests below share its compiled block)
KEEP = {**ADJUSTED["mala"], "draws": 400, "block_size": BLOCK, "keep_positions": True}


def test_chains_that_never_move_are_not_converged():
    # a step far too large and no adaptation: every proposal is rejected
    result = sample(PRODUCT, SamplerOptions(**{**KEEP, "step_size": 1e4, "warmup": 0, "seed": 8})).result
    assert not result.converged and "did not move" in result.message
    assert result.sampler.acceptance < 1e-3


def test_time_limit_returns_the_draws_so_far():
    options = SamplerOptions(**{**LANGEVIN, "time_limit": 1e-6, "seed": 9, "draws": 3 * BLOCK, "block_size": BLOCK})
    result = sample(PRODUCT, options).result
    assert result.status == Status.TIME_LIMIT
    assert result.draws == BLOCK and result.estimates["x"].mean.shape == (4,)
    assert f"{BLOCK} of {3 * BLOCK}" in result.message


def _ar1(rng: np.random.Generator, phi: float, chains: int, draws: int) -> np.ndarray:
    """Stationary AR(1) chains x_t = φ x_{t−1} + ε_t, ε ~ N(0, 1)."""
    x = np.empty((chains, draws))
    x[:, 0] = rng.standard_normal(chains) / np.sqrt(1 - phi**2)
    noise = rng.standard_normal((chains, draws))
    for t in range(1, draws):
        x[:, t] = phi * x[:, t - 1] + noise[:, t]
    return x


@pytest.mark.parametrize("case", range(8))
def test_figures_are_those_of_the_definitions(case):
    """Odd and even lengths, offsets between chains (R-hat well above 1), ties (discrete values), anticorrelation."""
    rng = np.random.default_rng(100 + case)
    chains, draws = 2 + case % 4, 41 + 37 * case
    phi = (-0.4, 0.0, 0.5, 0.9)[case % 4]
    x = _ar1(rng, phi, chains, draws) + rng.normal(0.0, 0.5 * (case % 3), (chains, 1))
    if case % 2:
        x = np.round(x, 1)
    est, _ = diagnostics.estimate(x)
    assert est.mean == pytest.approx(x.mean(), rel=1e-12)
    assert est.stderr == pytest.approx(ref.mcse_mean(x), rel=1e-10)
    assert est.ess_bulk == pytest.approx(ref.ess_bulk(x), rel=1e-10)
    assert est.ess_tail == pytest.approx(ref.ess_tail(x), rel=1e-10)
    assert est.rhat == pytest.approx(ref.rhat_rank(x), rel=1e-10)


def test_ess_and_error_of_ar1_chains_match_the_closed_form():
    """For AR(1) the integrated autocorrelation time is τ = (1 + φ)/(1 − φ), so ESS = S/τ and the error of the mean
    is √(τ/S) σ_x with σ_x² = 1/(1 − φ²). Over 4 × 20 000 draws, across 50 independent runs, the bulk ESS had a
    relative spread of 2.5 % and the error 1.5 % (means 1.0001 and 0.9998 of the closed forms): each is required
    within four spreads."""
    phi, chains, draws = 0.6, 4, 20_000
    tau = (1 + phi) / (1 - phi)
    x = _ar1(np.random.default_rng(7), phi, chains, draws)
    est, _ = diagnostics.estimate(x)
    assert est.ess_bulk == pytest.approx(chains * draws / tau, rel=0.10)
    assert est.stderr == pytest.approx(np.sqrt(tau / (chains * draws) / (1 - phi**2)), rel=0.06)
    assert est.rhat == pytest.approx(1.0, abs=0.01)
    assert abs(est.mean) < N_SE * est.stderr


def test_result_and_inference_data():
    options = SamplerOptions(**{**KEEP, "seed": 10})
    run = sample(PRODUCT, options)
    result = run.result
    assert (result.chains, result.draws, result.init) == (4, 400, "prior")
    assert result.sampled == (("x", 4), ("theta", 3)) and result.device == jax.devices()[0].platform
    assert result.gradient_evaluations == 4 * (1 + 1000 + 400 * 4)
    idata = to_inference_data(run.draws, method="mala")
    assert idata.posterior["x"].shape == (4, 400, 4) and idata.posterior["position"].shape == (4, 400, 7)
    np.testing.assert_array_equal(idata.posterior["position"].values, run.draws.positions)
    assert set(idata.sample_stats.data_vars) == {"lp", "acceptance_rate", "diverging", "n_steps", "nonfinite"}
    # the tree holds the draws the figures were computed from
    x = idata.posterior["x"].values
    np.testing.assert_allclose([ref.rhat_rank(x[:, :, k]) for k in range(4)], result.estimates["x"].rhat, rtol=1e-10)
    np.testing.assert_allclose([ref.ess_tail(x[:, :, k]) for k in range(4)], result.estimates["x"].ess_tail,
                               rtol=1e-10)
    assert list(idata.children) == ["posterior", "sample_stats"] and idata.attrs["sampler"] == "mala"
    # R-hat compares chains: one chain of the same run leaves it undefined, and is not judged converged
    one = replace(run.draws, estimates={k: v[:1] for k, v in run.draws.estimates.items()},
                  **{k: getattr(run.draws, k)[:1] for k in ("logdensity", "acceptance", "divergences",
                                                             "gradient_evaluations", "nonfinite", "positions")})
    alone = summarize(PRODUCT, options, run.checkpoint, one)
    assert np.all(np.isnan(alone.estimates["x"].rhat)) and not alone.converged
    assert "at least two chains" in alone.message
