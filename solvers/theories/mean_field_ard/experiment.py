"""The finite network behind ``mean_field_ard``, as a :class:`~solvers.experiments.target.Target` for the samplers.

f(x) = N^{−γ} Σ_i a_i φ(w_iᵀx), w_i ~ N(0, (σ_w²/d) I_d), a_i ~ N(0, σ_a²), and the likelihood

    exp[−L(θ)/(2κ²)],   L(θ) = (1/P) Σ_μ (y_μ − f(x_μ))²,

the stationary law of the Langevin update θ ← θ − η((T/σ_θ²) θ + ∇L) + √(2Tη) ξ at T = 2κ² with the
mean squared loss (the prior variances σ_θ² are those above). The position is the flat vector
(W row-major, then a); both blocks are sampled (SGLD trains both), nothing is integrated out.

Estimators per draw θ: ``m_S`` (target overlap E[f y]/E[y²] on the test set), ``m_spurious_max``,
``test_mse``/``train_mse``/``test_error01`` of that draw (Gibbs quantities, on every input),
``f_test``/``f_train`` (the draw's predictions on the first ``sizes.prediction_points`` test and training
inputs: what a draw stores is bounded whatever P and P_test are), and the input-weight second moments that
MF-ARD's mechanism is about: ``second_moment_relevant`` = (1/(N|S|)) Σ_i Σ_{j∈S} W_ij² and
``second_moment_irrelevant`` the same off S (S: the parity's k coordinates, or x_1 of a single-index target).
The posterior-mean predictor — the theory's f̄ — is a function of the posterior means (``derived``):
``mean_predictor.test_mse`` and ``mean_predictor.train_mse``, the squared errors of f̄ on those inputs, which
the theory's ``test_mse``/``train_mse`` predict (the Gibbs ``test_mse`` adds the posterior variance of f);
``second_moment_ratio`` is the ratio of the two second moments' posterior means.

The network has the fixed Gaussian prior whatever the spec's ``model``: the SGLD the paper trains uses
uniform weight decay, which is this prior. For an ``mf_ard`` spec the network also reports the ARD
precisions its weights imply under the spec's reading (``rho_relevant``, ``rho_irrelevant``): ``shared``,
the fixed point (α₀ + N/2)/(β₀ + N m/2) at the network's second moments m (derived); ``per_unit``, the
posterior mean (α₀ + ½)/(β₀ + W_ij²/2) of each unit's own precision given its weight, averaged over units
and coordinates (an estimator) — what MF-ARD's ρ would be if the network's weights were its law's.

Initialisations: ``prior`` (a prior draw) and, for a parity target, ``aligned``: every unit carries a
relevant weight of size σ_w per coordinate with random signs σ_i ∈ {±1}^k (the irrelevant ones from the
prior) and the readout a_i = c Π_j σ_ij with c = 2^k N^{γ−1}/(k σ_w), which makes f the target exactly at
k = 2 (each of the 2^k sign patterns fires its k σ_w on the inputs x_S = σ_i only): a state far on the
aligned side, so that chains from the prior and from it bracket the posterior.

A population-limit spec (P = null) has no finite network; ``ExperimentSizes.P`` supplies the
training-set size of the network sampled for it.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from solvers.core.results import Catalogue
from solvers.experiments.target import Target
from solvers.theories.mean_field_ard.data import dataset, hermite_normalised, spurious_hermite, spurious_parities, walsh
from solvers.theories.mean_field_ard.experiment_sizes import ExperimentSizes, training_size
from solvers.theories.mean_field_ard.particle_sampler import activation_fn
from solvers.theories.mean_field_ard.spec import GeneratedData, MeanFieldARDSpec, ParityTarget


def build_target(spec: MeanFieldARDSpec, sizes: ExperimentSizes | None = None, seed: int | None = None) -> Target:
    """The network's posterior for ``spec`` on its data: generated inputs are drawn with ``seed`` (None: the
    spec's ``data.seed``, the data set the particle solver of the same spec uses); inline arrays ignore it."""
    sizes = sizes or ExperimentSizes()
    P = training_size(spec, sizes)  # (an ExperimentRefused, a ValueError, for a population limit without P)
    if spec.n_train is None:
        spec = spec.model_copy(update={"P": P})
    if isinstance(spec.data, GeneratedData) and seed is not None:
        spec = spec.model_copy(update={"data": spec.data.model_copy(update={"seed": seed})})
    data = dataset(spec)
    N, d = spec.N, spec.d
    phi = activation_fn(spec.activation)
    X, y = jnp.asarray(data.X), jnp.asarray(data.y)
    Xt, yt = jnp.asarray(data.X_test), jnp.asarray(data.y_test)
    scale = float(N) ** (-spec.gamma)
    inv_t = 1.0 / (2.0 * spec.kappa**2)
    prec_w, prec_a = d / spec.sigma_w2, 1.0 / spec.sigma_a2

    def unpack(theta: jax.Array) -> tuple[jax.Array, jax.Array]:
        return theta[: N * d].reshape(N, d), theta[N * d :]

    def f(theta: jax.Array, inputs: jax.Array) -> jax.Array:
        W, a = unpack(theta)
        return scale * phi(inputs @ W.T) @ a

    def log_prior(theta: jax.Array) -> jax.Array:
        W, a = unpack(theta)
        return -0.5 * prec_w * jnp.sum(W * W) - 0.5 * prec_a * jnp.sum(a * a)

    def log_likelihood(theta: jax.Array) -> jax.Array:
        return -inv_t * jnp.mean((y - f(theta, X)) ** 2)

    def minibatch_log_likelihood(theta: jax.Array, idx: jax.Array) -> jax.Array:
        # the mean over a minibatch is an unbiased estimate of the mean over the training set
        return -inv_t * jnp.mean((y[idx] - f(theta, X[idx])) ** 2)

    def prior_init(key: jax.Array) -> jax.Array:
        kw, ka = jax.random.split(key)
        W = jax.random.normal(kw, (N, d)) * math.sqrt(spec.sigma_w2 / d)
        a = jax.random.normal(ka, (N,)) * math.sqrt(spec.sigma_a2)
        return jnp.concatenate([W.ravel(), a])

    relevant = spec.target.k if isinstance(spec.target, ParityTarget) else 1
    inits = {"prior": prior_init}
    if isinstance(spec.target, ParityTarget):
        modes = np.stack([walsh(data.X_test, A) for A in spurious_parities(d, spec.target.k)])
        inits["aligned"] = aligned_initialiser(spec, prior_init)
    else:
        modes = np.stack([hermite_normalised(l, data.X_test[:, j]) for _, j, l in spurious_hermite(d, spec.target)])
    modes_j = jnp.asarray(modes)
    ey2 = float(np.mean(data.y_test**2))

    kt, ktr = min(sizes.prediction_points, int(Xt.shape[0])), min(sizes.prediction_points, int(X.shape[0]))
    ard = spec.ard_settings if spec.model == "mf_ard" else None

    def estimators(theta: jax.Array) -> dict[str, jax.Array]:
        ft, ftr = f(theta, Xt), f(theta, X)
        W2 = unpack(theta)[0] ** 2
        extra = {}
        if ard is not None and ard.precisions == "per_unit":
            unit_rho = (ard.alpha0 + 0.5) / (spec.beta0 + 0.5 * W2)
            extra = {"rho_relevant": jnp.mean(unit_rho[:, :relevant]),
                     "rho_irrelevant": jnp.mean(unit_rho[:, relevant:])}
        return {
            "m_S": jnp.mean(ft * yt) / ey2,
            "m_spurious_max": jnp.max(jnp.abs(modes_j @ ft)) / ft.shape[0],
            "test_mse": jnp.mean((yt - ft) ** 2),
            "test_error01": jnp.mean(jnp.sign(ft) != jnp.sign(yt)),
            "train_mse": jnp.mean((y - ftr) ** 2),
            "f_test": ft[:kt],  # a draw keeps its predictions on the first prediction_points inputs only
            "f_train": ftr[:ktr],
            "second_moment_relevant": jnp.mean(W2[:, :relevant]),
            "second_moment_irrelevant": jnp.mean(W2[:, relevant:]),
            **extra,
        }

    def derived(means: Any) -> dict[str, jax.Array]:
        out = {
            "mean_predictor.test_mse": jnp.mean((yt[:kt] - means["f_test"]) ** 2),
            "mean_predictor.train_mse": jnp.mean((y[:ktr] - means["f_train"]) ** 2),
            "second_moment_ratio": means["second_moment_relevant"] / means["second_moment_irrelevant"],
        }
        if ard is not None and ard.precisions == "shared":
            shape = ard.alpha0 if ard.update == "mean" else ard.alpha0 - 1.0
            for side in ("relevant", "irrelevant"):
                out[f"rho_{side}"] = (shape + 0.5 * N) / (spec.beta0 + 0.5 * N * means[f"second_moment_{side}"])
        return out

    return Target(
        dim=N * d + N,
        log_prior=log_prior,
        log_likelihood=log_likelihood,
        init=inits,
        estimators=estimators,
        n_data=int(X.shape[0]),
        minibatch_log_likelihood=minibatch_log_likelihood,
        sampled=(("W", N * d), ("a", N)),
        integrated_out=(),
        info={
            "network": "f(x) = N^-gamma sum_i a_i phi(w_i . x)",
            "temperature": 2.0 * spec.kappa**2,
            "loss": "mean squared error over the training set",
            "N": N, "d": d, "P": int(X.shape[0]), "P_test": int(Xt.shape[0]), "gamma": spec.gamma,
            "prediction_points": {"test": kt, "train": ktr},
            "prior_variance_w": spec.sigma_w2 / d, "prior_variance_a": spec.sigma_a2,
            "seed_used": isinstance(spec.data, GeneratedData),
        },
        derived=derived,
    )


