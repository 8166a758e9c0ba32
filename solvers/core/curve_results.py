"""The records of a one-parameter sweep: traced curves (points, folds), their tables, and the sweep itself.

They live apart from the driver (:mod:`solvers.core.sweep`) and the continuation
(:mod:`solvers.core.continuation`) so that a :class:`~solvers.core.problem.Problem` can name the sweep it
describes without importing the code that runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from solvers.core.results import Catalogue, Notes, Report, is_stable
from solvers.core.special_points import SpecialPoint


@dataclass(frozen=True)
class CurvePoint:
    p: float
    x: np.ndarray
    tangent: np.ndarray  # unit vector in (x, t)
    margin: float | None = None
    free_entropy: float | None = None

    @property
    def stable(self) -> bool | None:
        return is_stable(self.margin)

    def flipped(self) -> CurvePoint:
        """The same point with its tangent pointing the other way along the curve."""
        return CurvePoint(self.p, self.x, -self.tangent, self.margin, self.free_entropy)


@dataclass(frozen=True)
class Fold:
    p: float
    x: np.ndarray
    index: int  # the fold lies between points[index] and points[index + 1]
    refined: bool = True
    uncertainty: float = 0.0  # in p: from the refinement's final bracket, or half the step when not refined


#: How a branch ends inside the traced range: at a fold (the curve turns back onto its partner branch), where a
#: quantity leaves its domain (the residual cannot be evaluated past it, or the theory's singular edge), where the
#: corrector fails although the residual exists (a solver failure), or where the curve closes on itself or meets
#: the step cap.
EndKind = Literal["fold", "domain", "solver", "loop", "step_cap"]


@dataclass(frozen=True)
class BranchEnd:
    """Where and how a branch on a traced curve ends (a curve that leaves the range does not end)."""

    kind: EndKind
    #: the parameter of the last point on the branch (a fold: the refined fold).
    parameter: float
    branch: str = ""
    #: fold: the branch the curve continues on through the fold.
    partner: str | None = None
    #: domain: the quantity that left its domain (None when the theory does not name it).
    quantity: str | None = None
    #: solver: the method that failed, and its last residual (max norm).
    method: str | None = None
    residual: float | None = None
    detail: str = ""


@dataclass(frozen=True)
class Curve:
    """One traced solution curve, ordered by arclength, with its folds."""

    name: str
    points: tuple[CurvePoint, ...] = ()
    folds: tuple[Fold, ...] = ()
    message: str = ""
    #: How the curve ends inside the range, at its first point's end and at its last's (None: it leaves the
    #: range there). ``branch`` is left empty here: the branch names are given to the curve's points later.
    ends: tuple[BranchEnd | None, BranchEnd | None] = (None, None)


@dataclass(frozen=True)
class CurveRow:
    """One solution on a curve."""

    p: float
    x: np.ndarray
    arclength: float
    branch: str
    stable: bool | None
    free_entropy: float | None
    report: Report | None = None
    #: Index of the sweep's special point at this row (None for a traced point).
    special: int | None = None


@dataclass(frozen=True)
class CurveTable:
    """One traced curve within the range: its rows in order along it."""

    name: str
    rows: tuple[CurveRow, ...]
    #: Points the continuation made on the whole curve.
    traced: int
    message: str = ""
    branches: tuple[str, ...] = field(default=())
    #: Every branch of the table that ends within the range, and how (in order along the curve).
    ends: tuple[BranchEnd, ...] = ()


@dataclass(frozen=True)
class Sweep:
    """Every requested value's catalogue, the special points between them, and the traced curves."""

    method: str
    values: tuple[float, ...]
    catalogues: tuple[Catalogue, ...]
    special_points: tuple[SpecialPoint, ...] = ()
    curves: tuple[Curve, ...] = ()
    seconds: float = 0.0
    #: Indices of the values taken from stored points rather than solved.
    reused: tuple[int, ...] = ()
    notes: Notes | None = None
    #: The curves as bounded tables within the range, special points on them, reported (None: a grid).
    tables: tuple[CurveTable, ...] | None = None

    @property
    def converged(self) -> bool:
        return all(c.converged for c in self.catalogues)

    @property
    def complete(self) -> bool:
        return all(c.complete for c in self.catalogues)

    @property
    def residual(self) -> float | None:
        res = [r.result.residual for c in self.catalogues if (r := c.reference) is not None]
        finite = [r for r in res if np.isfinite(r)]
        return max(finite) if finite else None

    @property
    def iterations(self) -> int:
        return int(sum(c.iterations for c in self.catalogues))
