"""The finite denoising problem behind ``matrix_denoising``, as a sampler :class:`Target`.

At dimension d (the theory is its d → ∞ limit), with k = round(γ d) and exactly the theory's scalings:

    S̃(W) = Wᵀ diag(v) W/√(k d),   W ∈ R^{k×d} iid N(0, 1),   v_a iid from P_v (known),
    Y = √λ S̃(W⁰) + Z,   Z GOE: Z_ij ~ N(0, 1/d) (i < j), Z_ii ~ N(0, 2/d), i.e. density ∝ exp(−(d/4) Tr Z²)

and the posterior over W with the true (Gaussian) prior,

    p(W | Y) ∝ exp(−‖W‖²/2 − (d/4) ‖Y − √λ S̃(W)‖²_F)

(the log-likelihood carries the GOE normalisation over the d(d + 1)/2 free entries). The theory is
rotation invariant, which is the Gaussian-W case; the posterior over W has the symmetry W → O W for
every O ∈ O(k) that preserves diag(v), so only functions of S̃ are estimated. The teacher, the readouts
and the noise come from ``seed`` (child streams of ``numpy.random.SeedSequence`` in that order).

Estimators (names as in the theory's observables):

    mmse      (1/(2d)) ‖S̃(W) − S̃(W⁰)‖²_F: half the Gibbs error per entry, the MMSE by Nishimori
    overlap   1 − (1/d) Tr((S̃⁰ − S̃(W))(S̃⁰ − M)), M = (Σ_a v_a/√(kd)) I the known mean of S̃: by Nishimori
              (1/d) E Tr((S̃⁰ − S̃)(S̃⁰ − M)) = (1/d) E‖S̃⁰ − ⟨S̃⟩‖², so this is m_S = 1 − mmse with the error
              in its overlap form, "1" being the unit spectral variance of S̃. (The raw overlap
              (1/d) Tr((S̃ − M)(S̃⁰ − M)) carries the teacher's (1/d)‖S̃⁰ − M‖² = 1 + 1/d ± O(d^(-1/2)),
              whose fluctuation the error does not follow.) Averaged over instances (teachers and
              noise), 1 − overlap and mmse estimate the same number: a check of the sampler.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from solvers.experiments.target import Target
from solvers.theories.matrix_denoising.spec import MatrixDenoisingSpec

#: Largest number of sampled weights accepted.
MAX_PARAMETERS = 5_000_000


class ExperimentSizes(BaseModel):
    """The finite size of the problem (the theory is the limit d → ∞ at fixed γ)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    d: int = Field(ge=2, le=2000, description="Dimension d of S̃ (d × d); W is k × d with k = round(γ d).")


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


def build_target(spec: MatrixDenoisingSpec, sizes: ExperimentSizes, seed: int = 0) -> Target:
    """The posterior of W given one observation Y at dimension ``sizes.d``."""
    d = sizes.d
    k = max(1, round(spec.gamma * d))
    if k * d > MAX_PARAMETERS:
        raise ValueError(f"d: W has {k * d} entries, more than the {MAX_PARAMETERS} a sampler accepts")
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)]
    W0 = streams[0].standard_normal((k, d))
    v_np = _readouts(spec.readout, k, streams[1])
    A = streams[2].standard_normal((d, d))
    Z = (A + A.T) / math.sqrt(2.0 * d)
    norm = 1.0 / math.sqrt(k * d)
    S0_np = (W0.T * v_np) @ W0 * norm
    root = math.sqrt(spec.snr)
    Y = jnp.asarray(root * S0_np + Z)
    v, S0 = jnp.asarray(v_np), jnp.asarray(S0_np)
    mean = float(v_np.sum()) * norm  # E[S̃ | v] = (Σ v_a/√(kd)) I
    C0 = S0 - mean * jnp.eye(d)
    self_overlap = float(np.sum(np.asarray(C0) ** 2))
    # GOE normalisation: d(d − 1)/2 entries of variance 1/d and d of variance 2/d
    log_norm = -0.5 * (d * (d - 1) / 2) * math.log(2 * math.pi / d) - 0.5 * d * math.log(4 * math.pi / d)

    def S(theta: jax.Array) -> jax.Array:
        W = theta.reshape(k, d)
        return (W.T * v) @ W * norm

    def log_prior(theta: jax.Array) -> jax.Array:
        return -0.5 * jnp.sum(theta**2)

    def log_likelihood(theta: jax.Array) -> jax.Array:
        return -0.25 * d * jnp.sum((Y - root * S(theta)) ** 2) + log_norm

    def estimators(theta: jax.Array) -> dict[str, jax.Array]:
        s = S(theta)
        return {
            "mmse": 0.5 * jnp.sum((s - S0) ** 2) / d,
            "overlap": 1.0 - jnp.sum((S0 - s) * C0) / d,
        }

    def prior_draw(key: jax.Array) -> jax.Array:
        return jax.random.normal(key, (k * d,))

    theta_teacher = jnp.asarray(W0.ravel())
    info: dict[str, Any] = {
        "network": "S̃ = Wᵀ diag(v) W/√(kd) observed as √λ S̃ + GOE",
        "d": d, "k": k, "gamma_effective": k / d, "snr": float(spec.snr), "readout": spec.readout, "seed": seed,
        "teacher_self_overlap": self_overlap / d,  # → 1 as d → ∞
    }
    return Target(
        dim=k * d,
        log_prior=log_prior,
        log_likelihood=log_likelihood,
        init={"prior": prior_draw, "teacher": lambda key: theta_teacher},
        estimators=estimators,
        n_data=0,
        sampled=(("W", k * d),),
        integrated_out=(),
        info=info,
    )


def theory_observables(report: dict[str, Any], *, branch: str | None = None) -> dict[str, Any]:
    """The theory's mmse and overlap (its single branch ``bayes_optimal``)."""
    obs = report["observables"]
    if branch is not None:
        obs = next(b["observables"] for b in report["branches"] if b["name"] == branch)
    return {"mmse": obs["mmse"], "overlap": obs["overlap"]}
