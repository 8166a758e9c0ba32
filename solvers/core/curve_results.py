"""The records of a one-parameter sweep: its traced curves' bounded tables, and the sweep itself.

They live apart from the driver (:mod:`solvers.core.sweep`) and the continuation
(:mod:`solvers.core.continuation`) so that a :class:`~solvers.core.problem.Problem` can name the sweep it
describes without importing the code that runs it. The traced curves are the engine's one record of a curve
(:class:`solvers.core.curve.Curve`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solvers.core.curve import Curve, End
from solvers.core.results import Catalogue, Notes, Report
from solvers.core.special_points import SpecialPoint


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
    ends: tuple[End, ...] = ()


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
