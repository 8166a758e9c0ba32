"""Derived observables (functions of posterior means) in the result: their mean is g at the sampled means, their
Monte-Carlo error that of the linearised per-draw series (delta method).

Checked on a correlated Gaussian of known mean against two independent computations: the linearised series
written out by hand with the analytic Jacobian (the reported error must be ArviZ's error of that series), and
the spread of the estimate over independent groups of chains (the reported error must describe it: the scaled
sample variance of the group estimates is χ²-distributed).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import chi2

from solvers.experiments import SamplerOptions, sample
from solvers.experiments.diagnostics import derived_estimates
from solvers.experiments.target import Target
from tests.experiments import reference_diagnostics as ref
from tests.experiments.targets import N_SE, gaussian_target

MEAN = np.array([0.8, -1.3, 0.5])
COV = np.array([[1.0, 0.6, 0.2], [0.6, 1.5, -0.4], [0.2, -0.4, 0.7]])
GROUPS, CHAINS_PER_GROUP = 20, 4


def g(m: np.ndarray) -> float:
    return m[0] * m[1] + m[2] ** 2


def jacobian(m: np.ndarray) -> np.ndarray:
    return np.array([m[1], m[0], 2 * m[2]])


def with_derived(target: Target) -> Target:
    def derived(means):
        x = means["x"]
        return {"product": x[0] * x[1] + x[2] ** 2, "scaled": 3.0 * x}

    return Target(dim=target.dim, log_prior=target.log_prior, log_likelihood=target.log_likelihood,
                  init=target.init, estimators=target.estimators, sampled=target.sampled, derived=derived)


@pytest.fixture(scope="module")
def run():
    target = with_derived(gaussian_target(MEAN, COV))
    options = SamplerOptions(method="mala", chains=GROUPS * CHAINS_PER_GROUP, warmup=300, draws=250, seed=4,
                             block_size=250)
    return target, sample(target, options)


def test_derived_mean_and_error_are_the_delta_method(run):
    result = run[1].result
    x = run[1].draws.estimates["x"]
    m = x.mean(axis=(0, 1))
    est = result.estimates["product"]
    assert est.mean == pytest.approx(g(m), rel=1e-12)
    series = g(m) + np.tensordot(x - m, jacobian(m), axes=(2, 0))  # the linearised series, by hand
    assert est.stderr == pytest.approx(ref.mcse_mean(series), rel=1e-9)
    assert est.ess_bulk == pytest.approx(ref.ess_bulk(series), rel=1e-9)
    assert est.rhat == pytest.approx(ref.rhat_rank(series), rel=1e-9)
    # a linear derived observable is exactly the estimator's own figures, scaled
    np.testing.assert_allclose(result.estimates["scaled"].mean, 3 * result.estimates["x"].mean, rtol=1e-12)
    np.testing.assert_allclose(result.estimates["scaled"].stderr, 3 * result.estimates["x"].stderr, rtol=1e-9)
    # and the estimate is right: within N_SE errors of g at the true mean
    assert abs(est.mean - g(MEAN)) < N_SE * est.stderr
    assert result.sampler.max_rhat >= est.rhat  # judged with the others


def test_derived_error_describes_the_spread_over_independent_chains(run):
    target, draws = run[0], run[1].draws
    x = draws.estimates["x"]
    means, variances = [], []
    for k in range(GROUPS):
        group = {"x": x[k * CHAINS_PER_GROUP:(k + 1) * CHAINS_PER_GROUP]}
        est = derived_estimates(target, group)[0]["product"]
        means.append(est.mean)
        variances.append(est.stderr**2)
    # (G − 1) s² / σ² ~ χ²(G − 1) when the reported σ is right (groups are independent runs)
    statistic = (GROUPS - 1) * np.var(means, ddof=1) / np.mean(variances)
    assert chi2.ppf(0.001, GROUPS - 1) < statistic < chi2.ppf(0.999, GROUPS - 1), statistic


def test_a_derived_name_may_not_shadow_an_estimator():
    target = gaussian_target(MEAN, COV)
    bad = Target(dim=3, log_prior=target.log_prior, log_likelihood=target.log_likelihood, init=target.init,
                 estimators=target.estimators, derived=lambda m: {"x": jnp.sum(m["x"])})
    with pytest.raises(ValueError, match="name of an estimator"):
        derived_estimates(bad, {"x": np.zeros((2, 3, 3)) + np.arange(3)})
