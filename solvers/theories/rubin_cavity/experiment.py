"""The finite network behind ``rubin_cavity``, as a sampler :class:`Target`.

The two-layer erf network of the 2024 paper and the cavity derivation, on Gaussian inputs with the
H1 + ε H3 teacher (seed blog "A Bayesian description of learning", theory note §1, §12):

    f(x) = Σ_{i=1..N} a_i erf(w_i·x),   w_i ~ N(0, σ_w²/D · I_D),   a_i ~ N(0, s_a2)
    p(W, a | D) ∝ exp(−(1/2T) Σ_μ (y_μ − f(x_μ))²) · prior,   T = σ² (a sum-of-squares Langevin run at
    temperature 2T samples it)
    x ~ N(0, I_D),  y = H1(z) + ε H3(z),  z = e·x with e = e₁,  H3(z) = z³ − 3z  (noise-free teacher)

The data are the theory's own: ``finite_sample_data.draw_inputs(P, D, P_test, seed)``, with the
spec's seed for ``mode: "finite_sample"`` (the solve sees the same training set) and the build seed
for ``mode: "self_consistent"`` (a population theory: any seed is a sample of it). The readout is
Gaussian-linear given W and is integrated out exactly: the target samples W from its marginal
posterior, N(y; 0, s_a2 ΦΦᵀ + T I) · prior(W), Φ = erf(X Wᵀ), and every estimator is averaged over the
readout in closed form. ``scaling`` (mean_field / standard) is an approximation of the theory, not a
property of the network: both scalings describe this same posterior.

Estimators (names as in the theory's report):

    b, c                  least-squares projection of the training residual E[y − f(X) | W] = T(s_a2ΦΦᵀ + T)⁻¹y
                          on [H1(z_μ), H3(z_μ)], as ``finite_sample`` defines (b, c)
    R                     (1/N) Σ_i ρ_i², ρ_i = w_i·e: the weight-covariance eigenvalue along e (prior σ_w²/D)
    weight_covariance.perpendicular   (1/(N(D − 1))) Σ_i |w_i⊥|², the covariance per orthogonal direction
    aligned_fraction      fraction of neurons with |ρ_i| > ``aligned_threshold`` (× N: aligned neurons)
    rho_histogram         fraction of neurons per fixed bin of ρ on [−rho_range, rho_range]
    test_mean             E[f(x0) | W] on the test inputs
    test_mse (derived)    b² + 6c² of the posterior-mean residual (the theory's population formula)
    test_mse_measured (derived)  mean over test inputs of (y0 − E[f(x0)])², the posterior-mean predictor
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
from solvers.theories.rubin_cavity.common.erf_projections import teacher
from solvers.theories.rubin_cavity.finite_sample.data import draw_inputs
from solvers.theories.rubin_cavity.specs import FiniteSampleSpec, PotentialSpec, SelfConsistentSpec

#: Largest number of sampled hidden weights accepted.
MAX_PARAMETERS = 5_000_000


class ExperimentSizes(BaseModel):
    """What the network needs beyond the spec (the self-consistent theory is a population theory)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    P_test: int = Field(
        500, ge=1, le=20_000,
        description="Test inputs for mode self_consistent (finite_sample uses the spec's P_test).",
    )
    aligned_threshold: float = Field(
        0.5, gt=0, le=10,
        description="A neuron counts as aligned when |ρ| = |w·e| exceeds this (the theory's barrier between the "
        "centre well, width of order (σ_w²/D)^(1/2), and the aligned well ρ* ≈ 0.7–1 lies in between; put it "
        "there).",
    )
    rho_bins: int = Field(40, ge=2, le=1000, description="Number of equal bins of the ρ histogram.")
    rho_range: float = Field(1.5, gt=0, le=100, description="The ρ histogram covers [−rho_range, rho_range].")


def _integral(value: float, field: str) -> int:
    if value != round(value) or value < 1:
        raise ValueError(f"{field}: a finite network needs an integer ≥ 1 (got {value})")
    return round(value)


