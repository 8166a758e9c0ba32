"""The block runner: warmup, then blocks of draws of all chains from a checkpoint (one jitted loop for all chains).

``run_block(target, options, checkpoint | None, n_draws)`` is the unit of work of a job step: it runs (or finishes)
the warmup when the checkpoint has not done it, then ``n_draws`` kept draws of every chain, and returns the new
checkpoint and the block's per-draw records. ``advance_warmup(target, options, checkpoint | None, n_steps)`` runs
part of the warmup, so that a long one can be cut, stored and resumed like the draws. The PRNG key of sampler step
s is ``fold_in(sampling_key, s)`` split over chains (warmup step t: ``fold_in(warmup_key_of_chain, t)``), so a run
cut anywhere — in the warmup or between draws — stored and resumed, draws exactly what the uninterrupted run draws.

Compiled functions are cached within a process per target and per the options they depend on: repeated blocks,
other seeds and initialisations, and targets rebuilt with the same ``Target.cache_key`` do not recompile.
"""

from __future__ import annotations

import time
import weakref
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from solvers.core.blas import one_blas_thread
from solvers.experiments.checkpoint import Checkpoint, WarmupSummary
from solvers.experiments.draws import Draws
from solvers.experiments.kernels import Kernel, StepStats, build_kernel
from solvers.experiments.options import SamplerOptions
from solvers.experiments.target import Target

#: Times each compiled function was traced (a retrace means a recompilation), by kind: "warmup_start", "warmup"
#: (a chunk of warmup steps), "block".
TRACES: Counter[str] = Counter()
#: Compiled samplers kept per process.
CACHE_SIZE = 32
#: Options that the compiled warmup and block functions depend on (others — seed, init, draws — are arguments or
#: are used outside them, so runs that differ only in those share compiled code).
_KERNEL_FIELDS = ("method", "chains", "mass_matrix", "num_integration_steps", "max_tree_depth", "batch_size")
_COMPILE_FIELDS = {
    "warmup": (*_KERNEL_FIELDS, "warmup", "step_size", "learning_rate", "temperature", "target_acceptance"),
    "block": (*_KERNEL_FIELDS, "thin", "block_size", "keep_positions"),
}
#: Largest number of position values (chains × draws × dim) one block may return with keep_positions.
MAX_POSITION_VALUES = 50_000_000


@dataclass(frozen=True)
class _Compiled:
    kernel: Kernel
    warmup_start: Callable[..., Any]
    warmup_chunk: Callable[..., Any]
    warmup_final: Callable[..., Any]
    block: Callable[..., Any]
    state_template: Any  # ShapeDtypeStruct pytree of the batched sampler state
    adaptation_template: Any  # ... and of the batched adaptation state
    estimator_shapes: dict[str, tuple[tuple[int, ...], Any]]
    dtype: Any
    key_impl: str


_cache: OrderedDict[tuple[Any, ...], tuple[Any, _Compiled]] = OrderedDict()


def check_compatible(target: Target, options: SamplerOptions) -> None:
    """Raise ValueError when the options cannot run on this target (unknown init, sgld without minibatches, …)."""
    if options.init not in target.init:
        raise ValueError(f"unknown init {options.init!r}; this network has {sorted(target.init)}")
    if options.method == "sgld":
        if target.minibatch_log_likelihood is None or target.n_data < 1:
            raise ValueError("sgld needs a network with a data set and a minibatch log-likelihood")
        if options.batch_size is not None and options.batch_size > target.n_data:
            raise ValueError(f"batch_size {options.batch_size} exceeds the {target.n_data} training points")
    if options.keep_positions and options.chains * min(options.block_size, options.draws) * target.dim > (
        MAX_POSITION_VALUES
    ):
        raise ValueError(
            f"keep_positions: chains × block_size × dim exceeds {MAX_POSITION_VALUES} numbers per block"
        )


