"""The finite two-hidden-layer network behind the ``hciz_mlp`` depth-2 theory, as a sampler :class:`Target`.

Teacher and student share the architecture (Bayes-optimal, matched priors):

    f(x) = vᵀ σ₂(W₂ σ₁(W₁ x/√d)/√k₁)/√k₂,   y = f(x) + √Δ z,   x ~ N(0, I_d),  z ~ N(0, 1),

W₁ ∈ R^{k₁×d}, W₂ ∈ R^{k₂×k₁} with iid N(0, 1) entries (Gaussian weight prior: HMC needs a density), readouts
v ~ P_v drawn once and known to the student, k_l = round(γ_l d), n = round(αd²) training pairs. The posterior
is p(W|data) ∝ exp(−‖W‖²/2 − Σ_μ (y_μ − f(x_μ))²/(2Δ)) on the flat vector [W₁, W₂].

Estimators per draw (the theory's observables; experiments.md §1):
* ``generalization_error``: ½ E_x[(f_draw(x) − f_teacher(x))²] on a fixed test set: half the Gibbs error, which
  is ε* by the Nishimori identity (Δ not included);
* ``train_mse``: (1/n) Σ_μ (y_μ − f_draw(x_μ))²;
* ``M1`` = W₁W₁*ᵀ/d, ``M21`` = W^(2:1)W^(2:1)*ᵀ/d (W^(2:1) = W₂W₁/√k₁) and ``W2``: what the per-neuron overlaps
  need. Hidden neurons are exchangeable (the chain may permute them), so :func:`aligned_overlaps` matches
  each draw to the teacher before reading Q₁ per first-layer neuron (binned by the teacher's effective readout
  v₂ᵢ = (W₂*ᵀv)ᵢ/√k₂), Q₂ per entry and Q₂:₁ per row.

Everything inside the target is a pure JAX function of the position (it runs unchanged on a GPU).
:func:`sample_nuts` runs BlackJAX NUTS with window adaptation on it and returns the draws with the sampler's
statistics; :func:`summarise` gives means, Monte-Carlo standard errors (from ArviZ's ESS) and R-hat.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from solvers.experiments.target import Target
from solvers.theories.hciz_mlp.activations import named
from solvers.theories.hciz_mlp.spec import HCIZSpec, HermiteActivation, NamedActivation, build_activation

JaxFn = Callable[[jax.Array], jax.Array]

_RAW: dict[str, JaxFn] = {
    "relu": lambda x: jnp.maximum(x, 0.0),
    "tanh": jnp.tanh,
    "tanh2": lambda x: jnp.tanh(2.0 * x),
    "erf": jax.scipy.special.erf,
    "quadratic": lambda x: x * x,
    "he2": lambda x: (x * x - 1.0) / np.sqrt(2.0),
    "he3": lambda x: (x**3 - 3.0 * x) / np.sqrt(6.0),
    "he2_he3": lambda x: (x * x - 1.0) / np.sqrt(2.0) + (x**3 - 3.0 * x) / 6.0,
    "elu": lambda x: jnp.where(x > 0, x, jnp.expm1(jnp.minimum(x, 0.0))),
}


def jax_activation(act: object) -> JaxFn:
    """σ of one activation entry of a spec, as a JAX function (the same σ whose Hermite data the theory uses)."""
    if isinstance(act, HermiteActivation):
        mu = [float(m) for m in act.hermite]
        fact = np.cumprod([1.0, *range(1, len(mu))])

        def hermite(x: jax.Array) -> jax.Array:
            he_prev, he = jnp.ones_like(x), x
            out = mu[0] * he_prev + (mu[1] * he if len(mu) > 1 else 0.0)
            for order in range(2, len(mu)):
                he_prev, he = he, x * he - (order - 1) * he_prev
                out = out + (mu[order] / fact[order]) * he
            return out

        return hermite
    name = act.name if isinstance(act, NamedActivation) else str(act)
    if name not in _RAW:
        raise ValueError(f"activation {name!r} has no differentiable JAX form for HMC")
    raw = _RAW[name]
    lin = named(name).mu1 if isinstance(act, NamedActivation) and act.remove_linear else 0.0
    scale = build_activation(act).scale

    def fn(x: jax.Array) -> jax.Array:
        return scale * (raw(x) - lin * x)

    return fn


@dataclass(frozen=True)
class TwoLayerExperiment:
    """A drawn teacher, its data and test set, and the posterior target of the student."""

    target: Target
    teacher: jax.Array  # flat [W₁*, W₂*]
    v: np.ndarray
    v2: np.ndarray  # teacher's effective readouts of the first-layer neurons
    d: int
    k1: int
    k2: int
    n: int


def readout_draws(readout: str, size: int, rng: np.random.Generator) -> np.ndarray:
    if readout == "ones":
        return np.ones(size)
    if readout == "rademacher":
        return rng.choice([-1.0, 1.0], size=size)
    if readout == "four_point":
        return rng.choice(np.array([-3.0, -1.0, 1.0, 3.0]) / np.sqrt(5.0), size=size)
    if readout == "uniform":
        return rng.uniform(-np.sqrt(3.0), np.sqrt(3.0), size=size)
    return rng.standard_normal(size)


def build_experiment(spec: HCIZSpec, d: int, seed: int = 0, n_test: int = 4000) -> TwoLayerExperiment:
    """Teacher, data and the student's posterior for a depth-2 spec at input dimension d."""
    if spec.depth != 2:
        raise ValueError("the two-hidden-layer experiment needs depth 2")
    if spec.weight_prior != "gaussian":
        raise ValueError("HMC needs a density: the experiment supports the Gaussian weight prior only")
    g1, g2 = spec.gammas
    k1, k2 = max(1, round(g1 * d)), max(1, round(g2 * d))
    n = max(1, round(spec.alpha * d * d))
    act = spec.activation
    s1, s2 = (jax_activation(a) for a in (act if isinstance(act, list) else [act, act]))
    rng = np.random.default_rng(seed)
    v = readout_draws(spec.readout, k2, rng)
    W1s = rng.standard_normal((k1, d))
    W2s = rng.standard_normal((k2, k1))
    X = rng.standard_normal((n, d))
    X_test = rng.standard_normal((n_test, d))
    vj = jnp.asarray(v)

    def network(W1: jax.Array, W2: jax.Array, x: jax.Array) -> jax.Array:
        h1 = s1(x @ W1.T / np.sqrt(d))
        return s2(h1 @ W2.T / np.sqrt(k1)) @ vj / np.sqrt(k2)

    f_train = np.asarray(network(jnp.asarray(W1s), jnp.asarray(W2s), jnp.asarray(X)))
    y = f_train + np.sqrt(spec.Delta) * rng.standard_normal(n)
    Xj, yj, Xt = jnp.asarray(X), jnp.asarray(y), jnp.asarray(X_test)
    f_test = network(jnp.asarray(W1s), jnp.asarray(W2s), Xt)
    W1t, W2t = jnp.asarray(W1s), jnp.asarray(W2s)
    W21t = W2t @ W1t / np.sqrt(k1)
    m1 = k1 * d

    def unpack(theta: jax.Array) -> tuple[jax.Array, jax.Array]:
        return theta[:m1].reshape(k1, d), theta[m1:].reshape(k2, k1)

    def log_prior(theta: jax.Array) -> jax.Array:
        return -0.5 * jnp.sum(theta * theta)

    def log_likelihood(theta: jax.Array) -> jax.Array:
        W1, W2 = unpack(theta)
        r = yj - network(W1, W2, Xj)
        return -0.5 * jnp.sum(r * r) / spec.Delta

    def minibatch(theta: jax.Array, idx: jax.Array) -> jax.Array:
        W1, W2 = unpack(theta)
        r = yj[idx] - network(W1, W2, Xj[idx])
        return -0.5 * (n / idx.shape[0]) * jnp.sum(r * r) / spec.Delta

    def estimators(theta: jax.Array) -> dict[str, jax.Array]:
        W1, W2 = unpack(theta)
        diff = network(W1, W2, Xt) - f_test
        r = yj - network(W1, W2, Xj)
        W21 = W2 @ W1 / np.sqrt(k1)
        return {
            "generalization_error": 0.5 * jnp.mean(diff * diff),
            "train_mse": jnp.mean(r * r),
            "M1": W1 @ W1t.T / d,
            "M21": W21 @ W21t.T / d,
            "W2": W2,
        }

    teacher = jnp.concatenate([W1t.ravel(), W2t.ravel()])
    target = Target(
        dim=m1 + k2 * k1,
        log_prior=log_prior,
        log_likelihood=log_likelihood,
        init={
            "prior": lambda key: jax.random.normal(key, (m1 + k2 * k1,)),
            "teacher": lambda key: teacher,
        },
        estimators=estimators,
        n_data=n,
        minibatch_log_likelihood=minibatch,
        sampled=(("W1", m1), ("W2", k2 * k1)),
        info={"d": d, "k1": k1, "k2": k2, "n": n, "n_test": n_test, "seed": seed, "Delta": spec.Delta},
    )
    v2 = (W2s.T @ v) / np.sqrt(k2)
    return TwoLayerExperiment(target, teacher, v, v2, d, k1, k2, n)


