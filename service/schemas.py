"""Request and response models of the v1 HTTP contract."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from solvers.core.options import SolverOptions
from solvers.theories import registry


def _model_union() -> Any:
    specs = [t.spec_model for t in registry().values()]
    if not specs:
        raise RuntimeError("no theory is installed")
    if len(specs) == 1:
        return specs[0]
    return Annotated[Union[tuple(specs)], Field(discriminator="theory")]  # noqa: UP007


ModelSpec = _model_union()


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class SolveRequest(_Strict):
    model: ModelSpec = Field(description="The theory and its parameters; `theory` selects the equations.")  # type: ignore[valid-type]
    solver: SolverOptions | None = Field(None, description="Solver options (part of the cache key).")


class Range(_Strict):
    start: float = Field(description="First value.")
    stop: float = Field(description="Last value (included).")
    num: int = Field(ge=1, description="Number of values, evenly spaced.")


Values = list[float] | Range


class SweepRequest(_Strict):
    model: ModelSpec = Field(description="The theory and its parameters at which the sweep is anchored.")  # type: ignore[valid-type]
    parameter: str | list[str] = Field(
        description="Field to sweep, or two fields [p1, p2] for a phase diagram (one job per row of p1)."
    )
    values: Values | list[Values] = Field(
        description="Values of the parameter: a list or {start, stop, num}; for a phase diagram one per parameter."
    )
    method: Literal["continuation", "grid"] = Field(
        "continuation",
        description="continuation: pseudo-arclength along every branch with refined spinodals and first-order "
        "points; grid: independent warm-started solves at each value.",
    )
    solver: SolverOptions | None = Field(None, description="Solver options (part of the job's key).")

    @model_validator(mode="after")
    def _shape(self) -> SweepRequest:
        two = isinstance(self.parameter, list)
        if two:
            if len(self.parameter) != 2 or len(set(self.parameter)) != 2:
                raise ValueError("parameter: a phase diagram takes exactly two distinct fields")
            if not (isinstance(self.values, list) and len(self.values) == 2
                    and all(isinstance(v, (list, Range)) for v in self.values)):
                raise ValueError("values: a phase diagram takes one value spec per parameter")
        elif isinstance(self.values, list) and any(not isinstance(v, (int, float)) for v in self.values):
            raise ValueError("values: a one-parameter sweep takes a list of numbers or {start, stop, num}")
        return self


class Diagnostics(BaseModel):
    model_config = ConfigDict(extra="allow")
    residual: float | None = None
    iterations: int | None = None
    method: str | None = None
    seconds: float | None = None


class BranchOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    converged: bool
    stable: bool | None
    free_entropy: float | None
    order_parameters: dict[str, Any]
    observables: dict[str, Any]


class SolveResponse(BaseModel):
    model_config = ConfigDict(extra="allow")
    theory: str
    spec_hash: str
    cached: bool
    converged: bool
    order_parameters: dict[str, Any]
    observables: dict[str, Any]
    branches: list[BranchOut]
    equilibrium: str | None
    diagnostics: Diagnostics


class JobAccepted(BaseModel):
    job_id: str
    status_url: str
    status: str = "queued"
    deduplicated: bool = False


class Progress(BaseModel):
    done: int
    total: int


class TransitionOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    kind: Literal["first_order", "spinodal"]
    parameter: float | None
    branches: list[str]


class PointOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    parameter: float | list[float] | None
    converged: bool
    equilibrium: str | None
    branches: list[BranchOut]
    order_parameters: dict[str, Any]
    observables: dict[str, Any]


class SweepResult(BaseModel):
    model_config = ConfigDict(extra="allow")
    points: list[PointOut]
    transitions: list[TransitionOut]


class JobStatus(BaseModel):
    model_config = ConfigDict(extra="allow")
    job_id: str
    status: Literal["queued", "running", "finished", "failed", "cancelled"]
    progress: Progress
    result: SweepResult | None = None
    error: str | None = None


class Health(BaseModel):
    status: str
    cache: Literal["redis", "memory"]
    redis: Literal["ok", "down"] | None
    version: str
    auth: Literal["api_key", "open"] = "open"


class TheoryInfo(BaseModel):
    name: str
    summary: str
    schema_: dict[str, Any] = Field(alias="schema", serialization_alias="schema")
    sweepable: list[str] = []

    model_config = ConfigDict(populate_by_name=True)