def warmup(target: Target, options: SamplerOptions) -> Checkpoint:
    """The warmup phase: initialise every chain, adapt (or burn in), and return the first checkpoint."""
    return advance_warmup(target, options, None, options.warmup)


def advance_warmup(target: Target, options: SamplerOptions, checkpoint: Checkpoint | None, n_steps: int) -> Checkpoint:
    """Up to ``n_steps`` more warmup steps of every chain (the chains start when ``checkpoint`` is None).

    The checkpoint returned is part-way through the warmup (``warming_up``) until every one of ``options.warmup``
    steps is done; then it holds the adapted parameters, and sampling can start. A checkpoint past its warmup is
    returned unchanged.
    """
    if n_steps < 0:
        raise ValueError(f"n_steps must be >= 0, got {n_steps}")
    with one_blas_thread():  # the sampler's LAPACK calls are small: spinning BLAS threads only stall them
        return _advance_warmup(target, options, checkpoint, n_steps)


def _advance_warmup(target: Target, options: SamplerOptions, checkpoint: Checkpoint | None,
                    n_steps: int) -> Checkpoint:
    check_compatible(target, options)
    if checkpoint is not None:
        _check_resumable(target, options, checkpoint)
        if not checkpoint.warming_up:
            return checkpoint
    started = time.perf_counter()
    compiled = _compiled(target, options, "warmup")
    seed = jnp.uint32(options.seed)
    if checkpoint is None:
        state, adaptation, key_data = compiled.warmup_start(seed, options.init)
        summary = WarmupSummary(0, compiled.kernel.init_gradient_evaluations * options.chains, 0, 0, 0.0)
        key = np.asarray(key_data)
    else:
        state = _restore(compiled.state_template, checkpoint.state, "sampler state")
        adaptation = _restore(compiled.adaptation_template, checkpoint.adaptation or (), "warmup adaptation")
        summary, key = checkpoint.warmup, checkpoint.key
    n = max(0, min(n_steps, options.warmup - summary.steps))
    if n:
        state, adaptation, totals = compiled.warmup_chunk(state, adaptation, seed, jnp.int32(summary.steps),
                                                          jnp.int32(n))
        gradients, divergences, nonfinite = (int(t) for t in np.asarray(totals))
        summary = WarmupSummary(summary.steps + n, summary.gradient_evaluations + gradients,
                                summary.divergences + divergences, summary.nonfinite + nonfinite, summary.seconds)
    done = summary.steps >= options.warmup
    params = compiled.warmup_final(adaptation)
    summary = replace(summary, seconds=summary.seconds + time.perf_counter() - started)
    return Checkpoint(
        fingerprint=options.chain_fingerprint(),
        method=options.method,
        dim=target.dim,
        state=_leaves(state),
        parameters={name: np.asarray(value) for name, value in params.items()},
        key=key,
        key_impl=compiled.key_impl,
        draws_done=0,
        warmup=summary,
        device=jax.devices()[0].platform if checkpoint is None else checkpoint.device,
        adaptation=None if done else _leaves(adaptation),
    )


def _leaves(tree: Any) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(tree))


def run_block(
    target: Target, options: SamplerOptions, checkpoint: Checkpoint | None, n_draws: int | None = None
) -> tuple[Checkpoint, Draws]:
    """Run ``n_draws`` kept draws (default ``options.block_size``; never past ``options.draws``) of every chain.

    With ``checkpoint=None`` the warmup runs first. Returns the checkpoint after the block and the block's
    per-draw records (positions too when ``options.keep_positions``).
    """
    with one_blas_thread():  # as in warmup
        return _run_block(target, options, checkpoint, n_draws)