def sample_nuts(target: Target, key: jax.Array, init: str, num_warmup: int, num_draws: int,
                chains: int = 2, dense_mass: bool = False, initial_step_size: float = 0.01) -> dict[str, Any]:
    """NUTS with window adaptation (BlackJAX), chains run one after the other from ``target.init[init]``.

    Returns the estimator draws stacked as (chains, draws, ...), the sampler statistics per draw
    (acceptance rate, divergences, leapfrog steps) and the gradient evaluations and seconds spent."""
    import blackjax

    out: dict[str, list[np.ndarray]] = {}
    stats: dict[str, list[np.ndarray]] = {"acceptance_rate": [], "is_divergent": [], "num_integration_steps": []}
    t0 = time.perf_counter()
    warmup_steps = 0
    for _ in range(chains):
        key, k_init, k_warm, k_draw = jax.random.split(key, 4)
        position = target.init[init](k_init)
        warmup = blackjax.window_adaptation(blackjax.nuts, target.logdensity, is_mass_matrix_diagonal=not dense_mass,
                                            initial_step_size=initial_step_size)
        (state, parameters), warm_info = warmup.run(k_warm, position, num_steps=num_warmup)
        warmup_steps += int(np.sum(np.asarray(warm_info.info.num_integration_steps)))
        kernel = blackjax.nuts(target.logdensity, **parameters)

        def one_step(st: Any, k: jax.Array, kernel: Any = kernel) -> tuple[Any, tuple]:
            st, info = kernel.step(k, st)
            return st, (target.estimators(st.position), info.acceptance_rate, info.is_divergent,
                        info.num_integration_steps)

        _, (est, acc, div, steps) = jax.lax.scan(jax.jit(one_step), state, jax.random.split(k_draw, num_draws))
        for name, values in est.items():
            out.setdefault(name, []).append(np.asarray(values))
        stats["acceptance_rate"].append(np.asarray(acc))
        stats["is_divergent"].append(np.asarray(div))
        stats["num_integration_steps"].append(np.asarray(steps))
    draws = {k: np.stack(v) for k, v in out.items()}
    sample_stats = {k: np.stack(v) for k, v in stats.items()}
    gradients = warmup_steps + int(np.sum(sample_stats["num_integration_steps"]))
    return {"draws": draws, "sample_stats": sample_stats, "gradient_evaluations": gradients,
            "seconds": time.perf_counter() - t0}


