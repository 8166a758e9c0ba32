"""Chains run apart and joined: one chain per job step, on whichever worker takes it, summarised as one run.

A run of C chains may be vectorised in one process (``run_block`` with ``options.chains = C``) or cut into C
single-chain runs, each its own job. Chain c of a cut run is the one-chain run with ``chain_options(options,
c)``: the same options with ``chains = 1`` and a seed of its own, derived from ``(options.seed, c)`` alone, so
its draws do not depend on which worker runs it, on the other chains, or on where it was interrupted and
resumed. :func:`join_chains` puts the chains' last checkpoints and draws back together for :func:`summarize`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from solvers.experiments.checkpoint import Checkpoint, WarmupSummary
from solvers.experiments.draws import Draws, concatenate
from solvers.experiments.options import SamplerOptions


def chain_seed(seed: int, chain: int) -> int:
    """The seed of chain ``chain`` of a run seeded ``seed`` (a 32-bit word of NumPy's SeedSequence)."""
    return int(np.random.SeedSequence([int(seed), int(chain)]).generate_state(1, dtype=np.uint32)[0])


def chain_options(options: SamplerOptions, chain: int) -> SamplerOptions:
    """The one-chain run that is chain ``chain`` of ``options`` run apart."""
    if not 0 <= chain < options.chains:
        raise ValueError(f"chain {chain} of a {options.chains}-chain run")
    return options.model_copy(update={"chains": 1, "seed": chain_seed(options.seed, chain)})


def time_spent(checkpoint: Checkpoint) -> float:
    """Seconds a chain has run, warmup included: what a per-chain time limit is checked against."""
    return checkpoint.warmup.seconds + checkpoint.seconds


def join_chains(checkpoints: Sequence[Checkpoint], blocks: Sequence[Sequence[Draws]]) -> tuple[Checkpoint, Draws]:
    """One run from single-chain runs: their last checkpoints and each one's blocks of draws, in order.

    Chains stopped early (a time limit) may hold different numbers of draws: every chain is cut to the
    common number (R-hat and ESS compare chains of equal length); the joined draws carry the counts of the
    draws kept, the joined checkpoint's totals those of every draw made. Seconds are summed over chains:
    compute time, not wall time, when the chains ran side by side.
    """
    if not checkpoints or len(checkpoints) != len(blocks):
        raise ValueError("one checkpoint and one list of blocks per chain are needed")
    if len({(c.method, c.dim, c.key_impl) for c in checkpoints}) != 1:
        raise ValueError("the chains come from different samplers or networks")
    records = [concatenate(list(b)) for b in blocks]
    for c, (cp, rec) in enumerate(zip(checkpoints, records, strict=True)):
        if cp.chains != 1 or rec.chains != 1 or rec.start != 0 or rec.stop != cp.draws_done:
            raise ValueError(f"chain {c}: expected one chain with draws 0..{cp.draws_done}")
    n = min(cp.draws_done for cp in checkpoints)

    def cut(a: np.ndarray) -> np.ndarray:
        return a[:, :n]

    joined = Draws(
        start=0,
        estimates={k: np.concatenate([cut(r.estimates[k]) for r in records]) for k in records[0].estimates},
        logdensity=np.concatenate([cut(r.logdensity) for r in records]),
        acceptance=np.concatenate([cut(r.acceptance) for r in records]),
        divergences=np.concatenate([cut(r.divergences) for r in records]),
        gradient_evaluations=np.concatenate([cut(r.gradient_evaluations) for r in records]),
        nonfinite=np.concatenate([cut(r.nonfinite) for r in records]),
        positions=None if records[0].positions is None else np.concatenate([cut(r.positions) for r in records]),
        seconds=float(sum(r.seconds for r in records)),
        device=",".join(dict.fromkeys(d for r in records for d in r.device.split(","))),
    )
    warm = [cp.warmup for cp in checkpoints]
    first = checkpoints[0]
    checkpoint = Checkpoint(
        fingerprint=first.fingerprint,
        method=first.method,
        dim=first.dim,
        state=tuple(np.concatenate(leaves) for leaves in zip(*(cp.state for cp in checkpoints), strict=True)),
        parameters={k: np.concatenate([cp.parameters[k] for cp in checkpoints]) for k in first.parameters},
        key=first.key,  # not a key to resume from: a joined run is summarised, never continued
        key_impl=first.key_impl,
        draws_done=n,
        warmup=WarmupSummary(
            steps=first.warmup.steps,
            gradient_evaluations=sum(w.gradient_evaluations for w in warm),
            divergences=sum(w.divergences for w in warm),
            nonfinite=sum(w.nonfinite for w in warm),
            seconds=float(sum(w.seconds for w in warm)),
        ),
        device=",".join(dict.fromkeys(cp.device for cp in checkpoints)),
        gradient_evaluations=sum(cp.gradient_evaluations for cp in checkpoints),
        divergences=sum(cp.divergences for cp in checkpoints),
        nonfinite=sum(cp.nonfinite for cp in checkpoints),
        seconds=float(sum(cp.seconds for cp in checkpoints)),
    )
    return checkpoint, joined
