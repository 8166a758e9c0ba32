"""The finite teacher–student MLP behind ``hciz_mlp``, as a sampler :class:`Target`.

At input dimension d (the theory is its d → ∞ limit) the spec's network is, with k_l = round(γ_l d),
k_0 = d and n = round(α d²) training samples (theory note §1, §8; experiments.md):

    h₁ = σ(W₁ x/√d),   h_l = σ(W_l h_{l−1}/√k_{l−1}),   f_W(x) = v·h_L/√k_L
    y_μ = f_{W⁰}(x_μ) + √Δ z_μ,   x_μ ~ N(0, I_d),  z_μ ~ N(0, 1),  W⁰_l iid N(0, 1),  v ~ P_v

The student is Bayes-optimal: the posterior of W with the true prior and likelihood,

    p(W | D) ∝ exp(−Σ_l ‖W_l‖²/2 − (1/2Δ) Σ_μ (y_μ − f_W(x_μ))²),

with the readout v known (the theory treats it as quenched), so every W_l is sampled and nothing is
integrated out. Gaussian weights only: the Rademacher prior is discrete and the theory's binary case
would need a continuous relaxation, which is not the network the theory describes. The teacher, the
readouts and the data come from ``seed`` (independent child streams of ``numpy.random.SeedSequence``
for the teacher weights, the readouts, the training inputs, the label noise and the test inputs).
Initialisers: ``prior`` (a prior draw) and ``teacher`` (W = W⁰); which branch a run finds from each is
itself a result (metastability).

Estimators (names as in the theory's report):

    generalization_error   ½ mean over test inputs of (f_W(x) − f_{W⁰}(x))²: half the Gibbs error on the
                           noiseless outputs, ε* by Nishimori (Δ excluded, as in the theory)
    R2                     R_d − Tr((S⁰ − S) S⁰)/(k d²), S = Wᵀ diag(v) W, R_d = 1 + γ (E v)² (one hidden layer)
    Q                      W_i·W⁰_i/‖W⁰_i‖² averaged over the units of each atom of P_v (one hidden layer; a
                           number for one-atom laws, a list in the theory's atom order for ``four_point``)
    Q_1 … Q_L              the same per layer for deep nets; Q_L per atom
    Q_weighted             Σ_i v_i² Q_i / Σ_i v_i² over the last layer (the theory's E_v[v² Q(v)])
    Q_units                the per-unit overlaps of the last layer (unit order; ``info["v"]`` holds |v_i|)
    Q_matched              the last layer's overlap with the best-matching student unit (largest cosine) of
                           the same readout value, averaged over the teacher's units: invariant under
                           relabelling, but biased upwards by about √(2 ln k/d) where nothing is learned (a
                           maximum of k overlaps of size d^(-1/2))

Q is normalised by each teacher unit's norm rather than by d (the theory's (1/d) W_i·W⁰_i, equal as
d → ∞ since ‖W⁰_i‖²/d → 1): in the scalar channel of the theory the posterior mean of a unit is
proportional to the teacher's weights, so W_i·W⁰_i scales with ‖W⁰_i‖², and the normalisation removes
the O(d^(-1/2)) fluctuation of the teacher's norms (the teacher has Q = 1 exactly). R2 is the theory's
R_d − mmse with the matrix error in its overlap form: by Nishimori E Tr((S⁰ − S)S⁰) = E‖S⁰ − ⟨S⟩‖², so
its mean is the theory's Tr(S S⁰)/(k d²) = R_2 at d → ∞, without the O(d^(-1/2)) fluctuation of the
teacher's ‖S⁰‖² (whose error does not scale with it); the teacher has R2 = R_d. Q is measured in the
teacher's labelling of the hidden
units: a draw that specialised onto a permuted labelling reports Q ≈ 0 while its generalisation error,
which is permutation invariant, is low.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from solvers.experiments.target import Target
from solvers.theories.hciz_mlp.activations import build
from solvers.theories.hciz_mlp.readouts import atoms
from solvers.theories.hciz_mlp.spec import HCIZSpec, HermiteActivation, NamedActivation

#: Largest number of sampled weights accepted.
MAX_PARAMETERS = 5_000_000
#: Readout laws whose atoms are exact values of |v| (continuous laws have quadrature atoms instead).
DISCRETE_READOUTS = ("ones", "rademacher", "four_point")


class ExperimentSizes(BaseModel):
    """The finite sizes of the network (the theory is the limit d → ∞ at fixed α, γ)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    d: int = Field(ge=2, le=2000, description="Input dimension d; widths k_l = round(γ_l d), n = round(α d²).")
    n_test: int = Field(1000, ge=1, le=100_000, description="Test inputs of the generalisation error.")