def summarise(draws: np.ndarray) -> dict[str, float]:
    """Mean, Monte-Carlo standard error (ArviZ, from the bulk ESS), bulk ESS and split R-hat of a (chains, draws)
    scalar series."""
    import arviz as az

    data = az.convert_to_dataset(np.asarray(draws, dtype=float)[None] if np.ndim(draws) == 1 else
                                 np.asarray(draws, dtype=float))
    name = next(iter(data.data_vars))
    return {
        "mean": float(np.mean(draws)),
        "stderr": float(az.mcse(data)[name].values),
        "ess": float(az.ess(data)[name].values),
        "rhat": float(az.rhat(data)[name].values),
    }


def is_odd(fn: JaxFn) -> bool:
    """σ(−x) = −σ(x) on a grid (then (W₁ᵢ, column i of W₂) → −(…) is a symmetry of the network)."""
    x = jnp.linspace(0.1, 4.0, 41)
    return bool(np.allclose(np.asarray(fn(-x)), -np.asarray(fn(x)), atol=1e-6))


def aligned_overlaps(ex: TwoLayerExperiment, spec: HCIZSpec, draws: dict[str, np.ndarray],
                     every: int = 1) -> dict[str, np.ndarray]:
    """Per-neuron teacher–student overlaps, each draw aligned to the teacher first (post-processing, NumPy).

    Hidden neurons are exchangeable: layer-1 neurons by any permutation (with a sign flip of a neuron and of
    its column of W₂ when σ₁ is odd), layer-2 neurons with equal readouts (and, with a sign flip, with opposite
    readouts when σ₂ is odd). Each draw is matched to the teacher by maximum-weight assignment on the overlap
    matrices W₁W₁*ᵀ/d and W^(2:1)W^(2:1)*ᵀ/d, then normalised by the teacher's self-overlaps:

        Q1[i] = W₁ᵢ·W₁ᵢ*/|W₁ᵢ*|²,  Q21[j] = W^(2:1)ⱼ·W^(2:1)ⱼ*/|W^(2:1)ⱼ*|²,  Q2[i] = Σⱼ W₂ⱼᵢ W₂ⱼᵢ*/Σⱼ W₂ⱼᵢ*²

    (Q2 per column i, i.e. per first-layer neuron, the resolution of Q₂(v, v₂) for one readout class; ``Q2_entries``
    keeps every entry for multi-class readouts). Returns arrays (chains, draws', neurons).
    """
    from scipy.optimize import linear_sum_assignment

    d, k1, k2 = ex.d, ex.k1, ex.k2
    teacher = np.asarray(ex.teacher, dtype=float)
    W1t, W2t = teacher[: k1 * d].reshape(k1, d), teacher[k1 * d :].reshape(k2, k1)
    W21t = W2t @ W1t / np.sqrt(k1)
    n1 = np.sum(W1t**2, axis=1) / d
    n21 = np.sum(W21t**2, axis=1) / d
    act = spec.activation if isinstance(spec.activation, list) else [spec.activation] * 2
    odd1, odd2 = (is_odd(jax_activation(a)) for a in act)
    # layer-2 rows j (student) and k (teacher) may be matched with sign +1 when v_j = v_k, and with sign −1 when
    # v_j = −v_k and σ₂ is odd (then v_j σ₂(z) = v_k σ₂(−z)); never across different |v|
    same = np.isclose(ex.v[:, None], ex.v[None, :])
    flipped = np.isclose(ex.v[:, None], -ex.v[None, :]) & odd2 & ~same
    allowed = same | flipped
    M1, M21, W2 = (np.asarray(draws[k])[:, ::every] for k in ("M1", "M21", "W2"))
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
