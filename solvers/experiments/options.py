"""How to sample a Target: one validated block of options (no JAX here, so the service validates cheaply)."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: Convergence rule: every reported observable (each component of a vector one) needs a rank-normalised split R-hat
#: at most this ...
RHAT_MAX = 1.01
#: ... and a bulk effective sample size at least this (Vehtari, Gelman, Simpson, Carpenter, Bürkner 2021).
ESS_BULK_MIN = 400.0
#: Default acceptance targets of the step-size adaptation: HMC/NUTS (Stan's) and MALA (Roberts & Rosenthal 1998).
TARGET_ACCEPTANCE = {"nuts": 0.8, "hmc": 0.8, "mala": 0.574}
#: Per-step PRNG keys are folded from a 32-bit step counter.
MAX_TOTAL_STEPS = 2**31 - 1

Method = Literal["nuts", "hmc", "mala", "langevin", "sgld"]
ADJUSTED = ("nuts", "hmc", "mala")
UNADJUSTED = ("langevin", "sgld")

#: Default limits of a sampler run's sizes (a service may override each by name, like a theory's size limits):
#: chains; kept draws per chain; sampler steps per chain (warmup + draws × thin); the work of the whole experiment,
#: parameters × chains × steps summed over its points; and the kept draws it holds, chains × draws × points.
SAMPLER_SIZE_LIMITS: dict[str, float] = {
    "experiment_chains": 64,
    "experiment_draws": 100_000,
    "experiment_steps": 10_000_000,
    "experiment_work": 1e13,
    "experiment_stored_draws": 2_000_000,
}

#: Fields that do not change a chain's draws: a checkpoint may be resumed with other values of these.
NON_CHAIN_FIELDS = frozenset({"draws", "block_size", "keep_positions", "time_limit", "rhat_max", "ess_bulk_min"})


class SamplerOptions(BaseModel):
    """How to sample a theory's finite network. Every field but ``time_limit`` is part of an experiment's cache key
    (the service's: a time limit bounds a run, and a run it cut short is resumed, never taken as final)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True, frozen=True)

    method: Method = Field(
        "nuts",
        description="nuts: No-U-Turn sampler; hmc: Hamiltonian Monte Carlo with a fixed number of leapfrog steps "
        "(both with Stan-style window adaptation of step size and mass matrix); mala: Metropolis-adjusted Langevin "
        "with dual-averaging step-size adaptation; langevin: unadjusted Langevin (the papers' noisy gradient "
        "descent, biased by O(step)); sgld: unadjusted Langevin on minibatch gradients.",
    )
    chains: int = Field(4, ge=1, le=4096, description="Independent chains, run in parallel (vectorised).")
    warmup: int = Field(
        1000,
        ge=0,
        le=10_000_000,
        description="Steps per chain before the draws. nuts/hmc/mala: adaptation of the step size (and mass "
        "matrix); langevin/sgld: burn-in at the fixed step. Warmup steps are not reported as draws.",
    )
    draws: int = Field(1000, ge=1, le=10_000_000, description="Draws kept per chain after warmup.")
    thin: int = Field(
        1,
        ge=1,
        le=1_000_000,
        description="Sampler steps per kept draw (each chain runs draws × thin steps). Thinning bounds memory "
        "and estimator cost; it never improves an estimate.",
    )
    seed: int = Field(0, ge=0, le=2**32 - 1, description="Seed of every random number of the run.")
    init: str = Field(
        "prior",
        min_length=1,
        max_length=64,
        description="Named initialisation of the network (\"prior\"; \"teacher\" where the theory has one). "
        "Each chain draws its own start from it.",
    )
    step_size: float | None = Field(
        None,
        gt=0,
        le=1e6,
        description="nuts/hmc: leapfrog step; mala/langevin/sgld: h in x ← x + h ∇log π(x) + √(2h) ξ. "
        "With warmup > 0 it is where the adaptation of nuts/hmc/mala starts; required when warmup = 0. "
        "langevin/sgld need it or learning_rate and temperature.",
    )
    learning_rate: float | None = Field(
        None,
        gt=0,
        le=1e6,
        description="langevin/sgld in the papers' units: the step η of p ← p − η((T/σ_p²) p + ∇L) + √(2Tη) ξ; "
        "with temperature T it sets step_size = η·T. Use solvers.experiments.langevin_dictionary to find the "
        "posterior (the theory spec) that a paper's run samples.",
    )
    temperature: float | None = Field(
        None,
        gt=0,
        le=1e6,
        description="langevin/sgld: the papers' noise temperature T, only to convert learning_rate to a step. "
        "It does not change the law sampled, which is the theory spec's posterior.",
    )
    mass_matrix: Literal["diagonal", "dense"] = Field(
        "diagonal", description="nuts/hmc: inverse mass matrix adapted during warmup (diagonal or dense)."
    )
    num_integration_steps: int = Field(16, ge=1, le=4096, description="hmc: leapfrog steps per proposal.")
    target_acceptance: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="Acceptance rate the step-size adaptation aims at (null: 0.8 for nuts/hmc, 0.574 for mala).",
    )
    max_tree_depth: int = Field(10, ge=1, le=15, description="nuts: most trajectory doublings per step.")
    batch_size: int | None = Field(
        None, ge=1, le=10_000_000, description="sgld: data points per minibatch gradient (required for sgld)."
    )
    block_size: int = Field(
        100,
        ge=1,
        le=1_000_000,
        description="Draws per checkpoint block: a run is stored and can be resumed between blocks.",
    )
    keep_positions: bool = Field(
        False,
        description="Return the network's parameters at every kept draw (memory: chains × draws × dim numbers).",
    )
    time_limit: float | None = Field(
        None,
        gt=0,
        le=30 * 86_400,
        description="Seconds of sampling per chain, warmup included: every compiled call is sized to end before "
        "it. The draws so far are reported with status time_limit (none when it falls inside the warmup); the "
        "service resumes such a run when it is submitted again.",
    )
    rhat_max: float = Field(
        RHAT_MAX, gt=1, le=2, description="Largest split R-hat of a reported observable for converged: true."
    )
    ess_bulk_min: float = Field(
        ESS_BULK_MIN, ge=0, description="Smallest bulk ESS of a reported observable for converged: true."
    )

    @model_validator(mode="after")
    def _consistent(self) -> SamplerOptions:
        paper = (self.learning_rate is not None, self.temperature is not None)
        if any(paper) and not all(paper):
            raise ValueError("learning_rate and temperature go together (step_size = learning_rate × temperature)")
        if all(paper):
            if self.method not in UNADJUSTED:
                raise ValueError("learning_rate/temperature apply to langevin and sgld; use step_size")
            if self.step_size is not None:
                raise ValueError("give step_size or learning_rate and temperature, not both")
        if self.method in UNADJUSTED and self.step_size is None and not all(paper):
            raise ValueError(f"{self.method} needs step_size (or learning_rate and temperature)")
        if self.method in ADJUSTED and self.warmup == 0 and self.step_size is None:
            raise ValueError(f"{self.method} with warmup = 0 needs step_size (nothing adapts it)")
        if (self.method == "sgld") != (self.batch_size is not None):
            raise ValueError("batch_size is required for sgld and applies to sgld only")
        if self.warmup + self.draws * self.thin > MAX_TOTAL_STEPS:
            raise ValueError(f"warmup + draws × thin must not exceed {MAX_TOTAL_STEPS} steps")
        return self

    @property
    def langevin_step(self) -> float | None:
        """Step h of the unadjusted methods in the canonical convention x ← x + h ∇log π + √(2h) ξ."""
        if self.learning_rate is not None and self.temperature is not None:
            return self.learning_rate * self.temperature
        return self.step_size

    @property
    def acceptance_target(self) -> float:
        return self.target_acceptance if self.target_acceptance is not None else TARGET_ACCEPTANCE[self.method]

    def chain_fingerprint(self) -> str:
        """Canonical text of the fields that determine the draws (a checkpoint resumes only with equal ones)."""
        return json.dumps(self.model_dump(exclude=set(NON_CHAIN_FIELDS)), sort_keys=True)


def sampler_sizes(
    options: SamplerOptions, parameters: float, points: int = 1
) -> dict[str, tuple[tuple[str, ...], float]]:
    """The size-like quantities of a run of ``options`` on a network of ``parameters`` sampled numbers, repeated at
    ``points`` parameter values: limit name -> (location of the field in a request, value)."""
    steps = options.warmup + options.draws * options.thin
    return {
        "experiment_chains": (("sampler", "chains"), float(options.chains)),
        "experiment_draws": (("sampler", "draws"), float(options.draws)),
        "experiment_steps": (("sampler", "draws"), float(steps)),
        "experiment_work": (("sampler", "draws"), float(parameters) * options.chains * steps * points),
        "experiment_stored_draws": (("sampler", "draws"), float(options.chains * options.draws * points)),
    }
