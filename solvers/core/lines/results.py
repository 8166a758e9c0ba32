"""Typed, immutable results of the line tracers and of branch switching.

The kinds of line and the branch-point records are the engine's own (``SpecialKind``,
``BifurcationPoint``, ``NormalForm`` in :mod:`solvers.core.special_points`): a special point of a
one-parameter sweep and a line of such points speak one vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from solvers.core.lines.options import LineKind
from solvers.core.special_points import BifurcationPoint, BifurcationType, Criticality, NormalForm, SpecialKind

__all__ = [
    "BifurcationPoint",
    "BifurcationType",
    "BoundaryResult",
    "BranchStart",
    "CriticalPoint",
    "Criticality",
    "EndKind",
    "Formulation",
    "Line",
    "LineEnd",
    "NormalForm",
    "Unexplained",
]

EndKind = Literal["domain", "critical", "spinodal", "lost", "max_points", "closed"]
Formulation = Literal["fold", "coexistence", "branch_point", "zero"]


def _frozen(a: np.ndarray) -> np.ndarray:
    out = np.array(a, dtype=float)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class LineEnd:
    """Where and why a line stops. ``states`` has one row per state of the line there.

    ``precision`` estimates the error of ``point`` in the parameters (0.0 when it was solved to
    the corrector's tolerance, e.g. a cusp or an edge of the box; positive for an extrapolated end).
    """

    kind: EndKind
    point: tuple[float, float]
    states: np.ndarray
    detail: str = ""
    precision: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "states", _frozen(np.atleast_2d(self.states)))


@dataclass(frozen=True)
class BranchStart:
    """A first corrected point on a branch leaving a bifurcation point.

    ``branch`` indexes ``BifurcationPoint.tangents``; ``side`` (±1) is the direction along it;
    ``bifurcating`` is False for the branch the point was found on (when that is known).
    """

    x: np.ndarray
    parameter: float
    tangent: np.ndarray
    branch: int
    side: int
    bifurcating: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", _frozen(self.x))
        object.__setattr__(self, "tangent", _frozen(self.tangent))


@dataclass(frozen=True)
class Line:
    """A traced line in the (λ1, λ2) plane.

    ``points`` run from ``ends[0]`` to ``ends[1]``; ``states[i]`` holds the state(s) at
    ``points[i]``: one row for fold, stability-loss, bifurcation and event lines, two rows (the
    coexisting states A and B) for a first-order line. ``name`` is the event's name for event lines.
    ``bifurcation`` classifies a stability-loss or bifurcation line at its seed (e.g. a pitchfork).
    ``formulation`` names the augmented system that traced it: "fold", "coexistence",
    "branch_point" or "zero" (F = 0 with one scalar condition).
    """

    kind: LineKind
    branches: tuple[str, ...]
    points: tuple[tuple[float, float], ...]
    states: tuple[np.ndarray, ...]
    ends: tuple[LineEnd, LineEnd]
    message: str = ""
    name: str = ""
    bifurcation: BifurcationPoint | None = None
    formulation: Formulation = "zero"

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", SpecialKind(self.kind))
        object.__setattr__(self, "states", tuple(_frozen(np.atleast_2d(s)) for s in self.states))
        if len(self.states) != len(self.points):
            raise ValueError("one state block per point")

    def array(self) -> np.ndarray:
        """The points as an (N, 2) array."""
        return np.asarray(self.points, dtype=float).reshape(-1, 2)


@dataclass(frozen=True)
class CriticalPoint:
    """A critical point where lines end (a cusp of folds, the end of a first-order line)."""

    point: tuple[float, float]
    state: np.ndarray
    lines: tuple[int, ...]
    precision: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "state", _frozen(self.state))


@dataclass(frozen=True)
class Unexplained:
    """A crossing seen by a scan that no traced line passes through, even after tracing from it.

    ``kind`` is the kind of special point, ``point`` (λ1, λ2) where the scan saw it, ``scan`` which
    scan saw it (e.g. "alpha = 1 (edge)"), ``detail`` why no line explains it.
    """

    kind: LineKind
    point: tuple[float, float]
    branches: tuple[str, ...]
    scan: str
    detail: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", SpecialKind(self.kind))


@dataclass(frozen=True)
class BoundaryResult:
    """Every line found by ``trace_boundaries``; ``reason`` says why ``lines`` is empty when it is.

    ``scans`` are the λ1 values scanned along λ2 (the λ1 edges included), ``edges`` the λ2 values
    scanned along λ1 (the λ2 edges). ``unexplained`` lists the crossings no line explains and
    ``warnings`` says in words what may be missing (those crossings, lines that stop inside the box).
    """

    lines: tuple[Line, ...]
    critical_points: tuple[CriticalPoint, ...]
    reason: str = ""
    scans: tuple[float, ...] = field(default_factory=tuple)
    edges: tuple[float, ...] = field(default_factory=tuple)
    unexplained: tuple[Unexplained, ...] = field(default_factory=tuple)
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def of_kind(self, kind: LineKind) -> tuple[Line, ...]:
        return tuple(line for line in self.lines if line.kind == kind)