def _run_block(
    target: Target, options: SamplerOptions, checkpoint: Checkpoint | None, n_draws: int | None
) -> tuple[Checkpoint, Draws]:
    if checkpoint is None or checkpoint.warming_up:
        checkpoint = _advance_warmup(target, options, checkpoint, options.warmup)
    else:
        check_compatible(target, options)
        _check_resumable(target, options, checkpoint)
    started = time.perf_counter()
    wanted = options.block_size if n_draws is None else n_draws
    if wanted < 0:
        raise ValueError(f"n_draws must be >= 0, got {n_draws}")
    n = max(0, min(wanted, options.draws - checkpoint.draws_done))
    compiled = _compiled(target, options, "block")
    state = _restore(compiled.state_template, checkpoint.state, "sampler state")
    params = {name: jnp.asarray(value) for name, value in checkpoint.parameters.items()}
    key = jax.random.wrap_key_data(jnp.asarray(checkpoint.key), impl=checkpoint.key_impl)
    chunks = []
    done = 0
    while done < n:
        size = min(options.block_size, n - done)
        start_step = (checkpoint.draws_done + done) * options.thin
        state, out = compiled.block(state, params, key, jnp.int32(start_step), jnp.int32(size))
        chunks.append(jax.tree_util.tree_map(lambda a, s=size: np.asarray(a)[:s], out))
        done += size
    draws = _draws(checkpoint.draws_done, chunks, compiled, options, target.dim)
    seconds = time.perf_counter() - started
    draws = replace(draws, seconds=seconds)
    new = checkpoint.advanced(
        state=_leaves(state),
        draws_done=checkpoint.draws_done + n,
        gradient_evaluations=checkpoint.gradient_evaluations + int(draws.gradient_evaluations.sum(dtype=np.int64)),
        divergences=checkpoint.divergences + int(draws.divergences.sum(dtype=np.int64)),
        nonfinite=checkpoint.nonfinite + int(draws.nonfinite.sum(dtype=np.int64)),
        seconds=checkpoint.seconds + seconds,
    )
    return new, draws


def no_draws(target: Target, options: SamplerOptions, start: int = 0) -> Draws:
    """An empty record of every chain (a run stopped before its first draw), with the estimators' shapes."""
    probe = jax.eval_shape(target.init[options.init], jax.random.key(0))
    dtype = np.dtype(probe.dtype)
    shapes = jax.eval_shape(target.estimators, probe)
    chains = options.chains

    def empty(shape: tuple[int, ...], dt: Any) -> np.ndarray:
        return np.zeros((chains, 0, *shape), dt)

    return Draws(
        start=start,
        estimates={name: empty(tuple(s.shape), s.dtype if np.issubdtype(s.dtype, np.floating) else dtype)
                   for name, s in shapes.items()},
        logdensity=empty((), dtype),
        acceptance=empty((), dtype),
        divergences=empty((), np.int32),
        gradient_evaluations=empty((), np.int32),
        nonfinite=empty((), np.int32),
        positions=empty((target.dim,), dtype) if options.keep_positions else None,
        seconds=0.0,
        device=jax.devices()[0].platform,
    )


def _check_resumable(target: Target, options: SamplerOptions, checkpoint: Checkpoint) -> None:
    if checkpoint.fingerprint != options.chain_fingerprint():
        raise ValueError("the checkpoint was made with other sampler options (only draws, block_size, "
                         "keep_positions, time_limit and the convergence thresholds may change on resume)")
    if checkpoint.dim != target.dim:
        raise ValueError(f"the checkpoint is of a {checkpoint.dim}-dimensional network, not {target.dim}")


def _restore(template: Any, stored: tuple[np.ndarray, ...], what: str) -> Any:
    leaves, treedef = jax.tree_util.tree_flatten(template)
    if len(leaves) != len(stored):
        raise ValueError(f"the checkpoint's {what} does not match this sampler")
    for want, have in zip(leaves, stored, strict=True):
        if tuple(want.shape) != have.shape or np.dtype(want.dtype) != have.dtype:
            raise ValueError(
                f"the checkpoint's {what} has {have.dtype}{list(have.shape)} where this sampler "
                f"expects {np.dtype(want.dtype)}{list(want.shape)} (was jax_enable_x64 the same?)"
            )
    return jax.tree_util.tree_unflatten(treedef, [jnp.asarray(a) for a in stored])