def aligned_initialiser(spec: MeanFieldARDSpec, prior_init: Any) -> Any:
    """The ``aligned`` start of a parity network (see the module docstring)."""
    assert isinstance(spec.target, ParityTarget)
    N, d, k = spec.N, spec.d, spec.target.k
    size = math.sqrt(spec.sigma_w2)
    c = 2.0**k * float(N) ** (spec.gamma - 1.0) / (k * size)

    def init(key: jax.Array) -> jax.Array:
        kp, ks = jax.random.split(key)
        W = prior_init(kp)[: N * d].reshape(N, d)
        signs = jnp.where(jax.random.bernoulli(ks, 0.5, (N, k)), 1.0, -1.0)
        W = W.at[:, :k].set(size * signs)
        return jnp.concatenate([W.ravel(), c * jnp.prod(signs, axis=1)])

    return init


def theory_observables(catalogue: Catalogue, *, branch: str | None = None, ard: bool = False) -> dict[str, Any]:
    """The theory's values of the comparable estimators (same names), on ``branch`` of a solve of the same spec
    (default: the equilibrium).

    The theory's ``test_mse``/``train_mse`` are those of the mean predictor f̄; its ``test_error01_gibbs``
    (reduced solver) is the Gibbs 0-1 error, the posterior average of a draw's ``test_error01``. The weight second
    moments, their ratio and, with ``ard`` (an MF-ARD spec, whose network reports them too), the precisions are
    the branch's: the mechanism on the theory's side.
    """
    found = catalogue.get(branch) if branch is not None else catalogue.equilibrium_branch
    if found is None or found.report is None:
        names = [b.name for b in catalogue.branches]
        raise KeyError(f"no branch {branch!r} with a report in the solve (branches: {names})")
    op, obs = found.report.order_parameters, found.report.observables
    out: dict[str, Any] = {"m_S": float(op["m_S"])}
    for name, key in (("mean_predictor.test_mse", "test_mse"), ("mean_predictor.train_mse", "train_mse"),
                      ("test_error01", "test_error01_gibbs"), ("second_moment_relevant", "second_moment_relevant"),
                      ("second_moment_irrelevant", "second_moment_irrelevant")):
        if obs.get(key) is not None:
            out[name] = float(obs[key])
    if "second_moment_relevant" in out and out.get("second_moment_irrelevant"):
        out["second_moment_ratio"] = out["second_moment_relevant"] / out["second_moment_irrelevant"]
    if ard:
        for side in ("relevant", "irrelevant"):
            if op.get(f"rho_{side}") is not None:
                out[f"rho_{side}"] = float(op[f"rho_{side}"])
    return out
