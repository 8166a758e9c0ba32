"""Samplers, chains and diagnostics for the finite networks behind each theory. Knows no physics.

Importing this package does not import JAX: ``SamplerOptions``, the result types and the Langevin dictionary
load without it, and the samplers load JAX when first used (``from solvers.experiments import sample``).

    run_block(target, options, checkpoint | None, n_draws) -> (checkpoint, draws)   # one job step
    sample(target, options) -> Run(result, draws, checkpoint)                        # all of it, in-process
    summarize(target, options, checkpoint, draws) -> ExperimentResult
    to_inference_data(draws) -> xarray.DataTree (ArviZ layout: posterior, sample_stats)
    chain_options(options, c), join_chains(checkpoints, blocks)                       # chains run apart, joined
"""

from __future__ import annotations

import importlib
from typing import Any

from solvers.experiments.chains import chain_options, chain_seed, join_chains
from solvers.experiments.checkpoint import Checkpoint, WarmupSummary
from solvers.experiments.draws import Draws, concatenate
from solvers.experiments.langevin_dictionary import LangevinPosterior, PaperLangevin, paper_run_for, posterior_of
from solvers.experiments.options import ESS_BULK_MIN, RHAT_MAX, SamplerOptions
from solvers.experiments.results import Estimate, ExperimentResult, SamplerDiagnostics, Status

_LAZY = {
    "Target": "solvers.experiments.target",
    "run_block": "solvers.experiments.blocks",
    "warmup": "solvers.experiments.blocks",
    "check_compatible": "solvers.experiments.blocks",
    "sample": "solvers.experiments.sampling",
    "Run": "solvers.experiments.sampling",
    "summarize": "solvers.experiments.diagnostics",
    "to_inference_data": "solvers.experiments.inference_data",
}

__all__ = [
    "ESS_BULK_MIN",
    "RHAT_MAX",
    "Checkpoint",
    "Draws",
    "Estimate",
    "ExperimentResult",
    "LangevinPosterior",
    "PaperLangevin",
    "SamplerDiagnostics",
    "SamplerOptions",
    "Status",
    "WarmupSummary",
    "chain_options",
    "chain_seed",
    "concatenate",
    "join_chains",
    "paper_run_for",
    "posterior_of",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
