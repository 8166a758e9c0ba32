"""The finite teacher–student MLP behind ``hciz_mlp``, as a sampler :class:`Target`.

At input dimension d (the theory is its d → ∞ limit) the spec's network is, with k_l = round(γ_l d),
k_0 = d and n = round(α d²) training samples (theory note §1, §8; experiments.md):

    h₁ = σ₁(W₁ x/√d),   h_l = σ_l(W_l h_{l−1}/√k_{l−1}),   f_W(x) = v·h_L/√k_L
    y_μ = f_{W⁰}(x_μ) + √Δ z_μ,   x_μ ~ N(0, I_d),  z_μ ~ N(0, 1),  W⁰_l iid N(0, 1),  v ~ P_v

(σ_l = σ in every layer, or the spec's list [σ₁, σ₂] at depth 2: the two-hidden-layer model with a linear
component, whose theory has the product overlap Q₂:₁ of W^(2:1) = W₂W₁/√k₁.)

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
    train_mse              (1/n) Σ_μ (y_μ − f_W(x_μ))² (≈ Δ at the teacher)
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

Depth 2 adds what the per-neuron overlaps of the two-hidden-layer theory need, in any labelling:

    M1 = W₁W₁⁰ᵀ/d,   M21 = W^(2:1)W^(2:1)⁰ᵀ/d  (W^(2:1) = W₂W₁/√k₁),   W2 = W₂

:func:`aligned_overlaps` matches each draw to the teacher (hidden neurons are exchangeable: a chain may
permute them, and flip signs where σ is odd) before reading Q₁ per first-layer neuron (binned by the
teacher's effective readout v₂ᵢ = (W₂⁰ᵀv)ᵢ/√k₂, ``info["v2"]``), Q₂ per entry and Q₂:₁ per row of W^(2:1);
:func:`aligned_draws` puts them in place of the raw matrices, so that ``solvers.experiments.summarize``
reports each with its Monte-Carlo error, ESS and R-hat.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from solvers.core.results import Catalogue
from solvers.experiments.draws import Draws
from solvers.experiments.target import Target
from solvers.theories.base import ExperimentRefused, Predictions
from solvers.theories.hciz_mlp.activations import build
from solvers.theories.hciz_mlp.experiment_sizes import (
    DISCRETE_READOUTS,
    ExperimentSizes,
    check,
    training_samples,
    widths,
)
from solvers.theories.hciz_mlp.readouts import atoms
from solvers.theories.hciz_mlp.spec import HCIZSpec, HermiteActivation, NamedActivation

__all__ = ["ExperimentSizes", "activation", "build_target", "theory_observables"]

#: Readout laws whose atoms are exact values of |v| (continuous laws have quadrature atoms instead).
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
        raise ExperimentRefused(("model", "activation"), "sign has zero derivative almost everywhere; "
                                "gradient-based samplers cannot sample its posterior")
    base = _NAMED[name]
    if not isinstance(act, NamedActivation) or not (act.remove_linear or act.unit_variance):
        return base
    mu1 = build(name).mu1 if act.remove_linear else 0.0
    scale = 1.0 / math.sqrt(build(name, remove_linear=act.remove_linear).second_moment) if act.unit_variance else 1.0
    return lambda x: scale * (base(x) - mu1 * x)


def layer_activations(spec: HCIZSpec) -> list[Callable[[jax.Array], jax.Array]]:
    """σ_l of every hidden layer as JAX functions (one σ for all layers, or the spec's list at depth 2)."""
    act = spec.activation
    if isinstance(act, list):
        return [activation(a) for a in act]
    return [activation(act)] * spec.depth


def is_odd(sigma: Callable[[jax.Array], jax.Array]) -> bool:
    """σ(−x) = −σ(x) on a grid (then a sign flip of a neuron and of its outgoing weights is a symmetry)."""
    x = jnp.linspace(0.1, 4.0, 41)
    return bool(np.allclose(np.asarray(sigma(-x)), -np.asarray(sigma(x)), atol=1e-6))


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
    check(spec, sizes)  # the service checks the sizes against its limits before building
    sigmas = layer_activations(spec)
    d, L = sizes.d, spec.depth
    dims = widths(spec, d)
    n = training_samples(spec, d)
    shapes = [(dims[l + 1], dims[l]) for l in range(L)]
    dim = sum(a * b for a, b in shapes)
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)]
    teacher_np = [streams[0].standard_normal(shp) for shp in shapes]
    k = dims[-1]
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
            h = sigmas[l](h @ W.T / math.sqrt(dims[l]))
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

    if L == 2:
        W21_teacher = teacher[1] @ teacher[0] / math.sqrt(dims[1])

    def estimators(theta: jax.Array) -> dict[str, jax.Array]:
        weights = unpack(theta)
        out = {"generalization_error": 0.5 * jnp.mean((forward(weights, X_test) - f_test_teacher) ** 2),
               "train_mse": jnp.mean((y - forward(weights, X)) ** 2)}
        if L == 2:  # the inputs of the aligned per-neuron overlaps
            out["M1"] = weights[0] @ teacher[0].T / d
            out["M21"] = (weights[1] @ weights[0] / math.sqrt(dims[1])) @ W21_teacher.T / d
            out["W2"] = weights[1]
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
            "d": d, "widths": dims[1:], "n": n, "n_test": sizes.n_test, "depth": L,
            "alpha_effective": n / d**2, "gamma_effective": [w / d for w in dims[1:]],
            "Delta": Delta, "readout": spec.readout, "v": [float(abs(x)) for x in v_np],
            "readout_values": [float(x) for x in v_np], "seed": seed,
            "teacher_self_overlap_R2": self_overlap / (k * d * d) if L == 1 else None,  # → R_d as d → ∞
            # effective readouts of the first-layer neurons, v₂ = W₂⁰ᵀv/√k₂ (depth 2)
            "v2": [float(x) for x in teacher_np[1].T @ v_np / math.sqrt(k)] if L == 2 else None,
        },
    )