def _draws(start: int, chunks: list[Any], compiled: _Compiled, options: SamplerOptions, dim: int) -> Draws:
    def joined(get: Callable[[Any], np.ndarray], empty: tuple[int, ...], dtype: Any) -> np.ndarray:
        # Buffers are (draw, chain, ...): records are (chain, draw, ...).
        if not chunks:
            return np.zeros((options.chains, 0, *empty), dtype)
        return np.swapaxes(np.concatenate([get(c) for c in chunks], axis=0), 0, 1)

    dtype = np.dtype(compiled.dtype)
    estimates = {
        name: joined(lambda c, n=name: c["estimates"][n], shape, np.dtype(edtype))
        for name, (shape, edtype) in compiled.estimator_shapes.items()
    }
    return Draws(
        start=start,
        estimates=estimates,
        logdensity=joined(lambda c: c["logdensity"], (), dtype),
        acceptance=joined(lambda c: c["stats"].acceptance, (), dtype),
        divergences=joined(lambda c: c["stats"].divergent, (), np.int32),
        gradient_evaluations=joined(lambda c: c["stats"].gradient_evaluations, (), np.int32),
        nonfinite=joined(lambda c: c["stats"].nonfinite, (), np.int32),
        positions=joined(lambda c: c["positions"], (dim,), dtype) if options.keep_positions else None,
        seconds=0.0,
        device=jax.devices()[0].platform,
    )


def _target_identity(target: Target) -> tuple[Any, Any]:
    if target.cache_key is not None:
        return ("key", target.cache_key), None
    return ("id", id(target)), weakref.ref(target)


def _compiled(target: Target, options: SamplerOptions, kind: str) -> _Compiled:
    """The compiled functions for ``kind`` ("warmup" or "block"); jax.jit compiles only the one that is called."""
    identity, ref = _target_identity(target)
    key = (identity, kind, *(getattr(options, name) for name in _COMPILE_FIELDS[kind]))
    hit = _cache.get(key)
    if hit is not None and (hit[0] is None or hit[0]() is target):
        _cache.move_to_end(key)
        return hit[1]
    compiled = _compile(target, options)
    _cache[key] = (ref, compiled)
    while len(_cache) > CACHE_SIZE:
        _cache.popitem(last=False)
    return compiled