# ---- σ as a JAX function ---------------------------------------------------------------------------
def _hermite_series(mu: list[float]) -> Any:
    """σ = Σ_l (μ_l/l!) He_l (probabilists'), by the recursion He_{l+1} = x He_l − l He_{l−1}."""
    coef = [m / math.factorial(l) for l, m in enumerate(mu)]

    def sigma(x: jax.Array) -> jax.Array:
        prev, cur = jnp.ones_like(x), x
        out = coef[0] * prev + (coef[1] * cur if len(coef) > 1 else 0.0)
        for l in range(1, len(coef) - 1):
            prev, cur = cur, x * cur - l * prev
            out = out + coef[l + 1] * cur
        return out

    return sigma


_NAMED = {
    "relu": jax.nn.relu,
    "tanh": jnp.tanh,
    "tanh2": lambda x: jnp.tanh(2.0 * x),
    "erf": jax.scipy.special.erf,
    "quadratic": lambda x: x**2,
    "he2": lambda x: (x**2 - 1.0) / math.sqrt(2.0),
    "he3": lambda x: (x**3 - 3.0 * x) / math.sqrt(6.0),
    "he2_he3": lambda x: (x**2 - 1.0) / math.sqrt(2.0) + (x**3 - 3.0 * x) / 6.0,
    "elu": jax.nn.elu,
}


def activation(act: object) -> Any:
    """The spec's σ as a JAX function, with the same transformations as the theory's Hermite data."""
    if isinstance(act, HermiteActivation):
        return _hermite_series(act.hermite)
    name = act.name if isinstance(act, NamedActivation) else str(act)
    if name == "sign":
        raise ValueError("activation: sign has zero derivative almost everywhere; gradient-based samplers cannot "
                         "sample its posterior")
    base = _NAMED[name]
    if not isinstance(act, NamedActivation) or not (act.remove_linear or act.unit_variance):
        return base
    mu1 = build(name).mu1 if act.remove_linear else 0.0
    scale = 1.0 / math.sqrt(build(name, remove_linear=act.remove_linear).second_moment) if act.unit_variance else 1.0
    return lambda x: scale * (base(x) - mu1 * x)


def _readouts(name: str, k: int, rng: np.random.Generator) -> np.ndarray:
    if name == "ones":
        return np.ones(k)
    if name == "rademacher":
        return rng.choice([-1.0, 1.0], size=k)
    if name == "gaussian":
        return rng.standard_normal(k)
    if name == "uniform":
        return rng.uniform(-math.sqrt(3.0), math.sqrt(3.0), size=k)
    if name == "four_point":
        return rng.choice(np.array([-3.0, -1.0, 1.0, 3.0]) / math.sqrt(5.0), size=k)
    raise ValueError(f"readout: unknown law {name!r}")


