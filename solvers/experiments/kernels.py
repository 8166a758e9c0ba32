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

Params = dict[str, Array]


class StepStats(NamedTuple):
    acceptance: Array
    divergent: Array
    gradient_evaluations: Array
    nonfinite: Array


@dataclass(frozen=True)
class Kernel:
    """A sampler for one chain.

    Attributes:
        init: position -> sampler state (costs ``init_gradient_evaluations``).
        warmup: (key, position) -> (state, params, per-step StepStats of the warmup, stacked).
        step: (key, state, params) -> (state, StepStats).
        position: state -> position.
        logdensity: state -> log-density of the state's position.
        init_gradient_evaluations: gradients spent by ``init``.
    """

    init: Callable[[Array], Any]
    warmup: Callable[[Array, Array], tuple[Any, Params, StepStats]]
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

    def identity_metric(position: Array) -> Array:
        return jnp.ones_like(position) if diagonal else jnp.eye(position.shape[0], dtype=position.dtype)

    def warmup(key: Array, position: Array) -> tuple[Any, Params, StepStats]:
        if options.warmup == 0:
            params = {
                "step_size": jnp.asarray(options.step_size, position.dtype),
                "inverse_mass_matrix": identity_metric(position),
            }
            return init(position), params, _empty_stats(position.dtype)
        adaptation = blackjax.window_adaptation(
            algorithm,
            logdensity,
            is_mass_matrix_diagonal=diagonal,
            initial_step_size=options.step_size if options.step_size is not None else 1.0,
            target_acceptance_rate=options.acceptance_target,
            adaptation_info_fn=lambda _state, info, _adaptation: stats(info),
            **extra,
        )
        (state, params), warm = adaptation.run(key, position, options.warmup)
        params = {
            "step_size": jnp.asarray(params["step_size"], position.dtype),
            "inverse_mass_matrix": jnp.asarray(params["inverse_mass_matrix"], position.dtype),
        }
        return state, params, warm

    return Kernel(init, warmup, step, lambda s: s.position, lambda s: s.logdensity, 1)


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

    def warmup(key: Array, position: Array) -> tuple[Any, Params, StepStats]:
        state = init(position)
        initial = jnp.asarray(options.step_size if options.step_size is not None else 1.0, position.dtype)
        if options.warmup == 0:
            return state, {"step_size": initial}, _empty_stats(position.dtype)

        def adapt(carry: tuple[Any, Any], k: Array) -> tuple[tuple[Any, Any], StepStats]:
            state, da = carry
            state, st = one(k, state, jnp.exp(da.log_step_size).astype(position.dtype))
            return (state, da_update(da, st.acceptance)), st

        (state, da), warm = jax.lax.scan(adapt, (state, da_init(initial)), jax.random.split(key, options.warmup))
        return state, {"step_size": jnp.asarray(da_final(da), position.dtype)}, warm

    return Kernel(init, warmup, step, lambda s: s.position, lambda s: s.logdensity, 1)


def _burn_in(step: Callable, options: SamplerOptions) -> Callable:
    """Warmup of an unadjusted method: ``options.warmup`` steps at the fixed step, nothing adapted."""

    def warmup(key: Array, position: Array, init: Callable) -> tuple[Any, Params, StepStats]:
        params = {"step_size": jnp.asarray(options.langevin_step, position.dtype)}
        state = init(position)
        if options.warmup == 0:
            return state, params, _empty_stats(position.dtype)

        def one(state: Any, k: Array) -> tuple[Any, StepStats]:
            return step(k, state, params)

        state, warm = jax.lax.scan(one, state, jax.random.split(key, options.warmup))
        return state, params, warm

    return warmup


def _langevin(target: Target, options: SamplerOptions) -> Kernel:
    integrator = blackjax.mcmc.diffusions.overdamped_langevin(jax.value_and_grad(target.logdensity))

    def init(position: Array) -> Any:
        value, grad = jax.value_and_grad(target.logdensity)(position)
        return blackjax.mcmc.diffusions.DiffusionState(position, value, grad)

    def step(key: Array, state: Any, params: Params) -> tuple[Any, StepStats]:
        state = integrator(key, state, params["step_size"])
        return state, _stats(jnp.nan, False, 1, ~jnp.isfinite(state.logdensity))

    burn_in = _burn_in(step, options)
    return Kernel(
        init, lambda k, x: burn_in(k, x, init), step, lambda s: s.position, lambda s: s.logdensity, 1
    )


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

    burn_in = _burn_in(step, options)
    return Kernel(
        lambda x: x, lambda k, x: burn_in(k, x, lambda y: y), step, lambda s: s, target.logdensity, 0
    )


def _empty_stats(dtype: Any) -> StepStats:
    zero = jnp.zeros((0,), jnp.int32)
    return StepStats(jnp.zeros((0,), dtype), zero, zero, zero)
