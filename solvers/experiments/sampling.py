"""Run an experiment in-process: warmup, then blocks until the draws are done or the time limit is reached."""

from __future__ import annotations

from dataclasses import dataclass

from solvers.experiments.blocks import no_draws
from solvers.experiments.checkpoint import Checkpoint
from solvers.experiments.clock import ChainClock
from solvers.experiments.diagnostics import summarize
from solvers.experiments.draws import Draws, concatenate
from solvers.experiments.options import SamplerOptions
from solvers.experiments.results import ExperimentResult
from solvers.experiments.stepping import steps
from solvers.experiments.target import Target


@dataclass(frozen=True)
class Run:
    """A finished in-process run: its result, every kept draw, and the last checkpoint (to extend the run)."""

    result: ExperimentResult
    draws: Draws
    checkpoint: Checkpoint


def sample(target: Target, options: SamplerOptions) -> Run:
    """Warmup plus ``draws`` kept draws of every chain, in blocks of ``block_size``.

    The wall-clock ``time_limit`` (warmup included) sizes every compiled call so that it ends in time
    (:class:`~solvers.experiments.clock.ChainClock`); a run stopped early is summarised on its draws so far with
    status ``time_limit`` (none, if the limit fell inside the warmup).
    """
    clock = ChainClock(options.time_limit)
    checkpoint: Checkpoint | None = None
    blocks: list[Draws] = []
    for step in steps(target, options, None, clock):
        checkpoint = step.checkpoint
        if step.block is not None:
            blocks.append(step.block)
    assert checkpoint is not None  # the first call always runs
    draws = concatenate(blocks) if blocks else no_draws(target, options)
    return Run(summarize(target, options, checkpoint, draws, time_limited=clock.stopped), draws, checkpoint)