# ---- the target ------------------------------------------------------------------------------------
def build_target(spec: HCIZSpec, sizes: ExperimentSizes, seed: int = 0) -> Target:
    """The Bayes-optimal posterior of the student's weights at input dimension ``sizes.d``."""
    if spec.weight_prior != "gaussian":
        raise ValueError("weight_prior: the experiment samples Gaussian weights only (a Rademacher prior is "
                         "discrete; a continuous relaxation would be a different network)")
    if not spec.Delta > 0:
        raise ValueError("Delta: noiseless labels (Δ = 0) give a posterior supported on the interpolating weights, "
                         "which a sampler cannot explore; use Δ > 0")
    sigma = activation(spec.activation)
    d, L = sizes.d, spec.depth
    widths = [d] + [max(1, round(g * d)) for g in spec.gammas]
    n = max(1, round(spec.alpha * d * d))
    shapes = [(widths[l + 1], widths[l]) for l in range(L)]
    dim = sum(a * b for a, b in shapes)
    if dim > MAX_PARAMETERS:
        raise ValueError(f"d: the network has {dim} weights, more than the {MAX_PARAMETERS} a sampler accepts")
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)]
    teacher_np = [streams[0].standard_normal(shp) for shp in shapes]
    k = widths[-1]
    v_np = _readouts(spec.readout, k, streams[1])
    X = jnp.asarray(streams[2].standard_normal((n, d)))
    noise = np.sqrt(spec.Delta) * streams[3].standard_normal(n)
    X_test = jnp.asarray(streams[4].standard_normal((sizes.n_test, d)))
    v = jnp.asarray(v_np)
    teacher = [jnp.asarray(W) for W in teacher_np]
    offsets = np.cumsum([0] + [a * b for a, b in shapes])
    Delta = float(spec.Delta)

    def unpack(theta: jax.Array) -> list[jax.Array]:
        return [theta[offsets[l] : offsets[l + 1]].reshape(shapes[l]) for l in range(L)]

    def forward(weights: list[jax.Array], inputs: jax.Array) -> jax.Array:
        h = inputs
        for l, W in enumerate(weights):
            h = sigma(h @ W.T / math.sqrt(widths[l]))
        return h @ v / math.sqrt(k)

    y = forward(teacher, X) + jnp.asarray(noise)
    f_test_teacher = forward(teacher, X_test)

    # per-atom groups of the last layer's units, in the theory's atom order (ascending v²)
    groups: list[np.ndarray] | None = None
    if spec.readout in DISCRETE_READOUTS:
        groups = [np.flatnonzero(np.isclose(v_np**2, a)) for a in atoms(spec.readout).v2]
    v2 = jnp.asarray(v_np**2)
    teacher_norms = [jnp.asarray(np.sum(W**2, axis=1)) for W in teacher_np]
    M0 = teacher_np[0] @ teacher_np[0].T
    self_overlap = float(v_np @ (M0 * M0) @ v_np) if L == 1 else float("nan")  # Tr(S⁰S⁰)
    R_d = 1.0 + spec.gammas[0] * atoms(spec.readout).mean ** 2
    same_readout = jnp.asarray(v_np[:, None] == v_np[None, :])  # units a relabelling may exchange

    def log_prior(theta: jax.Array) -> jax.Array:
        return -0.5 * jnp.sum(theta**2)

    def log_likelihood(theta: jax.Array) -> jax.Array:
        return -0.5 * jnp.sum((y - forward(unpack(theta), X)) ** 2) / Delta

    def minibatch_log_likelihood(theta: jax.Array, idx: jax.Array) -> jax.Array:
        r = y[idx] - forward(unpack(theta), X[idx])
        return -0.5 * (n / idx.shape[0]) * jnp.sum(r**2) / Delta

    def estimators(theta: jax.Array) -> dict[str, jax.Array]:
        weights = unpack(theta)
        out = {"generalization_error": 0.5 * jnp.mean((forward(weights, X_test) - f_test_teacher) ** 2)}
        overlaps = [jnp.sum(W * W0, axis=1) / norm for W, W0, norm in zip(weights, teacher, teacher_norms,
                                                                            strict=True)]
        last = overlaps[-1]
        if groups is None:
            per_atom = None
        elif len(groups) == 1:
            per_atom = jnp.mean(last)
        else:
            per_atom = jnp.stack([jnp.mean(last[g]) if g.size else jnp.nan for g in groups])
        if L == 1:
            M = weights[0] @ teacher[0].T
            out["R2"] = R_d - (self_overlap - v @ (M * M) @ v) / (k * d * d)
            if per_atom is not None:
                out["Q"] = per_atom
        else:
            for l in range(L - 1):
                out[f"Q_{l + 1}"] = jnp.mean(overlaps[l])
            if per_atom is not None:
                out[f"Q_{L}"] = per_atom
        out["Q_weighted"] = jnp.sum(v2 * last) / jnp.sum(v2)
        out["Q_units"] = last
        ratio = weights[-1] @ teacher[-1].T / teacher_norms[-1][None, :]  # (student, teacher)
        cosine = ratio * jnp.sqrt(teacher_norms[-1][None, :] / jnp.sum(weights[-1] ** 2, axis=1)[:, None])
        best = jnp.argmax(jnp.where(same_readout, cosine, -jnp.inf), axis=0)
        out["Q_matched"] = jnp.mean(ratio[best, jnp.arange(k)])
        return out

    def prior_draw(key: jax.Array) -> jax.Array:
        return jax.random.normal(key, (dim,))

    theta_teacher = jnp.concatenate([W.ravel() for W in teacher])

    return Target(
        dim=dim,
        log_prior=log_prior,
        log_likelihood=log_likelihood,
        init={"prior": prior_draw, "teacher": lambda key: theta_teacher},
        estimators=estimators,
        n_data=n,
        minibatch_log_likelihood=minibatch_log_likelihood,
        sampled=tuple((f"W{l + 1}", a * b) for l, (a, b) in enumerate(shapes)),
        integrated_out=(),
        info={
            "network": "teacher–student MLP, Bayes-optimal posterior, readout known",
            "d": d, "widths": widths[1:], "n": n, "n_test": sizes.n_test, "depth": L,
            "alpha_effective": n / d**2, "gamma_effective": [w / d for w in widths[1:]],
            "Delta": Delta, "readout": spec.readout, "v": [float(abs(x)) for x in v_np], "seed": seed,
            "teacher_self_overlap_R2": self_overlap / (k * d * d) if L == 1 else None,  # → R_d as d → ∞
        },
    )


