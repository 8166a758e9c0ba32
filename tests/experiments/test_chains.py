"""Chains run apart (one job each) and joined: a chain's draws depend on its seed and index alone, not on where it
was cut; the joined run is summarised like a vectorised one, every chain cut to the common number of draws."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.experiments import (
    Checkpoint,
    Draws,
    SamplerOptions,
    chain_options,
    chain_seed,
    join_chains,
    run_block,
    summarize,
)
from tests.experiments.targets import PRODUCT

OPTIONS = SamplerOptions(method="mala", chains=3, warmup=200, draws=40, block_size=20, seed=5)


def _blocks(options: SamplerOptions, stop: int | None = None) -> tuple[Checkpoint, list[Draws]]:
    checkpoint, blocks = None, []
    while checkpoint is None or checkpoint.draws_done < (stop or options.draws):
        checkpoint, block = run_block(PRODUCT, options, checkpoint)
        blocks.append(block)
    return checkpoint, blocks


def test_chain_seeds_are_distinct_and_reproducible():
    seeds = [chain_seed(7, c) for c in range(64)]
    assert len(set(seeds)) == 64 and seeds == [chain_seed(7, c) for c in range(64)]
    assert chain_seed(7, 0) != chain_seed(8, 0)
    one = chain_options(OPTIONS, 2)
    assert (one.chains, one.seed, one.draws) == (1, chain_seed(5, 2), OPTIONS.draws)
    with pytest.raises(ValueError, match="chain 3 of a 3-chain run"):
        chain_options(OPTIONS, 3)


def test_joined_chains_are_one_run():
    runs = [_blocks(chain_options(OPTIONS, c)) for c in range(3)]
    # chain 1 again, cut after its first block and resumed from the stored checkpoint: the same draws
    first, block = run_block(PRODUCT, chain_options(OPTIONS, 1), None)
    _, rest = run_block(PRODUCT, chain_options(OPTIONS, 1), Checkpoint.from_bytes(first.to_bytes()), 20)
    np.testing.assert_array_equal(np.concatenate([block.estimates["x"], rest.estimates["x"]], axis=1),
                                  np.concatenate([b.estimates["x"] for b in runs[1][1]], axis=1))
    checkpoint, draws = join_chains([r[0] for r in runs], [r[1] for r in runs])
    assert (draws.chains, draws.n, checkpoint.chains, checkpoint.draws_done) == (3, 40, 3, 40)
    for c in range(3):
        np.testing.assert_array_equal(draws.estimates["x"][c], runs[c][1][0].estimates["x"][0].tolist()
                                      + runs[c][1][1].estimates["x"][0].tolist())
    result = summarize(PRODUCT, OPTIONS, checkpoint, draws)
    assert (result.chains, result.draws) == (3, 40)
    assert result.gradient_evaluations == sum(r[0].warmup.gradient_evaluations + r[0].gradient_evaluations
                                              for r in runs)
    assert result.sampler.step_size_per_chain == tuple(float(r[0].parameters["step_size"][0]) for r in runs)
    # a chain stopped early (a time limit): every chain is cut to its draws
    short = _blocks(chain_options(OPTIONS, 2), stop=20)
    checkpoint, draws = join_chains([runs[0][0], runs[1][0], short[0]], [runs[0][1], runs[1][1], short[1]])
    assert draws.n == 20 and checkpoint.draws_done == 20
    np.testing.assert_array_equal(draws.estimates["x"][0], runs[0][1][0].estimates["x"][0])
    result = summarize(PRODUCT, OPTIONS, checkpoint, draws, time_limited=True)
    assert result.status == "time_limit" and result.draws == 20
    with pytest.raises(ValueError, match="chain 0"):
        join_chains([runs[0][0]], [runs[0][1][:1]])
