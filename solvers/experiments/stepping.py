"""A chain's run as a sequence of compiled calls, each sized by its clock: warmup chunks, then blocks of draws.

:func:`steps` yields after every call — the checkpoint, and the block of draws it made — so that the caller
stores it, and may stop between calls (cancellation, a worker asked to stop). It ends when the draws are done,
or when the clock leaves no time for one more unit (``clock.stopped``). ``call(fn, *args)`` runs each call; the
service passes one that abandons a call which outlives the deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from solvers.experiments.blocks import advance_warmup, run_block
from solvers.experiments.checkpoint import Checkpoint
from solvers.experiments.clock import ChainClock
from solvers.experiments.draws import Draws
from solvers.experiments.options import SamplerOptions
from solvers.experiments.target import Target

Call = Callable[..., Any]


def _direct(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


@dataclass(frozen=True)
class Step:
    """One call's outcome: the checkpoint after it, and its draws (None for a chunk of warmup)."""

    checkpoint: Checkpoint
    block: Draws | None


def steps(target: Target, options: SamplerOptions, checkpoint: Checkpoint | None, clock: ChainClock,
          call: Call = _direct) -> Iterator[Step]:
    """From ``checkpoint`` (None: the start) to ``options.draws`` draws, or until ``clock`` stops the chain.

    The chains' start (initial positions and adaptation state, no step yet) is a call of its own, made directly,
    so that every chain has a checkpoint however short its time.
    """
    clock.stopped = False
    if checkpoint is None:
        checkpoint = advance_warmup(target, options, None, 0)
        yield Step(checkpoint, None)
    while checkpoint.warming_up:
        n = clock.units("warmup", options.warmup - checkpoint.warmup.steps)
        if n == 0:
            clock.stopped = True
            return
        started = clock.now()
        checkpoint = call(advance_warmup, target, options, checkpoint, n)
        clock.record("warmup", n, clock.now() - started)
        yield Step(checkpoint, None)
    while checkpoint.draws_done < options.draws:
        n = clock.units("draws", min(options.block_size, options.draws - checkpoint.draws_done))
        if n == 0:
            clock.stopped = True
            return
        started = clock.now()
        checkpoint, block = call(run_block, target, options, checkpoint, n)
        clock.record("draws", n, clock.now() - started)
        yield Step(checkpoint, block)
