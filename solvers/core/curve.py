"""The one record of a traced curve: a solution branch over one parameter, or a line of special points over two.

Every continuation of the engine produces a :class:`Curve` (BifurcationKit's branch: a table of steps plus the
special points found on it plus how it ended):

- a sweep's solution curve (:func:`solvers.core.continuation.trace_curve`) and a branch continued for branch
  switching (:func:`solvers.core.lines.curves.trace_branch`): one parameter ``p``, each point's state ``x`` a
  vector, with its tangent, stability margin and free entropy;
- a fold, first-order, branch-point, stability-loss or event line (:mod:`solvers.core.lines`): two parameters
  (λ1, λ2), each point's state one row per state of the line there (two for the coexisting states of a
  first-order line).

The special points located on the curve are its :class:`Mark` s (folds, singular points, stability losses,
events, each between two consecutive points), and its two ends say how it ended in one vocabulary
(:data:`EndKind`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from solvers.core.results import is_stable
from solvers.core.special_points import BifurcationPoint, SpecialKind

#: How a curve ends:
#:
#: - ``fold``: it turns back in the parameter onto its partner branch (an end of a branch, not of the curve);
#: - ``domain``: it leaves the domain: of the parameters (the edge of a line's box, or of the problem's bounds),
#:   or of a quantity (a residual that cannot be evaluated past it, the theory's singular edge);
#: - ``solver``: the corrector fails at the smallest step although the residual exists (a solver failure);
#: - ``lost``: the corrector fails at the smallest step, or the seed does not converge (not told apart);
#: - ``critical``: a line meets a critical point (a cusp of folds, where the coexisting states of a first-order
#:   line merge);
#: - ``spinodal``: a first-order or stability line reaches a spinodal (a state of it reaches a fold);
#: - ``closed``: the curve closes on itself;
#: - ``max_points``: the step cap is reached.
EndKind = Literal["fold", "domain", "solver", "lost", "critical", "spinodal", "closed", "max_points"]
#: The augmented system that traced a line: F = 0 with a fold condition, the coexistence of two states, a branch
#: point (Moore) condition, or one scalar condition (a stability margin or an event indicator).
Formulation = Literal["fold", "coexistence", "branch_point", "zero"]


def frozen(a: np.ndarray) -> np.ndarray:
    """A read-only float copy."""
    out = np.array(a, dtype=float)
    out.setflags(write=False)
    return out


def _coordinates(point: tuple[float, ...] | float) -> tuple[float, ...]:
    return tuple(float(v) for v in np.atleast_1d(point))


def _fix(record: CurvePoint | Mark) -> None:
    """Parameters as a tuple of floats, the state and the tangent read-only."""
    object.__setattr__(record, "point", _coordinates(record.point))
    object.__setattr__(record, "x", frozen(record.x))
    if record.tangent is not None:
        object.__setattr__(record, "tangent", frozen(record.tangent))


@dataclass(frozen=True)
class CurvePoint:
    """One solution on a curve: its parameters ``point``, its state ``x`` (a vector, or one row per state of a
    line), the unit tangent in the continuation's scaled coordinates (None where not kept), its stability margin
    and free entropy (None where unknown or not computed)."""

    point: tuple[float, ...]
    x: np.ndarray
    tangent: np.ndarray | None = None
    margin: float | None = None
    free_entropy: float | None = None

    def __post_init__(self) -> None:
        _fix(self)

    @property
    def p(self) -> float:
        """The parameter of a point on a one-parameter curve (the first parameter of a line's point)."""
        return self.point[0]

    @property
    def stable(self) -> bool | None:
        return is_stable(self.margin)

    def flipped(self) -> CurvePoint:
        """The same point with its tangent pointing the other way along the curve."""
        tangent = None if self.tangent is None else -self.tangent
        return CurvePoint(self.point, self.x, tangent, self.margin, self.free_entropy)


@dataclass(frozen=True)
class Mark:
    """A special point located on a curve: where the monitor ``kind`` ("fold", "singular", "margin",
    "event:<name>") changes sign, between ``points[index]`` and ``points[index + 1]``.

    ``refined``: located on the curve by the iterator (else the midpoint of its step); ``uncertainty``: how well
    its parameters are known (the root finder's final bracket, or half the step when not refined).
    """

    kind: str
    index: int
    point: tuple[float, ...]
    x: np.ndarray
    tangent: np.ndarray | None = None
    refined: bool = True
    uncertainty: float = 0.0

    def __post_init__(self) -> None:
        _fix(self)

    @property
    def p(self) -> float:
        """The parameter of a mark on a one-parameter curve."""
        return self.point[0]


@dataclass(frozen=True)
class End:
    """Where and how a curve (or one branch on it) ends: ``point`` the parameters of its last point (a fold: the
    refined fold), ``states`` the state rows there where kept.

    ``precision`` estimates the error of ``point`` (0.0 when solved to the corrector's tolerance; positive for an
    end only bracketed). ``branch``: the branch that ends (named once the curve's branches are); ``partner``: a
    fold's other branch; ``quantity``: the quantity that left its domain (None when the theory does not name it);
    ``method`` and ``residual``: a solver failure's method and last residual (max norm).
    """

    kind: EndKind
    point: tuple[float, ...]
    states: np.ndarray | None = None
    detail: str = ""
    precision: float = 0.0
    branch: str = ""
    partner: str | None = None
    quantity: str | None = None
    method: str | None = None
    residual: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "point", _coordinates(self.point))
        if self.states is not None:
            object.__setattr__(self, "states", frozen(np.atleast_2d(self.states)))

    @property
    def parameter(self) -> float:
        """The parameter of the end of a one-parameter curve."""
        return self.point[0]


