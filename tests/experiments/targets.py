"""Targets with known answers for the sampler tests, and comparisons within a stated number of standard errors.

Every expected value here is computed from the target's definition (closed-form Gaussian posteriors, the exact
stationary law of the discretised Langevin recursion), never from the samplers' output.
"""

from __future__ import annotations

import jax

jax.config.update("jax_enable_x64", True)  # global: the exact comparisons below are made in float64

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from solvers.experiments.diagnostics import mcse_ess_rhat  # noqa: E402
from solvers.experiments.target import Target  # noqa: E402

#: Agreement is required within this many Monte-Carlo standard errors.
N_SE = 4.0


def gaussian_target(mean: np.ndarray, cov: np.ndarray, *, init_scale: float = 1.0, key: str | None = None) -> Target:
    """N(mean, cov), split (arbitrarily) into a prior part and a likelihood part."""
    mean = jnp.asarray(mean)
    precision = jnp.asarray(np.linalg.inv(cov))
    dim = mean.shape[0]

    def log_prior(x):
        return -0.25 * (x - mean) @ precision @ (x - mean)

    return Target(
        dim=dim,
        log_prior=log_prior,
        log_likelihood=log_prior,
        init={"prior": lambda k: mean + init_scale * jax.random.normal(k, (dim,))},
        estimators=lambda x: {"x": x},
        sampled=(("x", dim),),
        cache_key=key,
    )


