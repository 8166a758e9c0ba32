"""While a sampler runs, BLAS runs one thread; afterwards the process's BLAS threads are as they were.

Why it matters: JAX's CPU backend makes its LAPACK calls (Cholesky factors of the integrated-out readout, …)
through scipy's OpenBLAS, whose idle threads spin between the small calls of a sampler step and take the
cores from the thread doing the work (a forked RQ work horse ran a chain 16× slower). The check reads the
thread count from inside the log-density, i.e. while the compiled sampler is executing.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from threadpoolctl import ThreadpoolController

from solvers.experiments import SamplerOptions, run_block, warmup
from solvers.experiments.target import Target


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in ThreadpoolController().select(user_api="blas").info()]


def _recording_target(seen: list[list[int]]) -> Target:
    def record(x: object) -> None:
        seen.append(_blas_threads())

    def log_prior(x: jax.Array) -> jax.Array:
        jax.debug.callback(record, x[0])
        return -0.5 * jnp.sum(x * x)

    return Target(dim=2, log_prior=log_prior, log_likelihood=lambda x: jnp.zeros((), x.dtype),
                  init={"prior": lambda k: jax.random.normal(k, (2,))}, estimators=lambda x: {"x": x},
                  sampled=(("x", 2),))


def test_sampling_runs_one_blas_thread_and_restores_the_count() -> None:
    before = _blas_threads()
    if not before:
        pytest.skip("no BLAS library found by threadpoolctl")
    seen: list[list[int]] = []
    target = _recording_target(seen)
    options = SamplerOptions(method="mala", chains=2, warmup=5, draws=5, block_size=5, seed=0)
    checkpoint = warmup(target, options)
    run_block(target, options, checkpoint)
    assert seen, "the log-density was never evaluated"
    assert all(n == 1 for counts in seen for n in counts), f"BLAS threads while sampling: {seen[:5]}"
    assert _blas_threads() == before