def build_target(
    spec: FiniteSampleSpec | SelfConsistentSpec, sizes: ExperimentSizes | None = None, seed: int = 0
) -> Target:
    """The posterior of the hidden weights of the spec's network, readout integrated out."""
    sizes = sizes or ExperimentSizes()
    if isinstance(spec, PotentialSpec):
        raise ValueError("mode: the potential mode has no network (b, c are given, not learned); use finite_sample "
                         "or self_consistent")
    N, D, P = _integral(spec.N, "N"), _integral(spec.D, "D"), _integral(spec.P, "P")
    if isinstance(spec, FiniteSampleSpec):
        P_test, data_seed = spec.P_test, spec.seed
    else:
        P_test, data_seed = sizes.P_test, seed
    if N * D > MAX_PARAMETERS:
        raise ValueError(f"N: the network has {N * D} hidden weights, more than the {MAX_PARAMETERS} a sampler accepts")
    X_np, Xt_np = draw_inputs(P, D, P_test, data_seed)
    y_np, yt_np = teacher(X_np[:, 0], spec.epsilon), teacher(Xt_np[:, 0], spec.epsilon)
    H = np.column_stack([X_np[:, 0], X_np[:, 0] ** 3 - 3.0 * X_np[:, 0]])
    proj = jnp.asarray(np.linalg.pinv(H))  # the theory's least-squares projector onto [H1, H3]
    X_all, y, y_test = jnp.asarray(np.concatenate([X_np, Xt_np])), jnp.asarray(y_np), jnp.asarray(yt_np)
    s, T, sw2 = float(spec.s_a2), float(spec.T), float(spec.sigma_w2)
    prior_sd = math.sqrt(sw2 / D)
    edges = jnp.linspace(-sizes.rho_range, sizes.rho_range, sizes.rho_bins + 1)
    threshold = float(sizes.aligned_threshold)

    def weights(theta: jax.Array) -> jax.Array:
        return theta.reshape(N, D)

    def log_prior(theta: jax.Array) -> jax.Array:
        return -0.5 * jnp.sum(theta**2) / prior_sd**2

    def log_likelihood(theta: jax.Array) -> jax.Array:
        phi = jax.scipy.special.erf(X_all[:P] @ weights(theta).T)
        return GaussianReadout(phi, y, s, T).log_marginal()

    def estimators(theta: jax.Array) -> dict[str, jax.Array]:
        W = weights(theta)
        phi_all = jax.scipy.special.erf(X_all @ W.T)
        phi, phi_test = phi_all[:P], phi_all[P:]
        post = GaussianReadout(phi, y, s, T).posterior()
        residual = y - phi @ post.mean  # = T (s ΦΦᵀ + T)⁻¹ y
        bc = proj @ residual
        rho = W[:, 0]
        counts = jnp.histogram(rho, bins=edges)[0]
        return {
            "b": bc[0],
            "c": bc[1],
            "R": jnp.mean(rho**2),
            "weight_covariance.perpendicular": jnp.sum(W[:, 1:] ** 2) / (N * max(D - 1, 1)),
            "aligned_fraction": jnp.mean(jnp.abs(rho) > threshold),
            "rho_histogram": counts / N,
            "test_mean": phi_test @ post.mean,
        }

    def derived(means: Any) -> dict[str, jax.Array]:
        return {
            "test_mse": means["b"] ** 2 + 6.0 * means["c"] ** 2,
            "test_mse_measured": jnp.mean((y_test - means["test_mean"]) ** 2),
        }

    def prior_draw(key: jax.Array) -> jax.Array:
        return prior_sd * jax.random.normal(key, (N * D,))

    return Target(
        dim=N * D,
        log_prior=log_prior,
        log_likelihood=log_likelihood,
        init={"prior": prior_draw},
        estimators=estimators,
        n_data=P,  # no minibatch likelihood: the integrated-out readout couples every data point
        sampled=(("W", N * D),),
        integrated_out=("readout",),
        info={
            "network": "f(x) = Σ_i a_i erf(w_i·x), readout integrated out",
            "N": N, "D": D, "P": P, "P_test": P_test, "data_seed": data_seed,
            "T": T, "s_a2": s, "sigma_w2": sw2, "epsilon": float(spec.epsilon),
            "u": P**2 * s / (T**2 * D), "eta": P * N * s / (T * D),
            "prior_R": sw2 / D,
            "aligned_threshold": threshold,
            "rho_bin_edges": [float(e) for e in np.asarray(edges)],
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


def _aligned_weight(wells: list[dict[str, Any]] | None) -> float | None:
    if not wells:
        return None
    return float(sum(w["weight"] for w in wells if w["kind"] == "aligned"))


def theory_observables(report: dict[str, Any], *, branch: str | None = None) -> dict[str, Any]:
    """The theory's values of the estimators (same names), from a solve of the same spec.

    finite_sample: its (b, c, R), well weights and measured test error on the same data. self_consistent:
    the finite-D solution (``observables.finite_D``, at the network's D) when it converged, else the
    D → ∞ saddle point. ``aligned_fraction`` is the theory's mass of the aligned wells (basins split at the
    barrier), which the experiment counts with a fixed threshold.
    """
    op, obs = _branch(report, branch)
    finite_d = obs.get("finite_D")
    src = finite_d if (finite_d is not None and finite_d.get("converged")) else None
    if src is not None:
        b, c, R = src["b"], src["c"], src.get("R", op["R"])
        wells, cov = src.get("potential_wells"), src.get("weight_covariance", obs.get("weight_covariance"))
        test_mse = src["test_mse"]
    else:
        b, c, R = op["b"], op["c"], op["R"]
        wells, cov, test_mse = obs.get("potential_wells"), obs.get("weight_covariance"), obs.get("test_mse")
    out: dict[str, Any] = {"b": b, "c": c, "R": R, "test_mse": test_mse}
    aligned = _aligned_weight(wells)
    if aligned is not None:
        out["aligned_fraction"] = aligned
    if cov is not None and cov.get("perpendicular") is not None:
        out["weight_covariance.perpendicular"] = cov["perpendicular"]
    if obs.get("test_mse_measured") is not None:
        out["test_mse_measured"] = obs["test_mse_measured"]
    return {k: v for k, v in out.items() if v is not None}
