"""Request and status models of ``/v1/experiments``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from service.result_schemas import ExperimentResultOut
from service.schemas import JobAccepted, ModelSpec, Values
from solvers.core.options import SolverOptions
from solvers.experiments.options import SamplerOptions


class ExperimentRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

    model: ModelSpec = Field(description="The theory and its parameters: the finite network it describes is sampled.")  # type: ignore[valid-type]
    sampler: SamplerOptions | None = Field(None, description="How to sample (part of the experiment's key).")
    sizes: dict[str, Any] | None = Field(
        None, description="The finite sizes the network needs beyond the spec (the theory's experiment sizes, "
        "e.g. {\"d\": 64} for hciz_mlp); defaults where the theory has them."
    )
    network_seed: int = Field(
        0, ge=0, le=2**32 - 1,
        description="Seed of the network's random parts the spec does not fix (teacher, readouts, data, test "
        "inputs). The chains' seed is sampler.seed.",
    )
    parameter: str | None = Field(None, description="With values: a learning curve, one experiment per value.")
    values: Values | None = Field(
        None, description="Values of the parameter: a list or {start, stop, num[, scale: log]}.")
    solver: SolverOptions | None = Field(None, description="Solver options of the theory's solve beside it.")

    @model_validator(mode="after")
    def _curve(self) -> ExperimentRequest:
        if (self.parameter is None) != (self.values is None):
            raise ValueError("parameter and values go together (a learning curve)")
        return self


class ExperimentAccepted(JobAccepted):
    job_id: str = Field(description="Your experiment's id: a keyed hash of your API key and the experiment (spec, "
                                    "sizes, seeds, sampler and solver options). Only your key sees or cancels it.")
    deduplicated: bool = Field(
        False, description="True when an identical experiment (yours or another key's) was already queued, running "
        "or finished with every draw: your job shares it. One that finished cut short by its time limit "
        "(complete: false) is resumed instead."
    )


class Count(BaseModel):
    done: int
    total: int


class ExperimentStatus(BaseModel):
    model_config = ConfigDict(extra="allow")

    job_id: str
    status: Literal["queued", "running", "finished", "failed", "cancelled"]
    kind: Literal["experiment", "learning_curve"]
    backend: Literal["rq", "local"]
    progress: Count = Field(description="Kept draws stored so far, over every chain and point.")
    chains: Count = Field(description="Chains (each one job) completed.")
    points: Count = Field(description="Points (parameter values) assembled with their theory comparison.")
    result: ExperimentResultOut | None = Field(
        None, description="When finished: the estimates beside the theory; complete: false when a time limit cut the "
        "chains short (never final: submitting the experiment again resumes them)."
    )
    error: str | None = None