def theory_observables(catalogue: Catalogue, *, branch: str | None = None) -> Predictions:
    """The theory's values of the estimators (same names), on one branch of a solve of the same spec.

    ``branch`` picks a branch by name (``universal``, ``specialized``, …; default: the equilibrium). Q of a
    continuous readout law is reported per quadrature atom, which has no finite-network counterpart
    beyond ``Q_weighted``.
    """
    found = catalogue.get(branch) if branch is not None else catalogue.equilibrium_branch
    if found is None or found.report is None:
        names = [b.name for b in catalogue.branches]
        raise KeyError(f"no branch {branch!r} with a report in the solve (branches: {names})")
    op, obs = found.report.order_parameters, found.report.observables
    out: Predictions = {"generalization_error": float(obs["generalization_error"])}
    Q = op["Q"]
    # several atoms that are not the four-point law's |v| ∈ {1, 3}/√5: quadrature atoms of a continuous law
    four_point = np.array([1.0, 3.0]) / math.sqrt(5.0)
    continuous = "v" in op and len(op["v"]) > 1 and not (len(op["v"]) == 2
                                                         and np.allclose(np.sort(op["v"]), four_point))

    def figure(q: Any) -> float | np.ndarray:
        return np.asarray(q, dtype=float) if isinstance(q, (list, tuple, np.ndarray)) else float(q)

    if "Q21" in op:  # two hidden layers with a linear component: Q = [E Q_1(v₂), E Q_2(v, v₂)]
        out["Q_1"] = float(Q[0])
        # a row of W₂ with readout v: its overlap is E_{v₂} Q_2(v, v₂)
        rows = np.asarray(op["Q2"], dtype=float) @ np.asarray(op["v2_probability"], dtype=float)
        if not continuous:
            out["Q_2"] = float(rows[0]) if rows.size == 1 else rows
        p, v2 = np.asarray(op["v_probability"]), np.asarray(op["v"]) ** 2
        out["Q_weighted"] = float(np.sum(p * v2 * rows) / np.sum(p * v2))
        return out
    if obs.get("R_d") is None:  # reduced deep model: Q = [Q_1, …, Q_{L−1}, Q_L(v)]
        for l, q in enumerate(Q[:-1]):
            out[f"Q_{l + 1}"] = float(q)
        last = Q[-1]
        if not continuous:
            out[f"Q_{len(Q)}"] = figure(last)
    else:
        last = Q
        out["R2"] = float(op["R2"])
        if not continuous:
            out["Q"] = figure(Q)
    v2 = np.asarray(op["v"]) ** 2 if "v" in op else np.ones(1)
    p = np.asarray(op["v_probability"]) if "v_probability" in op else np.ones(1)
    out["Q_weighted"] = float(np.sum(p * v2 * np.asarray(last)) / np.sum(p * v2))
    return out