def _branch(report: dict[str, Any], branch: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    if branch is None:
        return report["order_parameters"], report["observables"]
    for b in report["branches"]:
        if b["name"] == branch:
            return b["order_parameters"], b["observables"]
    raise KeyError(f"no branch {branch!r} in the report (branches: {[b['name'] for b in report['branches']]})")


def theory_observables(report: dict[str, Any], *, branch: str | None = None) -> dict[str, Any]:
    """The theory's values of the estimators (same names), from a solve of the same spec.

    ``branch`` picks a branch by name (``universal``, ``specialized``, …; default: the equilibrium). Q of a
    continuous readout law is reported per quadrature atom, which has no finite-network counterpart
    beyond ``Q_weighted``.
    """
    op, obs = _branch(report, branch)
    out: dict[str, Any] = {"generalization_error": obs["generalization_error"]}
    Q = op["Q"]
    # several atoms that are not the four-point law's |v| ∈ {1, 3}/√5: quadrature atoms of a continuous law
    four_point = np.array([1.0, 3.0]) / math.sqrt(5.0)
    continuous = "v" in op and not (len(op["v"]) == 2 and np.allclose(np.sort(op["v"]), four_point))
    if obs.get("R_d") is None:  # reduced deep model: Q = [Q_1, …, Q_{L−1}, Q_L(v)]
        for l, q in enumerate(Q[:-1]):
            out[f"Q_{l + 1}"] = q
        last = Q[-1]
        if not continuous:
            out[f"Q_{len(Q)}"] = last
    else:
        last = Q
        out["R2"] = op["R2"]
        if not continuous:
            out["Q"] = Q
    v2 = np.asarray(op["v"]) ** 2 if "v" in op else np.ones(1)
    p = np.asarray(op["v_probability"]) if "v_probability" in op else np.ones(1)
    out["Q_weighted"] = float(np.sum(p * v2 * np.asarray(last)) / np.sum(p * v2))
    return out
