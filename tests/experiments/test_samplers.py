"""Every sampler against exact laws: an ill-conditioned correlated Gaussian (condition number 100) and Bayesian
linear regression (exact Gaussian posterior), sampled side by side as one product target (each block's marginal
is its own exact law, so one run checks both). The adjusted methods (NUTS, HMC, MALA) must reproduce the exact
means and covariances; unadjusted Langevin the exact stationary law of its discretised recursion (it is biased by
O(step), and the test checks that it resolves the bias); SGLD the exact posterior mean (its minibatch gradient is
unbiased and linear in θ here, so the recursion's mean is exact while its variance is inflated)."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.experiments import SamplerOptions, sample
from tests.experiments.targets import (
    ADJUSTED,
    BLOCK,
    COV,
    LANGEVIN,
    LANGEVIN_STEP,
    MEAN,
    N_SE,
    PRODUCT,
    REGRESSION,
    REGRESSION_TARGET,
    SGLD,
    assert_moments,
    langevin_stationary_cov,
    mcse_mean,
)


@pytest.fixture(scope="module", params=list(ADJUSTED))
def adjusted_run(request):
    return request.param, sample(PRODUCT, SamplerOptions(seed=11, block_size=BLOCK, **ADJUSTED[request.param]))


def test_ill_conditioned_gaussian(adjusted_run):
    _, run = adjusted_run
    assert np.linalg.cond(COV) == pytest.approx(100.0)
    assert run.result.sampler.nonfinite == 0
    assert_moments(run.draws.estimates["x"], MEAN, COV)
    # the reported estimate is the draws' mean, with ArviZ's MCSE
    est = run.result.estimates["x"]
    np.testing.assert_allclose(est.mean, run.draws.estimates["x"].mean(axis=(0, 1)), rtol=1e-12)
    assert np.all(np.abs(est.mean - MEAN) < N_SE * est.stderr)


def test_linear_regression(adjusted_run):
    name, run = adjusted_run
    assert_moments(run.draws.estimates["theta"], REGRESSION.mean, REGRESSION.cov)
    if name == "nuts":
        assert run.result.converged, run.result.message


@pytest.mark.slow
def test_nuts_dense_mass_matrix():
    options = SamplerOptions(method="nuts", mass_matrix="dense", chains=4, warmup=400, draws=1000, seed=12)
    run = sample(PRODUCT, options)
    assert_moments(run.draws.estimates["x"], MEAN, COV)
    assert_moments(run.draws.estimates["theta"], REGRESSION.mean, REGRESSION.cov)
    # a dense metric takes the correlations out: far fewer leapfrog steps than the diagonal one needs
    assert np.asarray(run.checkpoint.parameters["inverse_mass_matrix"]).shape == (4, PRODUCT.dim, PRODUCT.dim)


def test_langevin_matches_the_exact_law_of_its_recursion():
    gauss_precision, blr_precision = np.linalg.inv(COV), REGRESSION.precision
    h = LANGEVIN_STEP  # h λ_max = 0.5 for the stiffest block
    run = sample(PRODUCT, SamplerOptions(seed=13, block_size=BLOCK, **LANGEVIN))
    x = run.draws.estimates["x"]
    assert_moments(x, MEAN, langevin_stationary_cov(gauss_precision, h))
    assert_moments(run.draws.estimates["theta"], REGRESSION.mean, langevin_stationary_cov(blr_precision, h))
    # the test resolves the O(h) bias: along the Gaussian's stiffest direction the continuous law is many errors away
    eigenvalues, vectors = np.linalg.eigh(gauss_precision)
    assert h * eigenvalues[-1] > 0.3
    stiff = (x - MEAN) @ vectors[:, -1]
    assert (stiff**2).mean() - 1 / eigenvalues[-1] > 10 * mcse_mean(stiff**2)
    assert run.result.sampler.acceptance is None


def test_sgld_mean_is_exact_on_linear_regression():
    run = sample(REGRESSION_TARGET, SamplerOptions(seed=15, block_size=BLOCK, **SGLD))
    x = run.draws.estimates["x"]
    for i in range(x.shape[-1]):
        assert abs(x[..., i].mean() - REGRESSION.mean[i]) < N_SE * mcse_mean(x[..., i])
    # minibatch noise inflates the variance beyond that of the full-gradient recursion
    ula = langevin_stationary_cov(REGRESSION.precision, SGLD["step_size"])
    assert np.all(x.var(axis=(0, 1)) > np.diag(ula))
    assert run.result.gradient_evaluations == 4 * (500 + 3000 * 4)
