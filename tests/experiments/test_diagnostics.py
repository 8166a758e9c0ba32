"""Diagnostics and the honesty of the result: a non-mixing run is reported as such, non-finite log-densities are
counted (never raised), gradient evaluations are counted exactly (against an independent counter in the
log-density's backward pass), the time limit returns the draws so far, and the ArviZ output agrees."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from solvers.experiments import SamplerOptions, Status, diagnostics, sample, to_inference_data
from solvers.experiments.target import Target
from tests.experiments.targets import (
    BLOCK,
    LANGEVIN,
    LANGEVIN_STEP,
    N_SE,
    ONE_CHAIN,
    PRODUCT,
    REGRESSION_TARGET,
    mcse_mean,
)


def bimodal(separation: float = 6.0) -> Target:
    """½ N(−s, 1) + ½ N(s, 1) in the first coordinate, N(0, 1) in the second; "modes" starts a chain in a
    random mode."""

    def log_prior(x):
        return jnp.logaddexp(-0.5 * (x[0] - separation) ** 2, -0.5 * (x[0] + separation) ** 2) - 0.5 * x[1] ** 2

    def modes(k):
        k1, k2 = jax.random.split(k)
        side = jnp.where(jax.random.bernoulli(k1), 1.0, -1.0)
        return jnp.array([side * separation, 0.0]) + 0.1 * jax.random.normal(k2, (2,))

    return Target(dim=2, log_prior=log_prior, log_likelihood=lambda x: 0.0 * x[0], init={"modes": modes},
                  estimators=lambda x: {"x0": x[0], "x1": x[1]})


def truncated(counter: list[int] | None = None) -> Target:
    """N(0, I₂) restricted to x₀ < 1: the log-density is NaN beyond. With a counter, every gradient evaluation of
    the log-density is counted in its backward pass (a host callback, independent of the samplers' bookkeeping;
    exact for methods whose chains evaluate gradients in lockstep — all but NUTS, whose vectorised trajectories
    run as long as the longest chain's, so NUTS is counted with one chain)."""

    @jax.custom_vjp
    def half_square(x):
        return 0.5 * jnp.sum(x**2)

    def fwd(x):
        return half_square(x), x

    def bwd(x, g):
        if counter is not None:
            # one count per chain, whether the callback sees one chain or all of them at once (vmap)
            jax.debug.callback(lambda v: counter.append(np.size(v) // 2), x)
        return (g * x,)

    half_square.defvjp(fwd, bwd)

    def log_prior(x):
        return jnp.where(x[0] < 1.0, -half_square(x), jnp.nan)

    return Target(dim=2, log_prior=log_prior, log_likelihood=lambda x: 0.0 * x[0],
                  init={"prior": lambda k: jnp.array([-0.5, 0.0]) + 0.2 * jax.random.normal(k, (2,))},
                  estimators=lambda x: {"x": x, "one": jnp.ones(())})


#: E[x | x < 1] for a standard normal: −φ(1)/Φ(1)
TRUNCATED_MEAN = -math.exp(-0.5) / math.sqrt(2 * math.pi) / (0.5 * (1 + math.erf(1 / math.sqrt(2))))


def test_chains_in_separate_modes_are_not_converged():
    options = SamplerOptions(method="mala", init="modes", chains=4, warmup=300, draws=1000, seed=3, block_size=1000)
    run = sample(bimodal(), options)
    x0 = run.draws.estimates["x0"]
    sides = np.sign(x0.mean(axis=1))
    assert set(sides) == {-1.0, 1.0}, "precondition: chains start in both modes"
    assert np.all(np.sign(x0) == sides[:, None]), "no chain crosses the barrier"
    result = run.result
    assert not result.converged and result.status == Status.NOT_CONVERGED
    assert result.estimates["x0"].rhat > 1.01 and result.sampler.max_rhat > 1.01
    assert "R-hat above 1.01: x0" in result.message
    # control: the chains of one mode mix within it and meet the rule (what the chains cannot see, they miss)
    side = max((-1.0, 1.0), key=lambda v: np.sum(sides == v))
    assert np.sum(sides == side) >= 2
    estimate, _ = diagnostics.estimate(x0[sides == side])
    assert estimate.rhat <= 1.01 and estimate.ess_bulk >= 400


@pytest.mark.parametrize(
    ("method", "extra"),
    [pytest.param("hmc", {"num_integration_steps": 7}, marks=pytest.mark.slow), ("mala", {})],
)
def test_nonfinite_log_density_is_counted_and_rejected_and_gradients_are_counted(method, extra):
    counter: list[int] = []
    options = SamplerOptions(method=method, chains=4, warmup=300, draws=1000, seed=4, block_size=1000, **extra)
    run = sample(truncated(counter), options)
    jax.effects_barrier()
    x = run.draws.estimates["x"]
    assert run.result.sampler.nonfinite > 0
    assert run.result.status != Status.NUMERICAL_ERROR
    assert np.all(x[..., 0] < 1.0)
    assert abs(x[..., 0].mean() - TRUNCATED_MEAN) < N_SE * mcse_mean(x[..., 0])
    assert abs(x[..., 1].mean()) < N_SE * mcse_mean(x[..., 1])
    # the constant observable carries no error and does not block convergence
    one = run.result.estimates["one"]
    assert one.mean == 1.0 and one.stderr == 0.0 and math.isnan(one.rhat)
    # gradient evaluations: warmup (with the initial one) and sampling, against the independent count
    assert run.result.gradient_evaluations == sum(counter)
    assert run.result.sampler.warmup_gradient_evaluations < run.result.gradient_evaluations


def test_unadjusted_langevin_beyond_its_stability_limit_is_a_numerical_error():
    # h λ_max = 2.5 > 2: the recursion diverges to infinity, then NaN
    options = SamplerOptions(**{**LANGEVIN, "step_size": 5 * LANGEVIN_STEP, "warmup": 10, "draws": BLOCK,
                                "block_size": BLOCK, "seed": 5})
    result = sample(PRODUCT, options).result
    assert result.status == Status.NUMERICAL_ERROR and not result.converged
    assert result.sampler.nonfinite > 0
    assert "Non-finite" in result.message


@pytest.mark.slow
def test_nuts_gradient_evaluations_and_nonfinite():
    counter: list[int] = []
    options = SamplerOptions(method="nuts", chains=1, warmup=300, draws=2000, seed=7, block_size=2000)
    run = sample(truncated(counter), options)
    jax.effects_barrier()
    assert run.result.gradient_evaluations == sum(counter)
    x = run.draws.estimates["x"]
    assert run.result.sampler.nonfinite > 0 and np.all(x[..., 0] < 1.0)
    assert abs(x[..., 0].mean() - TRUNCATED_MEAN) < N_SE * mcse_mean(x[..., 0])


def test_a_chain_that_never_moves_is_not_converged():
    # a step far too large and no adaptation: every proposal is rejected
    options = SamplerOptions(**{**ONE_CHAIN, "step_size": 1e4, "warmup": 0, "seed": 8, "block_size": BLOCK})
    result = sample(REGRESSION_TARGET, options).result
    assert not result.converged and "did not move" in result.message
    assert result.sampler.acceptance < 1e-3


def test_time_limit_returns_the_draws_so_far():
    options = SamplerOptions(**{**LANGEVIN, "time_limit": 1e-6, "seed": 9, "draws": 3 * BLOCK, "block_size": BLOCK})
    result = sample(PRODUCT, options).result
    assert result.status == Status.TIME_LIMIT
    assert result.draws == BLOCK and result.estimates["x"].mean.shape == (4,)
    assert f"{BLOCK} of {3 * BLOCK}" in result.message


def test_result_and_inference_data():
    import arviz as az

    run = sample(REGRESSION_TARGET, SamplerOptions(seed=10, block_size=BLOCK, **ONE_CHAIN))
    result = run.result
    assert (result.chains, result.draws, result.init) == (1, 400, "prior")
    # R-hat compares chains: with one chain it is undefined and the run is not judged converged
    assert np.all(np.isnan(result.estimates["x"].rhat)) and not result.converged
    assert "at least two chains" in result.message
    assert result.sampled == (("theta", 3),) and result.device == jax.devices()[0].platform
    assert result.gradient_evaluations == 1 + 300 + 400
    idata = to_inference_data(run.draws, method="mala")
    assert idata.posterior["x"].shape == (1, 400, 3) and idata.posterior["position"].shape == (1, 400, 3)
    np.testing.assert_array_equal(idata.posterior["position"].values, run.draws.positions)
    assert set(idata.sample_stats.data_vars) == {"lp", "acceptance_rate", "diverging", "n_steps", "nonfinite"}
    np.testing.assert_allclose(az.rhat(idata, var_names=["x"], method="rank")["x"].values, result.estimates["x"].rhat)
    np.testing.assert_allclose(az.ess(idata, var_names=["x"], method="tail")["x"].values,
                               result.estimates["x"].ess_tail)