def _compile(target: Target, options: SamplerOptions) -> _Compiled:
    kernel = build_kernel(target, options)
    chains, thin, capacity = options.chains, options.thin, options.block_size
    keep = options.keep_positions
    probe = jax.eval_shape(target.init[options.init], jax.random.key(0))
    dtype = probe.dtype
    if not jnp.issubdtype(dtype, jnp.floating):
        raise ValueError(f"init {options.init!r} must give floating-point positions, not {dtype}")
    # Estimates are floating point (an integer-valued estimator is averaged like any other).
    estimator_shapes = {
        name: (tuple(s.shape), s.dtype if jnp.issubdtype(s.dtype, jnp.floating) else dtype)
        for name, s in jax.eval_shape(target.estimators, probe).items()
    }
    positions_template = jax.ShapeDtypeStruct((chains, target.dim), dtype)
    state_template = jax.eval_shape(jax.vmap(kernel.init), positions_template)
    adaptation_template = jax.eval_shape(jax.vmap(kernel.adapt_init), positions_template)
    total_dtype = jnp.int64 if jax.config.jax_enable_x64 else jnp.int32  # (int32: 2**31 evaluations)

    def keys_of(seed: Any) -> tuple[Any, Any, Any]:
        return tuple(jax.random.split(jax.random.key(seed), 3))  # initial positions, warmup, sampling

    def warmup_start(seed: Any, name: str) -> Any:
        TRACES["warmup_start"] += 1
        init_key, _, sampling_key = keys_of(seed)
        positions = jax.vmap(target.init[name])(jax.random.split(init_key, chains))
        if positions.shape != (chains, target.dim) or positions.dtype != dtype:
            raise ValueError(f"init {name!r} must give a {np.dtype(dtype)} vector of length {target.dim}")
        return jax.vmap(kernel.init)(positions), jax.vmap(kernel.adapt_init)(positions), \
            jax.random.key_data(sampling_key)

    adapt_all = jax.vmap(kernel.adapt_step, in_axes=(0, 0, 0, None))

    def warmup_chunk(state: Any, adaptation: Any, seed: Any, start: Any, n: Any) -> Any:
        TRACES["warmup"] += 1
        chain_keys = jax.random.split(keys_of(seed)[1], chains)

        def one(i: Any, carry: Any) -> Any:
            state, adaptation, totals = carry
            t = start + i
            keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(chain_keys, t)
            state, adaptation, stats = adapt_all(keys, state, adaptation, t)
            counts = jnp.stack([jnp.sum(a, dtype=total_dtype)
                                for a in (stats.gradient_evaluations, stats.divergent, stats.nonfinite)])
            return state, adaptation, totals + counts

        return jax.lax.fori_loop(0, n, one, (state, adaptation, jnp.zeros(3, total_dtype)))

    def warmup_final(adaptation: Any) -> Any:
        return jax.vmap(kernel.adapt_final)(adaptation)

    step_all = jax.vmap(kernel.step)
    estimators_all = jax.vmap(target.estimators)
    logdensity_all = jax.vmap(kernel.logdensity)

    def block(state: Any, params: Any, key: Any, start_step: Any, n: Any) -> Any:
        TRACES["block"] += 1
        zero_int = jnp.zeros((chains,), jnp.int32)
        zero_stats = StepStats(jnp.zeros((chains,), dtype), zero_int, zero_int, zero_int)

        def buffer(shape: tuple[int, ...], dt: Any) -> Any:
            return jnp.zeros((capacity, chains, *shape), dt)

        out = {
            "estimates": {name: buffer(shape, dt) for name, (shape, dt) in estimator_shapes.items()},
            "logdensity": buffer((), dtype),
            "stats": StepStats(buffer((), dtype), *(buffer((), jnp.int32) for _ in range(3))),
        }
        if keep:
            out["positions"] = buffer((target.dim,), dtype)

        def draw(i: Any, carry: Any) -> Any:
            state, out = carry
            first = start_step + i * thin

            def one_step(t: Any, inner: Any) -> Any:
                state, total = inner
                keys = jax.random.split(jax.random.fold_in(key, first + t), chains)
                state, stats = step_all(keys, state, params)
                return state, StepStats(*(a + b.astype(a.dtype) for a, b in zip(total, stats, strict=True)))

            state, total = jax.lax.fori_loop(0, thin, one_step, (state, zero_stats))
            total = total._replace(acceptance=total.acceptance / thin)
            position = kernel.position(state)
            values = estimators_all(position)
            out = {
                "estimates": {
                    name: out["estimates"][name].at[i].set(jnp.asarray(values[name], out["estimates"][name].dtype))
                    for name in estimator_shapes
                },
                "logdensity": out["logdensity"].at[i].set(logdensity_all(state).astype(dtype)),
                "stats": StepStats(
                    *(buf.at[i].set(v.astype(buf.dtype)) for buf, v in zip(out["stats"], total, strict=True))
                ),
                **({"positions": out["positions"].at[i].set(position)} if keep else {}),
            }
            return state, out

        return jax.lax.fori_loop(0, n, draw, (state, out))

    key_impl = str(jax.random.key_impl(jax.random.key(0)))
    return _Compiled(kernel, jax.jit(warmup_start, static_argnames="name"), jax.jit(warmup_chunk),
                     jax.jit(warmup_final), jax.jit(block), state_template, adaptation_template, estimator_shapes,
                     dtype, key_impl)
