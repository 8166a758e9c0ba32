"""What an experiment will store in Redis and hold in a worker, in bytes, estimated before anything runs.

Counting draws is not enough: a draw stores every component of every estimator, and a theory's per-draw vectors
(predictions on test inputs) can have thousands. So the plan estimates, from the components of each estimator the
theory declares (``Theory.experiment_estimator_sizes``), the sampled dimension and the data held:

- **stored**: what the experiment's keys hold at their largest — every chain's kept draws (each number base64
  encoded: 4/3 of its bytes) and last checkpoint, then each point's result and its per-draw series — checked
  against the limit ``experiment_stored_bytes``;
- **worker**: what the process that assembles a point holds — the network's data, and the point's draws read
  back (the stored text of one chain at a time, every chain decoded, joined, and ArviZ's working copies for the
  diagnostics) — checked against ``max_solve_memory_bytes``, the address space a work horse gets.

The constants are upper fits to sizes measured on real experiments (``tests/service/test_experiment_footprint.py``
measures them against Redis's own accounting and a worker's peak memory).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from solvers.experiments.options import SamplerOptions

#: base64 turns 3 bytes into 4.
ENCODED = 4 / 3
#: Redis's memory for a stored string beyond its length (allocator size classes, hash entries): measured 1.13.
REDIS_OVERHEAD = 1.25
#: Per draw, beside the estimators: log-density and acceptance (floating point), divergences, gradient evaluations
#: and non-finite counts (int32).
STAT_FLOATS, STAT_INTS = 2, 3
#: JSON text of one block beyond its numbers (names, dtypes, shapes), per block; blocks per chain beyond
#: draws / block_size (a time limit cuts them smaller).
BLOCK_OVERHEAD, EXTRA_BLOCKS = 4096, 64
#: Characters of one component in a point's JSON (mean, stderr, ESS, tail ESS, R-hat, and its theory comparison),
#: and of one number in the per-draw series.
POINT_CHARS, SERIES_CHARS = 200, 24
#: Working copies of the decoded draws while a point is assembled (chains decoded, concatenated, joined, float64
#: copies and ArviZ's rank-normalised arrays for ESS and R-hat, the derived observables' linearised series):
#: measured 4.75 beyond a fixed part.
ASSEMBLY_COPIES = 6
#: Fixed cost of an assembly beyond what scales with the request: ArviZ and its libraries loaded, the derived
#: observables compiled (measured: about 200 MB of a fresh work horse's resident memory).
WORKER_BASE = 256 * 2**20


@dataclass(frozen=True)
class PointSizes:
    """One point's network: components of each per-draw estimator, sampled dimension, numbers of data held."""

    estimators: Mapping[str, int]
    parameters: float
    data: float

    @property
    def draw_values(self) -> float:
        return float(sum(self.estimators.values()))


@dataclass(frozen=True)
class Footprint:
    stored: float
    worker: float
    #: the part of ``stored`` that grows with the draws (the rest is checkpoints and results)
    stored_by_draws: float


def _checkpoint_numbers(options: SamplerOptions, dim: float) -> float:
    """Numbers of one chain's checkpoint (sampler state, parameters, adaptation), at its largest (in the warmup)."""
    state = 2 * dim + 1 if options.method != "sgld" else dim  # position, log-density, its gradient
    metric = 0.0
    if options.method in ("nuts", "hmc"):
        # inverse mass matrix in force, Welford mean and second moment, the adaptation's own copy
        metric = 5 * dim if options.mass_matrix == "diagonal" else 4 * dim * dim + 2 * dim
    return state + metric + 16


def footprint(options: SamplerOptions, points: list[PointSizes], precision: str, series_draws: int,
              series_components: int) -> Footprint:
    """Bytes stored (Redis, or the embedded executor's memory) and held by the worker assembling a point."""
    fbytes = 8 if precision == "float64" else 4
    chains, draws = options.chains, options.draws
    blocks = math.ceil(draws / options.block_size) + EXTRA_BLOCKS
    stored = by_draws = worker = 0.0
    for p in points:
        per_draw = (p.draw_values + STAT_FLOATS) * fbytes + STAT_INTS * 4
        draws_bytes = chains * draws * per_draw * ENCODED
        checkpoint = _checkpoint_numbers(options, p.parameters) * fbytes * ENCODED
        # the series keeps at most series_draws draws per chain, and series_components of each vector
        in_series = sum(min(n, series_components) for n in p.estimators.values()) + STAT_FLOATS + STAT_INTS
        series = min(series_draws, draws) * chains * in_series * SERIES_CHARS
        result = 2 * p.draw_values * POINT_CHARS + series  # (derived observables: at most one per component)
        stored += REDIS_OVERHEAD * (draws_bytes + chains * (checkpoint + blocks * BLOCK_OVERHEAD) + result)
        by_draws += REDIS_OVERHEAD * draws_bytes
        decoded = chains * draws * (p.draw_values + STAT_FLOATS + STAT_INTS) * 8
        one_chain_text = 2 * draws_bytes / chains  # its stored text, and the JSON parsed from it
        holds = p.data * 8 + decoded * ASSEMBLY_COPIES + one_chain_text + chains * checkpoint + result
        worker = max(worker, WORKER_BASE + holds)
    return Footprint(stored, worker, by_draws)