def ill_conditioned(dim: int = 4, condition: float = 100.0, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """A correlated Gaussian whose covariance has condition number ``condition`` (eigenvalues 1 … 1/condition)."""
    rng = np.random.default_rng(seed)
    rotation, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    eigenvalues = np.geomspace(1.0, 1.0 / condition, dim)
    cov = rotation @ np.diag(eigenvalues) @ rotation.T
    return rng.normal(size=dim), (cov + cov.T) / 2


class LinearRegression:
    """Bayesian linear regression y = X θ + N(0, σ²), θ ~ N(0, σ_p² I): exact Gaussian posterior."""

    def __init__(self, n_data: int = 30, dim: int = 3, prior_variance: float = 1.0, noise_variance: float = 0.25,
                 seed: int = 2):
        rng = np.random.default_rng(seed)
        self.x = rng.normal(size=(n_data, dim))
        theta = rng.normal(size=dim)
        self.y = self.x @ theta + np.sqrt(noise_variance) * rng.normal(size=n_data)
        self.prior_variance, self.noise_variance = prior_variance, noise_variance
        self.precision = np.eye(dim) / prior_variance + self.x.T @ self.x / noise_variance
        self.cov = np.linalg.inv(self.precision)
        self.mean = self.cov @ (self.x.T @ self.y) / noise_variance

    def target(self) -> Target:
        x, y = jnp.asarray(self.x), jnp.asarray(self.y)
        n_data, dim = self.x.shape
        sp2, s2 = self.prior_variance, self.noise_variance

        def minibatch(theta, idx):
            r = y[idx] - x[idx] @ theta
            return -(n_data / idx.shape[0]) * jnp.sum(r**2) / (2 * s2)

        return Target(
            dim=dim,
            log_prior=lambda theta: -jnp.sum(theta**2) / (2 * sp2),
            log_likelihood=lambda theta: -jnp.sum((y - x @ theta) ** 2) / (2 * s2),
            init={"prior": lambda k: jnp.sqrt(sp2) * jax.random.normal(k, (dim,))},
            estimators=lambda theta: {"x": theta},
            n_data=n_data,
            minibatch_log_likelihood=minibatch,
            sampled=(("theta", dim),),
        )


def langevin_stationary_cov(precision: np.ndarray, step: float) -> np.ndarray:
    """Exact stationary covariance of x ← x + h ∇log N(μ, P⁻¹)(x) + √(2h) ξ: the AR(1) recursion
    x − μ ← (I − hP)(x − μ) + √(2h) ξ has S = (I − hP) S (I − hP) + 2h I, solved by S = (P − h P²/2)⁻¹."""
    return np.linalg.inv(precision - 0.5 * step * precision @ precision)


def mcse_mean(draws: np.ndarray) -> float:
    """ArviZ MCSE of the mean of (chains, draws) values."""
    return float(mcse_ess_rhat(np.asarray(draws, dtype=float)[:, :, None])["stderr"][0])


def assert_moments(x: np.ndarray, mean: np.ndarray, cov: np.ndarray, *, n_se: float = N_SE) -> dict[str, float]:
    """Means and every covariance entry of draws x (chains, draws, dim) within n_se MCSEs of the exact values.

    The MCSE of a second moment is the MCSE of the mean of the per-draw products (x_i − x̄_i)(x_j − x̄_j).
    Returns the largest |error|/MCSE found (the tolerance achieved)."""
    dim = x.shape[-1]
    worst = {"mean": 0.0, "cov": 0.0}
    centred = x - x.mean(axis=(0, 1))
    for i in range(dim):
        se = mcse_mean(x[..., i])
        z = abs(x[..., i].mean() - mean[i]) / se
        assert z < n_se, f"mean[{i}] = {x[..., i].mean():.5g} vs exact {mean[i]:.5g}: {z:.2f} standard errors"
        worst["mean"] = max(worst["mean"], z)
        for j in range(i, dim):
            product = centred[..., i] * centred[..., j]
            se = mcse_mean(product)
            z = abs(product.mean() - cov[i, j]) / se
            assert z < n_se, f"cov[{i},{j}] = {product.mean():.5g} vs exact {cov[i, j]:.5g}: {z:.2f} standard errors"
            worst["cov"] = max(worst["cov"], z)
    return worst


def product_target(mean: np.ndarray, cov: np.ndarray, regression: LinearRegression, key: str | None = None) -> Target:
    """The Gaussian N(mean, cov) and the regression posterior side by side, independent: one run samples both,
    and each block's marginal is its own exact law. Estimators: "x" (the Gaussian block), "theta" (regression)."""
    gauss, blr = gaussian_target(mean, cov), regression.target()
    d = gauss.dim

    def split(z):
        return z[:d], z[d:]

    def init(k):
        k1, k2 = jax.random.split(k)
        return jnp.concatenate([gauss.init["prior"](k1), blr.init["prior"](k2)])

    return Target(
        dim=d + blr.dim,
        log_prior=lambda z: gauss.log_prior(split(z)[0]) + blr.log_prior(split(z)[1]),
        log_likelihood=lambda z: gauss.log_likelihood(split(z)[0]) + blr.log_likelihood(split(z)[1]),
        init={"prior": init},
        estimators=lambda z: {"x": split(z)[0], "theta": split(z)[1]},
        sampled=(("x", d), ("theta", blr.dim)),
        cache_key=key,
    )


# Shared targets and options: tests that sample the same target with the same compile-relevant options reuse the
# compiled code within one pytest run (only the seed, init and draws differ).
MEAN, COV = ill_conditioned()
REGRESSION = LinearRegression()
PRODUCT = product_target(MEAN, COV, REGRESSION, key="tests.product")
REGRESSION_TARGET = REGRESSION.target()
#: one step for both blocks of PRODUCT: h λ_max = 0.5 for the stiffest of them
LANGEVIN_STEP = 0.5 / max(np.linalg.eigvalsh(np.linalg.inv(COV)).max(), np.linalg.eigvalsh(REGRESSION.precision).max())
ADJUSTED = {
    "nuts": dict(method="nuts", chains=4, warmup=400, draws=1000),
    "hmc": dict(method="hmc", num_integration_steps=12, chains=4, warmup=400, draws=1500),
    "mala": dict(method="mala", chains=4, warmup=1000, draws=6000, thin=4),
}
LANGEVIN = dict(method="langevin", step_size=float(LANGEVIN_STEP), chains=4, warmup=2000, draws=4000, thin=10)
SGLD = dict(method="sgld", step_size=float(0.2 / np.linalg.eigvalsh(REGRESSION.precision).max()), batch_size=10,
            chains=4, warmup=500, draws=3000, thin=4)
BLOCK = 500
