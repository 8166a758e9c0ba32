"""Options of the line tracers: one validated, immutable block."""

from __future__ import annotations

from pydantic import ConfigDict, Field, field_validator

from solvers.core.corrector import Limits
from solvers.core.options import ArclengthOptions
from solvers.core.special_points import SpecialKind

#: The kind of a line is the kind of the special points it is made of.
LineKind = SpecialKind
ALL_KINDS: tuple[SpecialKind, ...] = tuple(SpecialKind)


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
    branch_amplitude: float = Field(
        1e-2, gt=0, le=1, description="Kernel amplitude (scaled) of the first point on a bifurcating branch."
    )
    kinds: tuple[SpecialKind, ...] = Field(
        ALL_KINDS, description="Which kinds of line trace_boundaries traces (names of SpecialKind)."
    )

    def limits(self) -> Limits:
        """What the arclength iterator reads: these steps, the fixed residual tolerance, the point cap."""
        tolerance = self.tolerance
        return Limits(self, lambda z: tolerance, self.max_points)

    @field_validator("kinds", mode="before")
    @classmethod
    def _kind_names(cls, v: object) -> object:
        """Kinds may be given by name (the JSON of a stored job holds names)."""
        if isinstance(v, (list, tuple)):
            return tuple(SpecialKind(k) if isinstance(k, str) else k for k in v)
        return v
