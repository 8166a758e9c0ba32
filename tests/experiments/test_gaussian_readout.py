"""The integrated-out Gaussian readout against dense linear algebra, in both of its Cholesky forms."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import multivariate_normal

from solvers.experiments.gaussian_readout import GaussianReadout

jax.config.update("jax_enable_x64", True)


@pytest.mark.parametrize(("P", "N"), [(7, 3), (3, 7), (4, 4)])
def test_readout_posterior_equals_dense_formulas(P: int, N: int) -> None:
    rng = np.random.default_rng(P * 10 + N)
    phi, phi_new, y = rng.standard_normal((P, N)), rng.standard_normal((5, N)), rng.standard_normal(P)
    s, T = 0.7, 0.3
    cov = np.linalg.inv(np.eye(N) / s + phi.T @ phi / T)  # Σ of a | y
    mean = cov @ phi.T @ y / T
    readout = GaussianReadout(jnp.asarray(phi), jnp.asarray(y), s, T)
    post = readout.posterior()
    pred_mean, pred_var = post.predict(jnp.asarray(phi_new))
    assert float(readout.log_marginal()) == pytest.approx(
        multivariate_normal(np.zeros(P), s * phi @ phi.T + T * np.eye(P)).logpdf(y), rel=1e-12)
    assert np.allclose(post.mean, mean, rtol=1e-10, atol=1e-12)
    assert np.allclose(pred_mean, phi_new @ mean, rtol=1e-10, atol=1e-12)
    assert np.allclose(pred_var, np.einsum("ij,jk,ik->i", phi_new, cov, phi_new), rtol=1e-10, atol=1e-12)
    assert float(post.second_moment_norm()) == pytest.approx(mean @ mean + np.trace(cov), rel=1e-10)
