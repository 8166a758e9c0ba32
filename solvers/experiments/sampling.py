"""Run an experiment in-process: warmup, then blocks until the draws are done or the time limit is reached."""

from __future__ import annotations

import time
from dataclasses import dataclass

from solvers.experiments.blocks import run_block, warmup
from solvers.experiments.checkpoint import Checkpoint
from solvers.experiments.diagnostics import summarize
from solvers.experiments.draws import Draws, concatenate
from solvers.experiments.options import SamplerOptions
from solvers.experiments.results import ExperimentResult
from solvers.experiments.target import Target


@dataclass(frozen=True)
class Run:
    """A finished in-process run: its result, every kept draw, and the last checkpoint (to extend the run)."""

    result: ExperimentResult
    draws: Draws
    checkpoint: Checkpoint


def sample(target: Target, options: SamplerOptions) -> Run:
    """Warmup plus ``draws`` kept draws of every chain, in blocks of ``block_size``.

    The wall-clock ``time_limit`` (warmup included) is checked after each block; at least one block runs, and a
    run stopped early is summarised on its draws so far with status ``time_limit``.
    """
    started = time.perf_counter()
    checkpoint = warmup(target, options)
    blocks: list[Draws] = []
    time_limited = False
    while checkpoint.draws_done < options.draws:
        checkpoint, block = run_block(target, options, checkpoint)
        blocks.append(block)
        if options.time_limit is not None and time.perf_counter() - started > options.time_limit:
            time_limited = checkpoint.draws_done < options.draws
            break
    draws = concatenate(blocks)
    return Run(summarize(target, options, checkpoint, draws, time_limited=time_limited), draws, checkpoint)
