"""Stan's window adaptation, one step at a time: the schedule is BlackJAX's ``build_schedule`` and every update is
BlackJAX's own (its ``window_adaptation.base``), so a warmup cut into chunks adapts exactly as Stan's does."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from solvers.experiments.window_adaptation import schedule_plan, window_adaptation


def _expanded(num_steps: int) -> list[tuple[int, int]]:
    plan = schedule_plan(num_steps)
    return [(int(plan.slow_start <= i < plan.slow_stop), int(i in plan.window_ends)) for i in range(num_steps)]


def test_the_schedule_is_blackjaxs():
    from blackjax.adaptation.window_adaptation import build_schedule

    for n in [*range(0, 400), 999, 1000, 1001, 4321, 20_000]:
        reference = [tuple(int(v) for v in row) for row in np.asarray(build_schedule(n))] if n else []
        assert _expanded(n) == reference, n


@pytest.mark.parametrize("diagonal", [True, False])
def test_each_update_is_blackjaxs(diagonal: bool):
    from blackjax.adaptation.window_adaptation import base, build_schedule

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ref_init, ref_update, ref_final = base(diagonal, target_acceptance_rate=0.7)
    num_steps, dim = 260, 3
    ours = window_adaptation(num_steps, diagonal, 0.7)
    rng = np.random.default_rng(0)
    # in JAX's default floating point (float64 once another test has switched x64 on, as BlackJAX's Python scalars
    # then are)
    positions = jnp.asarray(rng.standard_normal((num_steps, dim)) * [1.0, 3.0, 0.2])
    acceptance = jnp.asarray(rng.uniform(0.3, 1.0, num_steps))
    schedule = jnp.asarray(build_schedule(num_steps))

    def run(init, update, stage):  # every step's parameters in force, and the last state
        def one(state, xs):
            t, position, accepted = xs
            state = update(state, stage(t), position, accepted)
            return state, (state.step_size, state.inverse_mass_matrix)

        return jax.lax.scan(one, init(positions[0], 0.5), (jnp.arange(num_steps), positions, acceptance))

    mine, (my_steps, my_metrics) = jax.jit(lambda: run(ours.init, ours.update, lambda t: t))()
    theirs, (their_steps, their_metrics) = jax.jit(
        lambda: run(ref_init, ref_update, lambda t: (schedule[t, 0], schedule[t, 1].astype(bool))))()
    np.testing.assert_allclose(my_steps, their_steps, rtol=1e-6)
    np.testing.assert_allclose(my_metrics, their_metrics, rtol=1e-6)
    final, reference = ours.final(mine), ref_final(theirs)
    np.testing.assert_allclose(final[0], reference[0], rtol=1e-6)
    np.testing.assert_allclose(final[1], reference[1], rtol=1e-6)
    # the metric was adapted: it is no longer the identity
    assert not np.allclose(np.asarray(final[1]), np.eye(dim) if not diagonal else np.ones(dim))
