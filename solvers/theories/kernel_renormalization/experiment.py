"""The finite network behind ``kernel_renormalization``, as a sampler :class:`Target`.

One or L hidden layers of width N1 in standard parameterisation on the spec's own data set (the
same arrays the theory solves on, from :func:`datasets.materialize`):

    h¹ = W₁ x/√N0,   hˡ = W_l σ(hˡ⁻¹)/√N1 (l ≥ 2),   f(x) = v·σ(hᴸ)/√N1
    W₁ ~ N(0, 1/λ0),  W_l ~ N(0, 1/λ1) (l ≥ 2),  v ~ N(0, 1/λ1)
    p(W, v | D) ∝ exp(−(1/2T) Σ_μ (y_μ − f(x_μ))²) · prior            (T = 1/β, the spec's T)

Given the hidden weights the readout is Gaussian-linear (``a = v/√N1 ~ N(0, 1/(λ1 N1))`` on the
features σ(hᴸ)), so it is integrated out exactly (one Cholesky per evaluation): the target samples
the hidden weights from their marginal posterior and every estimator is the readout's conditional
average (Rao–Blackwellised). Estimators, named as the theory's observables:

    test_mean, test_second_moment     E[f(x0) | W] and E[f(x0)² | W] on the first ``test_points`` test inputs
    test_variance (derived)           test_second_moment − test_mean²: the function variance (no +T)
    generalization_error              mean over all test points of E[(y0 − f(x0))² | W]
    train_error                       the same on the training set
    Qbar                              λ1 E[‖v‖² | W]/N1: the readout-norm counterpart of Q̄ (of the last
                                      layer for deep nets; Q̄ = 1 at infinite width)
    class_distance.D2                 uᵀK̂u, K̂ = σ(h)σ(h)ᵀ/N1 on the training set, u = 1_A/P_A − 1_B/P_B (depth 1)
    class_distance.delta              N1 (D2 − uᵀKu): the theory's delta1 + delta2 (depth 1)
    weight_correlations.trace         tr(λ0 W₁ᵀW₁/N1 − I): the theory's tr(Λ1 + Λ2) (depth 1)
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from solvers.experiments.gaussian_readout import GaussianReadout
from solvers.experiments.target import Target
from solvers.theories.kernel_renormalization.datasets import materialize
from solvers.theories.kernel_renormalization.kernels import input_covariance, propagate
from solvers.theories.kernel_renormalization.spec import KernelRenormalizationSpec

#: Largest number of sampled hidden weights accepted.
MAX_PARAMETERS = 5_000_000


class ExperimentSizes(BaseModel):
    """The spec fixes the network; this only bounds what each draw returns."""

    model_config = ConfigDict(extra="forbid", strict=True)

    test_points: int = Field(
        100, ge=1, le=10_000,
        description="Per-test-point estimators (test_mean, test_second_moment) cover the first this many test "
        "inputs; the generalisation error always uses all of them.",
    )


def activation(name: str) -> Any:
    """σ as a JAX function (erf with variance parameter ½: erf(h) itself)."""
    if name == "erf":
        return jax.scipy.special.erf
    if name == "relu":
        return jax.nn.relu
    if name == "linear":
        return lambda h: h
    raise ValueError(f"unknown activation {name!r}")


def _class_contrast(y: np.ndarray) -> np.ndarray | None:
    """u = 1_A/P_A − 1_B/P_B with classes by the sign of y (y = 0 in neither), as the theory defines it."""
    a, b = y > 0, y < 0
    if not a.any() or not b.any():
        return None
    return np.where(a, 1.0 / a.sum(), 0.0) - np.where(b, 1.0 / b.sum(), 0.0)


def build_target(spec: KernelRenormalizationSpec, sizes: ExperimentSizes | None = None, seed: int = 0) -> Target:
    """The posterior of the hidden weights of the spec's network, readout integrated out.

    ``seed`` is unused: the spec's data (and their seed) define the network completely.
    """
    sizes = sizes or ExperimentSizes()
    if not spec.T > 0:
        raise ValueError("T: the experiment samples a finite-temperature posterior; T = 0 has none (use T > 0)")
    ds = materialize(spec.data)
    N0, N1, L, P = ds.N0, int(spec.N1), int(spec.depth), ds.P
    shapes = [("W1", (N1, N0))] + [(f"W{l}", (N1, N1)) for l in range(2, L + 1)]
    dim = sum(math.prod(s) for _, s in shapes)
    if dim > MAX_PARAMETERS:
        raise ValueError(f"N1: the network has {dim} hidden weights, more than the {MAX_PARAMETERS} a sampler accepts")
    lam0, lam1, T = float(spec.lambda0), float(spec.lambda1), float(spec.T)
    precisions = [lam0] + [lam1] * (L - 1)
    sigma = activation(spec.activation)
    s = 1.0 / (lam1 * N1)  # prior variance of a = v/√N1
    n_test = min(sizes.test_points, ds.X_test.shape[0])

    X, y = jnp.asarray(ds.X), jnp.asarray(ds.y)
    X_all = jnp.asarray(np.concatenate([ds.X, ds.X_test]))
    y_test = jnp.asarray(ds.y_test)
    u_np = _class_contrast(ds.y) if L == 1 else None
    u = None if u_np is None else jnp.asarray(u_np)
    d2_nngp = None
    if u_np is not None:
        K = propagate(spec.activation, input_covariance(ds.X, ds.X[:0], lam0)).train
        d2_nngp = float(u_np @ K @ u_np)  # the prior mean of uᵀK̂u (each unit is an independent draw)

    offsets = np.cumsum([0] + [math.prod(s) for _, s in shapes])

    def unpack(theta: jax.Array) -> list[jax.Array]:
        return [theta[offsets[i] : offsets[i + 1]].reshape(shp) for i, (_, shp) in enumerate(shapes)]

    def features(weights: list[jax.Array], inputs: jax.Array) -> jax.Array:
        phi = sigma(inputs @ weights[0].T / math.sqrt(N0))
        for W in weights[1:]:
            phi = sigma(phi @ W.T / math.sqrt(N1))
        return phi

    def log_prior(theta: jax.Array) -> jax.Array:
        return -0.5 * sum(lam * jnp.sum(W**2) for lam, W in zip(precisions, unpack(theta), strict=True))

    def log_likelihood(theta: jax.Array) -> jax.Array:
        return GaussianReadout(features(unpack(theta), X), y, s, T).log_marginal()

    def estimators(theta: jax.Array) -> dict[str, jax.Array]:
        weights = unpack(theta)
        phi_all = features(weights, X_all)
        phi, phi_test = phi_all[:P], phi_all[P:]
        post = GaussianReadout(phi, y, s, T).posterior()
        mean_t, var_t = post.predict(phi_test)
        mean_tr, var_tr = post.predict(phi)
        out = {
            "test_mean": mean_t[:n_test],
            "test_second_moment": (mean_t**2 + var_t)[:n_test],
            "generalization_error": jnp.mean((y_test - mean_t) ** 2 + var_t),
            "train_error": jnp.mean((y - mean_tr) ** 2 + var_tr),
            "Qbar": lam1 * post.second_moment_norm(),  # λ1 E‖v‖²/N1 = λ1 E‖a‖²
        }
        if u is not None:
            d2 = jnp.sum((u @ phi) ** 2) / N1
            out["class_distance.D2"] = d2
            out["class_distance.delta"] = N1 * (d2 - d2_nngp)
        if L == 1:
            out["weight_correlations.trace"] = lam0 * jnp.sum(weights[0] ** 2) / N1 - N0
        return out

    def prior_draw(key: jax.Array) -> jax.Array:
        keys = jax.random.split(key, L)
        parts = [jax.random.normal(k, shp) / math.sqrt(lam) for k, (_, shp), lam in zip(keys, shapes, precisions,
                                                                                       strict=True)]
        return jnp.concatenate([p.ravel() for p in parts])

    def derived(means: Any) -> dict[str, jax.Array]:
        return {"test_variance": means["test_second_moment"] - means["test_mean"] ** 2}

    return Target(
        dim=dim,
        log_prior=log_prior,
        log_likelihood=log_likelihood,
        init={"prior": prior_draw},
        estimators=estimators,
        n_data=P,  # no minibatch likelihood: the integrated-out readout couples every data point
        sampled=tuple((name, math.prod(shp)) for name, shp in shapes),
        integrated_out=("readout",),
        info={
            "network": "one hidden layer" if L == 1 else f"{L} hidden layers",
            "activation": spec.activation,
            "N0": N0, "N1": N1, "P": P, "P_test": int(ds.X_test.shape[0]), "test_points": n_test,
            "T": T, "lambda0": lam0, "lambda1": lam1, "alpha": P / N1,
            "readout_prior_variance": s,
            "class_distance_nngp": d2_nngp,
            "seed_used": False,
        },
        derived=derived,
    )


def _branch(report: dict[str, Any], branch: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    if branch is None:
        return report["order_parameters"], report["observables"]
    for b in report["branches"]:
        if b["name"] == branch:
            return b["order_parameters"], b["observables"]
    raise KeyError(f"no branch {branch!r} in the report (branches: {[b['name'] for b in report['branches']]})")


def theory_observables(
    report: dict[str, Any], *, sizes: ExperimentSizes | None = None, branch: str | None = None
) -> dict[str, Any]:
    """The theory's values of every estimator (same names), from a solve of the same spec.

    ``branch`` picks a branch by name (default: the equilibrium); ``sizes`` must be those of the
    experiment, so that the per-test-point lists cover the same test inputs.
    """
    sizes = sizes or ExperimentSizes()
    op, obs = _branch(report, branch)
    n = sizes.test_points
    qbar = op["Qbar"]
    out: dict[str, Any] = {
        "Qbar": float(qbar[-1] if isinstance(qbar, list) else qbar),
        "generalization_error": obs["generalization_error"],
        "train_error": obs["train_error"],
    }
    if obs.get("test_mean") is not None:
        mean, var = np.asarray(obs["test_mean"][:n]), np.asarray(obs["test_variance"][:n])
        out.update({"test_mean": mean, "test_variance": var, "test_second_moment": mean**2 + var})
    cd = obs.get("class_distance")
    if cd is not None:
        out["class_distance.D2"] = cd["D2"]
        out["class_distance.delta"] = cd["delta1"] + cd["delta2"]
    wc = obs.get("weight_correlations")
    if wc is not None:
        out["weight_correlations.trace"] = wc["trace_lambda1"] + wc["trace_lambda2"]
    return out
