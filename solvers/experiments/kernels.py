"""One chain's sampler on a Target, from BlackJAX: init, warmup (adaptation), step, and per-step statistics.

Every function here acts on one chain; the block runner vectorises them over chains with ``jax.vmap``. A step
returns :class:`StepStats`, counted the same way for every method:

* gradient evaluations: nuts — the trajectory's integration steps (``NUTSInfo.num_integration_steps``); hmc —
  ``num_integration_steps``; mala, langevin — one; sgld — one minibatch gradient.
* non-finite: hmc — the proposal's log-density is not finite; nuts — the trajectory reached a non-finite
  log-density (at either end, where the tree building stops); mala — the proposal's acceptance probability is
  exactly zero, which a non-finite log-density gives (BlackJAX's MALA does not expose the proposal; a log
  acceptance ratio below the floating-point range, about −745 in float64 and −104 in float32, counts too);
  langevin — the new state's log-density is not finite; sgld — the new position is not finite. The adjusted
  methods reject such proposals; nothing raises.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import blackjax
import blackjax.mcmc.diffusions
import jax
import jax.numpy as jnp
from blackjax.adaptation.step_size import dual_averaging_adaptation

from solvers.experiments.options import SamplerOptions
from solvers.experiments.target import Array, Target
from solvers.experiments.window_adaptation import typed_like, window_adaptation

Params = dict[str, Array]


class StepStats(NamedTuple):
    acceptance: Array
    divergent: Array
    gradient_evaluations: Array
    nonfinite: Array


@dataclass(frozen=True)
class Kernel:
    """A sampler for one chain.

    The warmup is a sequence of steps, each of which moves the chain and updates an *adaptation* state (dual
    averaging, a covariance estimate, or nothing), so that it can run in chunks and be stored between them.

    Attributes:
        init: position -> sampler state (costs ``init_gradient_evaluations``).
        adapt_init: position -> the adaptation's initial state (a pytree of arrays).
        adapt_step: (key, state, adaptation, warmup step index) -> (state, adaptation, StepStats).
        adapt_final: adaptation -> the parameters of the sampling phase (``options.warmup`` steps done).
        step: (key, state, params) -> (state, StepStats).
        position: state -> position.
        logdensity: state -> log-density of the state's position.
        init_gradient_evaluations: gradients spent by ``init``.
    """

    init: Callable[[Array], Any]
    adapt_init: Callable[[Array], Any]
    adapt_step: Callable[[Array, Any, Any, Array], tuple[Any, Any, StepStats]]
    adapt_final: Callable[[Any], Params]
    step: Callable[[Array, Any, Params], tuple[Any, StepStats]]
    position: Callable[[Any], Array]
    logdensity: Callable[[Any], Array]
    init_gradient_evaluations: int


def _stats(acceptance: Array, divergent: Array, gradient_evaluations: Array, nonfinite: Array) -> StepStats:
    return StepStats(
        jnp.asarray(acceptance),
        jnp.asarray(divergent, dtype=jnp.int32),
        jnp.asarray(gradient_evaluations, dtype=jnp.int32),
        jnp.asarray(nonfinite, dtype=jnp.int32),
    )


def _finite_or(target: Target, value: float) -> Callable[[Array], Array]:
    def logdensity(position: Array) -> Array:
        v = target.logdensity(position)
        return jnp.where(jnp.isfinite(v), v, value)

    return logdensity


def build_kernel(target: Target, options: SamplerOptions) -> Kernel:
    """The BlackJAX sampler that ``options.method`` names, on ``target``."""
    if options.method in ("nuts", "hmc"):
        return _hmc_family(target, options)
    if options.method == "mala":
        return _mala(target, options)
    if options.method == "langevin":
        return _langevin(target, options)
    return _sgld(target, options)


def _hmc_family(target: Target, options: SamplerOptions) -> Kernel:
    # A non-finite log-density becomes -inf: an infinite energy error, i.e. a rejected, divergent proposal.
    logdensity = _finite_or(target, -jnp.inf)
    diagonal = options.mass_matrix == "diagonal"
    if options.method == "nuts":
        algorithm = blackjax.nuts
        extra = {"max_num_doublings": options.max_tree_depth}

        def stats(info: Any) -> StepStats:
            ends = (info.trajectory_leftmost_state.logdensity, info.trajectory_rightmost_state.logdensity)
            nonfinite = ~(jnp.isfinite(ends[0]) & jnp.isfinite(ends[1]))
            return _stats(info.acceptance_rate, info.is_divergent, info.num_integration_steps, nonfinite)
    else:
        algorithm = blackjax.hmc
        extra = {"num_integration_steps": options.num_integration_steps}

        def stats(info: Any) -> StepStats:
            nonfinite = ~jnp.isfinite(info.proposal.logdensity)
            return _stats(info.acceptance_rate, info.is_divergent, info.num_integration_steps, nonfinite)

    kernel = algorithm.build_kernel()

    def init(position: Array) -> Any:
        return algorithm.init(position, logdensity)

    def step(key: Array, state: Any, params: Params) -> tuple[Any, StepStats]:
        step_size = params["step_size"]
        if options.method == "hmc":
            # A fixed trajectory length can be nearly periodic along some direction of a Gaussian-like posterior
            # (slow mixing, over-optimistic ESS); a step drawn from [0.8, 1.2] x the adapted one breaks it.
            key, jitter_key = jax.random.split(key)
            step_size = step_size * jax.random.uniform(jitter_key, (), step_size.dtype, 0.8, 1.2)
        state, info = kernel(key, state, logdensity, step_size, params["inverse_mass_matrix"], **extra)
        return state, stats(info)

    window = window_adaptation(options.warmup, diagonal, options.acceptance_target)
    initial_step = options.step_size if options.step_size is not None else 1.0

    def adapt_init(position: Array) -> Any:
        return window.init(position, initial_step)

    def adapt_step(key: Array, state: Any, adaptation: Any, index: Array) -> tuple[Any, Any, StepStats]:
        # as BlackJAX's window adaptation: no step jitter while adapting
        state, info = kernel(key, state, logdensity, adaptation.step_size, adaptation.inverse_mass_matrix, **extra)
        return state, window.update(adaptation, index, state.position, info.acceptance_rate), stats(info)

    def adapt_final(adaptation: Any) -> Params:
        dtype = adaptation.step_size.dtype
        if options.warmup == 0:  # nothing adapted: the given step and the identity metric
            return {"step_size": jnp.asarray(options.step_size, dtype),
                    "inverse_mass_matrix": adaptation.mass_matrix.inverse_mass_matrix}
        step_size, inverse_mass_matrix = window.final(adaptation)
        return {"step_size": jnp.asarray(step_size, dtype), "inverse_mass_matrix": inverse_mass_matrix}

    return Kernel(init, adapt_init, adapt_step, adapt_final, step, lambda s: s.position, lambda s: s.logdensity, 1)


def _mala(target: Target, options: SamplerOptions) -> Kernel:
    logdensity = _finite_or(target, -jnp.inf)
    kernel = blackjax.mala.build_kernel()
    da_init, da_update, da_final = dual_averaging_adaptation(options.acceptance_target)

    def init(position: Array) -> Any:
        return blackjax.mala.init(position, logdensity)

    def one(key: Array, state: Any, step_size: Array) -> tuple[Any, StepStats]:
        state, info = kernel(key, state, logdensity, step_size)
        return state, _stats(info.acceptance_rate, False, 1, info.acceptance_rate == 0)

    def step(key: Array, state: Any, params: Params) -> tuple[Any, StepStats]:
        return one(key, state, params["step_size"])

    def adapt_init(position: Array) -> Any:
        initial = jnp.asarray(options.step_size if options.step_size is not None else 1.0, position.dtype)
        return typed_like(da_init(initial), position.dtype)

    def adapt_step(key: Array, state: Any, adaptation: Any, index: Array) -> tuple[Any, Any, StepStats]:
        dtype = adaptation.log_step_size.dtype
        state, st = one(key, state, jnp.exp(adaptation.log_step_size).astype(dtype))
        return state, typed_like(da_update(adaptation, st.acceptance), dtype), st

    def adapt_final(adaptation: Any) -> Params:
        dtype = adaptation.log_step_size.dtype
        if options.warmup == 0:  # nothing adapted: the given (or default) step
            return {"step_size": jnp.exp(adaptation.log_step_size).astype(dtype)}
        return {"step_size": jnp.asarray(da_final(adaptation), dtype)}

    return Kernel(init, adapt_init, adapt_step, adapt_final, step, lambda s: s.position, lambda s: s.logdensity, 1)


def _burn_in(step: Callable, options: SamplerOptions) -> tuple[Callable, Callable, Callable]:
    """Warmup of an unadjusted method: steps at the fixed step; the "adaptation" is that step, unchanged."""

    def adapt_init(position: Array) -> Any:
        return {"step_size": jnp.asarray(options.langevin_step, position.dtype)}

    def adapt_step(key: Array, state: Any, adaptation: Any, index: Array) -> tuple[Any, Any, StepStats]:
        state, st = step(key, state, adaptation)
        return state, adaptation, st

    return adapt_init, adapt_step, dict


def _langevin(target: Target, options: SamplerOptions) -> Kernel:
    integrator = blackjax.mcmc.diffusions.overdamped_langevin(jax.value_and_grad(target.logdensity))

    def init(position: Array) -> Any:
        value, grad = jax.value_and_grad(target.logdensity)(position)
        return blackjax.mcmc.diffusions.DiffusionState(position, value, grad)

    def step(key: Array, state: Any, params: Params) -> tuple[Any, StepStats]:
        state = integrator(key, state, params["step_size"])
        return state, _stats(jnp.nan, False, 1, ~jnp.isfinite(state.logdensity))

    return Kernel(init, *_burn_in(step, options), step, lambda s: s.position, lambda s: s.logdensity, 1)


def _sgld(target: Target, options: SamplerOptions) -> Kernel:
    minibatch_log_likelihood = target.minibatch_log_likelihood
    if minibatch_log_likelihood is None or target.n_data < 1:
        raise ValueError("sgld needs a Target with n_data > 0 and a minibatch_log_likelihood")
    if options.batch_size is None or options.batch_size > target.n_data:
        raise ValueError(f"sgld needs batch_size <= n_data = {target.n_data}")
    batch_size = options.batch_size
    kernel = blackjax.sgld.build_kernel()
    grad_prior = jax.grad(target.log_prior)
    grad_batch = jax.grad(minibatch_log_likelihood)

    def grad_estimator(position: Array, batch: Array) -> Array:
        return grad_prior(position) + grad_batch(position, batch)

    def step(key: Array, position: Array, params: Params) -> tuple[Array, StepStats]:
        batch_key, noise_key = jax.random.split(key)
        # A fresh subset without replacement at every step (not epochs of a shuffled data set).
        batch = jax.random.choice(batch_key, target.n_data, (batch_size,), replace=False)
        position = kernel(noise_key, position, grad_estimator, batch, params["step_size"])
        return position, _stats(jnp.nan, False, 1, ~jnp.all(jnp.isfinite(position)))

    return Kernel(lambda x: x, *_burn_in(step, options), step, lambda s: s, target.logdensity, 0)

