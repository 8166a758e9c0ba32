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
    b_test, c_test        the same projection of the test discrepancy y0 − E[f(x0) | W] on the test inputs: the
                          population discrepancy of the paper's Fig. 2, which the population theory predicts
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

from solvers.core.results import Catalogue
from solvers.experiments.gaussian_readout import GaussianReadout
from solvers.experiments.target import Target
from solvers.theories.base import ExperimentRefused, Predictions
from solvers.theories.rubin_cavity.common.erf_projections import teacher
from solvers.theories.rubin_cavity.experiment_sizes import ExperimentSizes, check, integral
from solvers.theories.rubin_cavity.finite_sample.data import draw_inputs
from solvers.theories.rubin_cavity.specs import FiniteSampleSpec, PotentialSpec, SelfConsistentSpec

__all__ = ["ExperimentSizes", "build_target", "theory_observables"]


def build_target(
    spec: FiniteSampleSpec | SelfConsistentSpec, sizes: ExperimentSizes | None = None, seed: int = 0
) -> Target:
    """The posterior of the hidden weights of the spec's network, readout integrated out."""
    sizes = sizes or ExperimentSizes()
    if isinstance(spec, PotentialSpec):
        raise ExperimentRefused(("model", "mode"), "the potential mode has no network (b, c are given, not learned); "
                                "use finite_sample or self_consistent")
    check(spec, sizes)  # the service checks the sizes against its limits before building
    N, D, P = integral(spec.N, "N"), integral(spec.D, "D"), integral(spec.P, "P")
    if isinstance(spec, FiniteSampleSpec):
        P_test, data_seed = spec.P_test, spec.seed
    else:
        P_test, data_seed = sizes.P_test, seed
    X_np, Xt_np = draw_inputs(P, D, P_test, data_seed)
    y_np, yt_np = teacher(X_np[:, 0], spec.epsilon), teacher(Xt_np[:, 0], spec.epsilon)
    proj = jnp.asarray(_projector(X_np[:, 0]))  # the theory's least-squares projector onto [H1, H3]
    proj_test = jnp.asarray(_projector(Xt_np[:, 0]))
    X_all, y, y_test = jnp.asarray(np.concatenate([X_np, Xt_np])), jnp.asarray(y_np), jnp.asarray(yt_np)
    s, T, sw2 = float(spec.s_a2), float(spec.T), float(spec.sigma_w2)
    prior_sd = math.sqrt(sw2 / D)
    edges = jnp.linspace(-sizes.rho_range, sizes.rho_range, sizes.rho_bins + 1)
    kt = min(sizes.test_points, P_test)
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
        bc_test = proj_test @ (y_test - phi_test @ post.mean)
        rho = W[:, 0]
        counts = jnp.histogram(rho, bins=edges)[0]
        return {
            "b": bc[0],
            "c": bc[1],
            "b_test": bc_test[0],
            "c_test": bc_test[1],
            "R": jnp.mean(rho**2),
            "weight_covariance.perpendicular": jnp.sum(W[:, 1:] ** 2) / (N * max(D - 1, 1)),
            "aligned_fraction": jnp.mean(jnp.abs(rho) > threshold),
            "rho_histogram": counts / N,
            "test_mean": phi_test[:kt] @ post.mean,  # a draw keeps the first test_points predictions only
        }

    def derived(means: Any) -> dict[str, jax.Array]:
        return {
            "test_mse": means["b"] ** 2 + 6.0 * means["c"] ** 2,
            "test_mse_measured": jnp.mean((y_test[:kt] - means["test_mean"]) ** 2),
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
            "N": N, "D": D, "P": P, "P_test": P_test, "test_points": kt, "data_seed": data_seed,
            "T": T, "s_a2": s, "sigma_w2": sw2, "epsilon": float(spec.epsilon),
            "u": P**2 * s / (T**2 * D), "eta": P * N * s / (T * D),
            "prior_R": sw2 / D,
            "aligned_threshold": threshold,
            "rho_bin_edges": [float(e) for e in np.asarray(edges)],
        },
        derived=derived,
    )


def _projector(z: np.ndarray) -> np.ndarray:
    """Least-squares projector onto [H1(z), H3(z)] (minimum norm when fewer than two samples)."""
    return np.linalg.pinv(np.column_stack([z, z**3 - 3.0 * z]))


def _aligned_weight(wells: Any) -> float | None:
    if not wells:
        return None
    return float(sum(w["weight"] for w in wells if w["kind"] == "aligned"))


def theory_observables(catalogue: Catalogue, *, branch: str | None = None) -> Predictions:
    """The theory's values of the estimators (same names), on one branch of a solve of the same spec.

    finite_sample: its (b, c, R), well weights and measured test error on the same data. self_consistent:
    the finite-D solution (the catalogue's ``finite_D`` note, at the network's D) when it converged, else the
    D → ∞ saddle point; its (b, c) is also the prediction of ``b_test``, ``c_test`` (finite_sample: the projection of
    its posterior mean's discrepancy on the same test inputs). ``aligned_fraction`` is the
    theory's mass of the aligned wells (basins split at the barrier), which the experiment counts with a fixed
    threshold.
    """
    found = catalogue.get(branch) if branch is not None else catalogue.equilibrium_branch
    if found is None or found.report is None:
        names = [b.name for b in catalogue.branches]
        raise KeyError(f"no branch {branch!r} with a report in the solve (branches: {names})")
    op, obs = found.report.order_parameters, found.report.observables
    notes = catalogue.notes.observables if catalogue.notes is not None else {}
    finite_d = notes.get("finite_D")
    if finite_d is not None and finite_d.get("converged"):
        b, c, R = finite_d["b"], finite_d["c"], finite_d.get("R", op.get("R"))
        wells = finite_d.get("potential_wells")
        cov = finite_d.get("weight_covariance", obs.get("weight_covariance"))
        test_mse = finite_d.get("test_mse")
    else:
        b, c, R = op.get("b"), op.get("c"), op.get("R")
        wells, cov, test_mse = obs.get("potential_wells"), obs.get("weight_covariance"), obs.get("test_mse")
    out: dict[str, Any] = {"b": b, "c": c, "R": R, "test_mse": test_mse, "aligned_fraction": _aligned_weight(wells)}
    if "finite_D" in notes:  # a population theory: its (b, c) is the discrepancy on fresh inputs
        out["b_test"], out["c_test"] = b, c
    else:  # finite_sample: its posterior mean's discrepancy projected on the same test inputs
        out["b_test"], out["c_test"] = notes.get("b_test"), notes.get("c_test")
    if cov is not None:
        out["weight_covariance.perpendicular"] = cov.get("perpendicular")
    out["test_mse_measured"] = obs.get("test_mse_measured")
    return {k: float(v) for k, v in out.items() if v is not None}