# ---- two hidden layers: per-neuron overlaps in the teacher's labelling -------------------------------------
def aligned_overlaps(target: Target, spec: HCIZSpec, estimates: Mapping[str, np.ndarray],
                     every: int = 1) -> dict[str, np.ndarray]:
    """Per-neuron teacher–student overlaps of a depth-2 network, each draw aligned to the teacher first (NumPy).

    Hidden neurons are exchangeable: layer-1 neurons by any permutation (with a sign flip of a neuron and of
    its column of W₂ when σ₁ is odd), layer-2 neurons with equal readouts (and, with a sign flip, with opposite
    readouts when σ₂ is odd). Each draw is matched to the teacher by maximum-weight assignment on the overlap
    matrices M1 = W₁W₁⁰ᵀ/d and M21 = W^(2:1)W^(2:1)⁰ᵀ/d, then normalised by the teacher's self-overlaps:

        Q1[i] = W₁ᵢ·W₁ᵢ⁰/|W₁ᵢ⁰|²,  Q21[j] = W^(2:1)ⱼ·W^(2:1)ⱼ⁰/|W^(2:1)ⱼ⁰|²,  Q2[i] = Σⱼ W₂ⱼᵢ W₂ⱼᵢ⁰/Σⱼ (W₂ⱼᵢ⁰)²

    (Q2 per column i, i.e. per first-layer neuron, the resolution of Q₂(v, v₂) for one readout class; ``Q2_entries``
    keeps every entry for multi-class readouts). ``estimates`` are the draws of ``M1``, ``M21`` and ``W2``
    (chains, draws, …); every ``every``-th draw is aligned. Returns arrays (chains, draws', neurons).
    """
    from scipy.optimize import linear_sum_assignment

    if spec.depth != 2:
        raise ValueError("depth: the aligned overlaps are those of a network with two hidden layers")
    d = int(target.info["d"])
    k1, k2 = (int(k) for k in target.info["widths"])
    v = np.asarray(target.info["readout_values"], dtype=float)
    teacher = np.asarray(target.init["teacher"](jax.random.PRNGKey(0)), dtype=float)
    W1t, W2t = teacher[: k1 * d].reshape(k1, d), teacher[k1 * d :].reshape(k2, k1)
    W21t = W2t @ W1t / np.sqrt(k1)
    n1 = np.sum(W1t**2, axis=1) / d
    n21 = np.sum(W21t**2, axis=1) / d
    odd1, odd2 = (is_odd(sigma) for sigma in layer_activations(spec))
    # layer-2 rows j (student) and k (teacher) may be matched with sign +1 when v_j = v_k, and with sign −1 when
    # v_j = −v_k and σ₂ is odd (then v_j σ₂(z) = v_k σ₂(−z)); never across different |v|
    same = np.isclose(v[:, None], v[None, :])
    flipped = np.isclose(v[:, None], -v[None, :]) & odd2 & ~same
    allowed = same | flipped
    M1, M21, W2 = (np.asarray(estimates[k])[:, ::every] for k in ("M1", "M21", "W2"))
    chains, n_draws = M1.shape[:2]
    Q1 = np.empty((chains, n_draws, k1))
    Q21 = np.empty((chains, n_draws, k2))
    Q2 = np.empty((chains, n_draws, k1))
    Q2e = np.empty((chains, n_draws, k2, k1))
    for c in range(chains):
        for t in range(n_draws):
            m1 = M1[c, t]
            rows, cols = linear_sum_assignment(-(np.abs(m1) if odd1 else m1))
            perm1 = np.empty(k1, dtype=int)
            perm1[cols] = rows  # student neuron matched to teacher neuron i
            sign1 = np.sign(m1[perm1, np.arange(k1)]) if odd1 else np.ones(k1)
            sign1[sign1 == 0] = 1.0
            Q1[c, t] = sign1 * m1[perm1, np.arange(k1)] / n1
            m21 = M21[c, t]
            signed = np.where(flipped, -m21, m21)
            rows2, cols2 = linear_sum_assignment(np.where(allowed, -signed, 1e12))
            perm2 = np.empty(k2, dtype=int)
            perm2[cols2] = rows2
            sign2 = np.where(flipped[perm2, np.arange(k2)], -1.0, 1.0)
            Q21[c, t] = sign2 * m21[perm2, np.arange(k2)] / n21
            aligned = W2[c, t][np.ix_(perm2, perm1)] * sign2[:, None] * sign1[None, :]
            Q2e[c, t] = aligned * W2t
            Q2[c, t] = np.sum(aligned * W2t, axis=0) / np.sum(W2t**2, axis=0)
    return {"Q1": Q1, "Q2": Q2, "Q21": Q21, "Q2_entries": Q2e}


#: The raw matrices :func:`aligned_overlaps` reads (not observables: they depend on the labelling).
ALIGNMENT_INPUTS = ("M1", "M21", "W2")


def aligned_draws(target: Target, spec: HCIZSpec, draws: Draws) -> Draws:
    """The draws of a depth-2 run with the alignment inputs replaced by the aligned per-neuron overlaps
    ``Q1``, ``Q2`` (per first-layer neuron) and ``Q21`` (per row of W^(2:1)) and their layer means ``Q1_mean``,
    ``Q2_mean``, ``Q21_mean``: what ``solvers.experiments.summarize`` should judge and report."""
    ov = aligned_overlaps(target, spec, draws.estimates)
    estimates = {k: v for k, v in draws.estimates.items() if k not in ALIGNMENT_INPUTS}
    for name in ("Q1", "Q2", "Q21"):
        estimates[name] = ov[name]
        estimates[f"{name}_mean"] = ov[name].mean(axis=-1)
    return dataclasses.replace(draws, estimates=estimates)
