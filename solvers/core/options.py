"""Solver options: one validated block, part of every cache key."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from solvers.core.search_options import SearchOptions
from solvers.core.special_points import SpecialKind


class ArclengthOptions(BaseModel):
    """Pseudo-arclength step control (BifurcationKit-style ``ContinuationPar``): one set of defaults for every
    continuation, a sweep's curves (:class:`ContinuationOptions`) and the two-parameter lines
    (:class:`LineOptions`).

    Steps are measured in the continuation's scaled coordinates: each parameter divided by the width of its
    range (the sweep's values, the box of a boundary job), so a step of 0.05 moves at most 5 % of the range.
    The rule that adapts them is :func:`solvers.core.step_size.next_step`.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

    ds: float = Field(0.01, gt=0, description="First arclength step, in units of the parameter range.")
    ds_min: float = Field(1e-7, gt=0, description="Smallest step; a curve whose corrector fails below it ends.")
    ds_max: float = Field(0.05, gt=0, description="Largest step, in units of the parameter range.")
    newton_max: int = Field(10, ge=2, le=100, description="Corrector iterations before a step is halved.")
    newton_target: int = Field(
        5, ge=1, le=50, description="Corrector iterations above which the next step shrinks (by 0.6); at or below "
        "it the step grows by 1 + ½((newton_max − n)/newton_max)²."
    )
    max_angle: float = Field(
        0.3, gt=0, le=1.5, description="Largest angle (radians) between successive tangents before a step is halved."
    )
    branch_amplitude: float = Field(
        1e-2, gt=0, le=1, description="Kernel amplitude (scaled) of the first point on a bifurcating branch; a "
        "sweep's switch is no longer than ds_max either."
    )

    @model_validator(mode="after")
    def _ordered(self) -> ArclengthOptions:
        if not self.ds_min <= self.ds <= self.ds_max:
            raise ValueError("need ds_min <= ds <= ds_max")
        return self


class ContinuationOptions(ArclengthOptions):
    """The step control of a sweep's curves."""

    max_steps: int = Field(4000, ge=1, le=100_000, description="Step cap per branch and direction.")


class LineOptions(ArclengthOptions):
    """How lines are traced (pseudo-arclength continuation of augmented systems).

    Arclength is measured in scaled coordinates: each parameter divided by the width of the
    parameter box being traced, each state component by the problem's ``scale``. A step of 0.05
    therefore moves a line by at most 5 % of the box.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)

    tolerance: float = Field(
        1e-10, gt=0, le=1e-3, description="Max-norm residual of an augmented system at which the corrector stops."
    )
    max_points: int = Field(2000, ge=2, le=1_000_000, description="Point cap per line and direction.")
    seeds: int = Field(
        3, ge=1, le=50, description="Number of interior rows: λ1 values (evenly spaced, ends included; 1: the middle) "
        "at which trace_boundaries scans λ2 for special points. The box's four edges are scanned whatever this is."
    )
    merge_distance: float = Field(
        1e-2, gt=0, le=1, description="Scaled distance between the two states of a first-order line below which "
        "they count as merged: the line ends at a critical point."
    )
    kinds: tuple[SpecialKind, ...] = Field(
        tuple(SpecialKind), description="Which kinds of line trace_boundaries traces (names of SpecialKind)."
    )

    @field_validator("kinds", mode="before")
    @classmethod
    def _kind_names(cls, v: object) -> object:
        """Kinds may be given by name (the JSON of a stored job holds names)."""
        if isinstance(v, (list, tuple)):
            return tuple(SpecialKind(k) if isinstance(k, str) else k for k in v)
        return v


class SolverOptions(BaseModel):
    """How to solve. Every field changes the cache key."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

    method: Literal["auto", "picard", "anderson", "newton"] = Field(
        "auto",
        description="Fixed-point method. auto: Newton where the theory has a residual, falling back to "
        "damped Anderson; picard: damped iteration; anderson: Anderson-accelerated damped iteration.",
    )
    mixing: float = Field(0.5, gt=0, le=1, description="Weight on the new iterate in damped iteration.")
    anderson_memory: int = Field(5, ge=1, le=50, description="Anderson history length.")
    anderson_regularization: float = Field(
        1e-10, ge=0, le=1, description="Tikhonov weight of Anderson's least squares (on normalised columns)."
    )
    tol_abs: float = Field(1e-10, gt=0, le=1, description="Absolute residual tolerance (max norm).")
    tol_rel: float = Field(1e-10, ge=0, le=1, description="Residual tolerance relative to max(1, |x|).")
    max_iterations: int = Field(2000, ge=1, le=1_000_000, description="Iteration cap of one solve.")
    quadrature_order: int | None = Field(
        None, ge=8, le=200_000, description="Order of the fixed quadratures (theory default when null)."
    )
    time_limit: float | None = Field(
        None, gt=0, le=86_400, description="Seconds; a solve that exceeds it returns converged: false."
    )
    continuation: ContinuationOptions = Field(default_factory=ContinuationOptions)
    search: SearchOptions = Field(
        default_factory=SearchOptions, description="How solutions are looked for at one parameter value."
    )

    def tolerance(self, x_norm: float) -> float:
        """Residual threshold: absolute plus relative to the iterate's size."""
        return self.tol_abs + self.tol_rel * max(1.0, x_norm)
