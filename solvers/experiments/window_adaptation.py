"""Stan's windowed adaptation of the step size and inverse mass matrix (nuts, hmc), one step at a time.

The algorithm is Stan's, as BlackJAX's ``window_adaptation`` runs it: a fast window where only the step size adapts
(dual averaging to the target acceptance), slow windows of doubling length where the chain's positions also feed a
Welford estimate of their covariance — at the end of each, the inverse mass matrix becomes that estimate and the
dual averaging restarts from its averaged step — and a final fast window; the adapted step is the average one.
Its pieces are BlackJAX's (``dual_averaging_adaptation``, ``mass_matrix_adaptation``); what is ours is that the
schedule is a function of the step index, so that a warmup can run in chunks of any length, be stored between
them and resume, and draw exactly what it draws in one piece (BlackJAX's ``run`` scans the whole warmup at once).

:func:`schedule_plan` is BlackJAX's ``build_schedule`` in closed form (the boundaries of the windows, not a list of
one entry per step): ``tests/experiments/test_window_adaptation.py`` checks the two agree, and that the updates
agree with BlackJAX's own step by step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from blackjax.adaptation.mass_matrix import mass_matrix_adaptation
from blackjax.adaptation.step_size import dual_averaging_adaptation

#: Stan's default window sizes (and BlackJAX's).
INITIAL_BUFFER = 75
FIRST_WINDOW = 25
FINAL_BUFFER = 50
#: Below this many warmup steps the mass matrix is not adapted (only the step size).
MIN_WINDOWED = 20


@dataclass(frozen=True)
class SchedulePlan:
    """Steps ``[slow_start, slow_stop)`` adapt the mass matrix; a slow window ends at each step in ``window_ends``."""

    slow_start: int
    slow_stop: int
    window_ends: tuple[int, ...]


def schedule_plan(num_steps: int) -> SchedulePlan:
    """The windows of Stan's schedule for ``num_steps`` warmup steps (BlackJAX's ``build_schedule``)."""
    if num_steps < MIN_WINDOWED:
        return SchedulePlan(0, 0, ())
    initial, first, final = INITIAL_BUFFER, FIRST_WINDOW, FINAL_BUFFER
    if initial + first + final > num_steps:
        initial, final = int(0.15 * num_steps), int(0.1 * num_steps)
        first = num_steps - initial - final
    final_start = num_steps - final
    ends = []
    start, size = initial, first
    while start < final_start:
        if 3 * size <= final_start - start:
            next_size = 2 * size
        else:
            size = next_size = final_start - start
        ends.append(start + size - 1)
        start, size = start + size, next_size
    return SchedulePlan(initial, final_start, tuple(ends))


class WindowState(NamedTuple):
    """The adaptation's state: dual averaging, the Welford estimate, and the parameters in force."""

    dual_averaging: Any
    mass_matrix: Any
    step_size: jax.Array
    inverse_mass_matrix: jax.Array


@dataclass(frozen=True)
class WindowAdaptation:
    init: Callable[[jax.Array, float], WindowState]
    update: Callable[[WindowState, jax.Array, jax.Array, jax.Array], WindowState]
    final: Callable[[WindowState], tuple[jax.Array, jax.Array]]


def window_adaptation(num_steps: int, diagonal: bool, target_acceptance: float) -> WindowAdaptation:
    """``init(position, initial_step)``, ``update(state, step index, new position, acceptance)``, ``final(state)``
    -> (step size, inverse mass matrix)."""
    plan = schedule_plan(num_steps)
    da_init, da_update, da_final = dual_averaging_adaptation(target_acceptance)
    mm_init, mm_update, mm_final = mass_matrix_adaptation(diagonal)
    ends = jnp.asarray(plan.window_ends or (-1,), dtype=jnp.int32)

    def init(position: jax.Array, initial_step: float) -> WindowState:
        mm = mm_init(position.shape[0])
        step = jnp.asarray(initial_step, position.dtype)
        return typed_like(WindowState(da_init(step), mm, step, mm.inverse_mass_matrix), position.dtype)

    def update(state: WindowState, index: jax.Array, position: jax.Array, acceptance: jax.Array) -> WindowState:
        slow = (index >= plan.slow_start) & (index < plan.slow_stop)
        mm = jax.lax.cond(slow, lambda m: mm_update(m, position), lambda m: m, state.mass_matrix)
        da = da_update(state.dual_averaging, acceptance)
        new = WindowState(da, mm, jnp.exp(da.log_step_size), state.inverse_mass_matrix)

        def end_window(s: WindowState) -> WindowState:
            # the window's covariance becomes the metric; the step size restarts from the window's average
            m = mm_final(s.mass_matrix)
            restarted = da_init(da_final(s.dual_averaging))
            return typed_like(WindowState(restarted, m, jnp.exp(restarted.log_step_size), m.inverse_mass_matrix),
                              position.dtype)

        new = typed_like(new, position.dtype)
        return typed_like(jax.lax.cond(jnp.any(ends == index), end_window, lambda s: s, new), position.dtype)

    def final(state: WindowState) -> tuple[jax.Array, jax.Array]:
        return jnp.exp(state.dual_averaging.log_step_size_avg), state.mass_matrix.inverse_mass_matrix

    return WindowAdaptation(init, update, final)


def typed_like(tree: Any, dtype: Any) -> Any:
    """Every leaf as an array of a fixed type (floating point: ``dtype``; integers: JAX's default integer, int64
    under x64 as a Python int would be), so that a state carried through a compiled loop, stored and restored keeps
    one type whatever Python scalars it was built from — and computes as BlackJAX's does (a step counter in int32
    would turn the dual averaging's weights into float32 under x64)."""
    integer = jax.dtypes.canonicalize_dtype(jnp.int64)

    def cast(x: Any) -> jax.Array:
        a = jnp.asarray(x)
        if jnp.issubdtype(a.dtype, jnp.floating):
            return a.astype(dtype)
        if jnp.issubdtype(a.dtype, jnp.integer):
            return a.astype(integer)
        return a

    return jax.tree_util.tree_map(cast, tree)

