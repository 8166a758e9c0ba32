"""BlackJAX MALA over a population of single-neuron weights (the inner step of the particle solver).

Each particle is one hidden unit's input weights w ∈ R^d, sampled from p_MF(w) ∝ e^{−U(w)} with the
readout integrated out (``finite_potential``). Particles move in prior-whitened coordinates
z = √ρ ⊙ w, where the prior is standard normal, so one isotropic MALA step size serves every
coordinate even when the ARD precisions differ by orders of magnitude. Everything here is a pure
JAX function of its arguments (jit-compiled once per shape; the residual, the precisions and the
step size are traced arguments), vectorised over particles with vmap: it runs unchanged on a GPU.

Averages for f̄ and for the second moments are accumulated over the last ``average`` steps in
``groups`` particle groups; the spread of the group means gives the Monte-Carlo standard error
(the particles are independent chains, so the groups are independent).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from jax.scipy.special import erf

#: Independent particle groups for the Monte-Carlo standard errors (batch means).
GROUPS = 16


def activation_fn(name: str) -> Any:
    if name == "relu":
        return jax.nn.relu
    if name == "erf":
        return erf
    return jnp.tanh


@dataclass(frozen=True)
class Physics:
    """The constants of the potential. Only the activation is static for compilation; the numbers are
    passed as a traced vector (``consts``), so a sweep in κ or N compiles once."""

    activation: str
    N: float
    gamma: float
    kappa: float
    sigma_a2: float
    #: per-unit ARD: the Student-t shape α₀ of every weight's prior (0: the Gaussian prior)
    student_alpha: float = 0.0

    @property
    def s(self) -> float:
        return self.kappa**2 * self.N ** (2.0 * self.gamma)

    def consts(self) -> jax.Array:
        """(A = 1/σ_a², s = κ² N^{2γ}, κ² N^γ, N^{1−γ}, κ² s, α₀ of a per-unit prior or 0)."""
        return jnp.asarray([1.0 / self.sigma_a2, self.s, self.kappa**2 * self.N**self.gamma,
                            self.N ** (1.0 - self.gamma), self.kappa**2 * self.s, self.student_alpha])


def neuron_terms(act: str, c: jax.Array, w: jax.Array, X: jax.Array, r: jax.Array) -> tuple[jax.Array, ...]:
    """φ(Xw), Λ(w), J_r(w) and ⟨a|w⟩ for one particle (``c`` = Physics.consts())."""
    phi = activation_fn(act)(X @ w)
    P = X.shape[0]
    J = phi @ r / P
    S = jnp.mean(phi * phi)
    lam = c[0] + S / c[1]
    a_mean = J / (c[2] * lam)
    return phi, lam, J, a_mean


def log_prior_z(c: jax.Array, z: jax.Array) -> jax.Array:
    """The prior's log-density in whitened coordinates z = √ρ ⊙ w (up to a constant): −½|z|² for the Gaussian
    prior; for the per-unit Student-t (ρ = α₀/β₀, so w²/(2β₀) = z²/(2α₀)) −(α₀ + ½) Σ log(1 + z²/(2α₀))."""
    alpha = c[5]
    safe = jnp.where(alpha > 0, alpha, 1.0)  # the unused branch stays finite, and so does its gradient
    student = -(safe + 0.5) * jnp.sum(jnp.log1p(z * z / (2.0 * safe)))
    return jnp.where(alpha > 0, student, -0.5 * jnp.sum(z * z))


def log_density_z(act: str, c: jax.Array, z: jax.Array, X: jax.Array, r: jax.Array, sqrt_rho: jax.Array) -> jax.Array:
    """−U in whitened coordinates (up to a constant): log prior − ½ log(Λ/A) + J_r²/(2κ² s Λ)."""
    w = z / sqrt_rho
    _, lam, J, _ = neuron_terms(act, c, w, X, r)
    return log_prior_z(c, z) - 0.5 * jnp.log(lam / c[0]) + J * J / (2.0 * c[4] * lam)


def run_chains(phys: Physics, key: jax.Array, Z: jax.Array, X: jax.Array, r: jax.Array, sqrt_rho: jax.Array,
               step_size: jax.Array, steps: int, average: int) -> dict[str, jax.Array]:
    """``steps`` MALA steps of every particle; group averages over the last ``average`` of them.

    Returns the final whitened positions, the group means of N^{1−γ}⟨a|w⟩φ(w·x_μ) (GROUPS × P), of
    w_j² (GROUPS × d), and the mean acceptance rate over the run.
    """
    return _run_chains(phys.activation, phys.consts().astype(Z.dtype), key, Z, X, r, sqrt_rho, step_size,
                       steps, average)


@partial(jax.jit, static_argnames=("act", "steps", "average"))
def _run_chains(
    act: str,
    c: jax.Array,
    key: jax.Array,
    Z: jax.Array,
    X: jax.Array,
    r: jax.Array,
    sqrt_rho: jax.Array,
    step_size: jax.Array,
    steps: int,
    average: int,
) -> dict[str, jax.Array]:
    n = Z.shape[0]
    logdensity = partial(log_density_z, act, c, X=X, r=r, sqrt_rho=sqrt_rho)
    # imported here, not at module level: importing BlackJAX initialises JAX's backend, and the service's
    # fork server imports every theory before it forks solve processes (a forked JAX backend deadlocks)
    from blackjax.mcmc import mala

    kernel = mala.build_kernel()
    states = jax.vmap(lambda z: mala.init(z, logdensity))(Z)
    group = jnp.arange(n) % GROUPS
    counts = jnp.bincount(group, length=GROUPS).astype(Z.dtype)

    def per_particle(z: jax.Array) -> tuple[jax.Array, jax.Array]:
        w = z / sqrt_rho
        phi, _, _, a_mean = neuron_terms(act, c, w, X, r)
        return a_mean * phi, w * w

    def one_step(carry: tuple[Any, ...], inp: tuple[jax.Array, jax.Array]) -> tuple[tuple[Any, ...], None]:
        states, f_acc, w2_acc, acc = carry
        k, t = inp
        keys = jax.random.split(k, n)
        states, info = jax.vmap(lambda kk, st: kernel(kk, st, logdensity, step_size))(keys, states)
        g, w2 = jax.vmap(per_particle)(states.position)
        on = (t >= steps - average).astype(Z.dtype)
        f_acc = f_acc + on * jax.ops.segment_sum(g, group, GROUPS)
        w2_acc = w2_acc + on * jax.ops.segment_sum(w2, group, GROUPS)
        return (states, f_acc, w2_acc, acc + jnp.mean(info.acceptance_rate)), None

    init = (states, jnp.zeros((GROUPS, X.shape[0]), Z.dtype), jnp.zeros((GROUPS, Z.shape[1]), Z.dtype), 0.0)
    (states, f_acc, w2_acc, acc), _ = jax.lax.scan(
        one_step, init, (jax.random.split(key, steps), jnp.arange(steps))
    )
    scale = c[3]
    denom = counts[:, None] * average
    return {
        "Z": states.position,
        "f_groups": scale * f_acc / denom,
        "w2_groups": w2_acc / denom,
        "acceptance": acc / steps,
    }


def measure(phys: Physics, Z: jax.Array, X: jax.Array, r: jax.Array, X_eval: jax.Array, sqrt_rho: jax.Array,
            chi_eval: jax.Array) -> dict[str, jax.Array]:
    return _measure(phys.activation, phys.consts().astype(Z.dtype), Z, X, r, X_eval, sqrt_rho, chi_eval)


@partial(jax.jit, static_argnames=("act",))
def _measure(act: str, c: jax.Array, Z: jax.Array, X: jax.Array, r: jax.Array, X_eval: jax.Array,
             sqrt_rho: jax.Array, chi_eval: jax.Array) -> dict[str, jax.Array]:
    """Per-particle quantities at fixed positions on an evaluation set.

    ⟨a|w⟩ and Λ come from the training residual; φ(w·x) on ``X_eval`` gives the predictor there,
    J_S(w) and Σ(w) as evaluation-set averages (``chi_eval`` = the target mode on X_eval).
    """
    W = Z / sqrt_rho

    def one(w: jax.Array) -> tuple[jax.Array, ...]:
        _, lam, _, a_mean = neuron_terms(act, c, w, X, r)
        phi_e = activation_fn(act)(X_eval @ w)
        return a_mean * phi_e, a_mean, lam, jnp.mean(phi_e * chi_eval), jnp.mean(phi_e * phi_e)

    g, a_mean, lam, J_S, Sigma = jax.vmap(one)(W)
    return {"g": g, "a_mean": a_mean, "lam": lam, "J_S": J_S, "Sigma": Sigma, "W": W}