@dataclass(frozen=True)
class Curve:
    """A traced curve over one or two named parameters, in order along it, with its special points and ends.

    ``ends``: how it ends at its first point and at its last; None where it does not end: a sweep's curve that
    leaves the range there (a sweep reports only what happens inside its range), the start of a branch traced
    one way from a given point, and the first point of every closed curve (a sweep's, a branch's or a line's:
    traced once round, it ends ``closed`` on its last point, which is its first; ``traced_ends``). Any other line
    has both ends (``domain`` at the box's edge).
    ``name``: a branch's start, or an event line's event. A line also has its ``kind`` (the kind of special point
    it is made of), the ``branches`` it involves, the ``bifurcation`` it was seeded at (a stability-loss or
    branch-point line) and the ``formulation`` that traced it; a solution curve has no ``kind``.
    """

    name: str
    points: tuple[CurvePoint, ...] = ()
    marks: tuple[Mark, ...] = ()
    ends: tuple[End | None, End | None] = (None, None)
    message: str = ""
    parameters: tuple[str, ...] = ("p",)
    kind: SpecialKind | None = None
    branches: tuple[str, ...] = ()
    bifurcation: BifurcationPoint | None = None
    formulation: Formulation | None = None

    def __post_init__(self) -> None:
        if self.kind is not None:
            object.__setattr__(self, "kind", SpecialKind(self.kind))

    @property
    def traced_ends(self) -> tuple[End, ...]:
        """The ends it has, first to last (one for a closed curve)."""
        return tuple(e for e in self.ends if e is not None)

    @property
    def folds(self) -> tuple[Mark, ...]:
        return tuple(m for m in self.marks if m.kind == "fold")

    @property
    def coordinates(self) -> tuple[tuple[float, ...], ...]:
        """Each point's parameters."""
        return tuple(q.point for q in self.points)

    @property
    def states(self) -> tuple[np.ndarray, ...]:
        """Each point's state, one row per state."""
        return tuple(np.atleast_2d(q.x) for q in self.points)

    def array(self) -> np.ndarray:
        """The points' parameters as an (N, number of parameters) array."""
        return np.array(self.coordinates, dtype=float).reshape(-1, len(self.parameters))


def interpolations(points: Sequence[CurvePoint], p: float, parameters: np.ndarray | None = None
                   ) -> Iterator[np.ndarray]:
    """The state at ``p`` interpolated linearly on every segment of a one-parameter curve whose ends bracket ``p``
    (a guess for a solve at ``p`` on each of the curve's branches there). ``parameters``: the points' p, where the
    caller holds them (a sweep asks along one curve at every value)."""
    ps = np.fromiter((q.p for q in points), float, len(points)) if parameters is None else parameters
    pa, pb = ps[:-1], ps[1:]
    for k in np.flatnonzero(((pa <= p) & (p <= pb)) | ((pb <= p) & (p <= pa))):
        a, b = points[k], points[k + 1]
        w = 0.0 if pa[k] == pb[k] else (p - float(pa[k])) / (float(pb[k]) - float(pa[k]))
        yield (1 - w) * a.x + w * b.x
