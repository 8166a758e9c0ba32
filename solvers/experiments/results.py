"""Typed, frozen results of an experiment (no JSON here: the service converts)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

#: A scalar observable's figure is a float; a vector observable's is an array of its shape.
Figure = float | np.ndarray


class Status(StrEnum):
    CONVERGED = "converged"
    NOT_CONVERGED = "not_converged"
    TIME_LIMIT = "time_limit"
    NUMERICAL_ERROR = "numerical_error"


@dataclass(frozen=True)
class Estimate:
    """Posterior mean of one observable with its Monte-Carlo error and mixing diagnostics (ArviZ definitions).

    Attributes:
        mean: mean over all kept draws of all chains.
        stderr: Monte-Carlo standard error of the mean (ArviZ ``mcse``, method "mean").
        ess_bulk: bulk effective sample size (rank-normalised).
        ess_tail: tail effective sample size (5 % and 95 % quantiles).
        rhat: rank-normalised split R-hat.
    """

    mean: Figure
    stderr: Figure
    ess_bulk: Figure
    ess_tail: Figure
    rhat: Figure


@dataclass(frozen=True)
class SamplerDiagnostics:
    """How the sampler behaved.

    Attributes:
        method: the sampler ("nuts", "hmc", "mala", "langevin", "sgld").
        acceptance: mean acceptance probability over chains and sampling steps (None for unadjusted methods).
        acceptance_per_chain: the same per chain (empty for unadjusted methods).
        divergences: divergent trajectories (nuts/hmc) during sampling.
        nonfinite: sampling steps that met a non-finite log-density (see docs/experiments.md for each method).
        warmup_divergences, warmup_nonfinite: the same counts during warmup.
        step_size: mean step size over chains (the adapted one for nuts/hmc/mala).
        step_size_per_chain: the step size of each chain.
        mass_matrix: "diagonal" or "dense" for nuts/hmc, None otherwise.
        gradient_evaluations: gradient evaluations of the log-density, warmup and sampling, summed over chains
            (sgld: minibatch gradients).
        warmup_gradient_evaluations: the part spent in warmup.
        seconds: wall time of warmup and sampling.
        warmup_seconds: the part spent in warmup (compilation included).
        device: platform of the first JAX device ("cpu", "gpu", "tpu").
        warmup: warmup steps per chain; thin: steps per kept draw.
        max_rhat, min_ess_bulk, min_ess_tail: the worst figures over every reported observable component.
        rhat_max, ess_bulk_min: the convergence thresholds that were applied.
    """

    method: str
    acceptance: float | None
    acceptance_per_chain: tuple[float, ...]
    divergences: int
    nonfinite: int
    warmup_divergences: int
    warmup_nonfinite: int
    step_size: float
    step_size_per_chain: tuple[float, ...]
    mass_matrix: str | None
    gradient_evaluations: int
    warmup_gradient_evaluations: int
    seconds: float
    warmup_seconds: float
    device: str
    warmup: int
    thin: int
    max_rhat: float
    min_ess_bulk: float
    min_ess_tail: float
    rhat_max: float
    ess_bulk_min: float


@dataclass(frozen=True)
class ExperimentResult:
    """Posterior estimates of a theory's finite network, with their errors and the sampler's diagnostics.

    Attributes:
        estimates: one :class:`Estimate` per observable the Target's estimators report.
        sampler: the sampler's diagnostics.
        converged: every observable component has R-hat ≤ rhat_max and bulk ESS ≥ ess_bulk_min, and no
            estimate is non-finite.
        status: converged, not_converged, time_limit (the draws so far), numerical_error (non-finite estimates).
        message: the reason, in words, with the offending figures.
        draws: kept draws per chain; chains: number of chains.
        gradient_evaluations, seconds, device: as in ``sampler`` (repeated for the headline).
        sampled: parameter blocks sampled (name, size); integrated_out: blocks integrated out exactly.
        init: the named initialisation the chains started from.
    """

    estimates: Mapping[str, Estimate]
    sampler: SamplerDiagnostics
    converged: bool
    status: Status
    message: str
    draws: int
    chains: int
    gradient_evaluations: int
    seconds: float
    device: str
    sampled: tuple[tuple[str, int], ...]
    integrated_out: tuple[str, ...]
    init: str
