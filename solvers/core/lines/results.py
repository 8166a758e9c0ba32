"""Typed, immutable results of the line tracers and of branch switching; a line itself is a ``Curve``.

The kinds of line and the branch-point records are the engine's own (``SpecialKind``,
``BifurcationPoint``, ``NormalForm`` in :mod:`solvers.core.special_points`): a special point of a
one-parameter sweep and a line of such points speak one vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solvers.core.curve import Curve, frozen
from solvers.core.special_points import SpecialKind


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
        object.__setattr__(self, "x", frozen(self.x))
        object.__setattr__(self, "tangent", frozen(self.tangent))


@dataclass(frozen=True)
class CriticalPoint:
    """A critical point where lines end (a cusp of folds, the end of a first-order line)."""

    point: tuple[float, float]
    state: np.ndarray
    lines: tuple[int, ...]
    precision: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "state", frozen(self.state))


@dataclass(frozen=True)
class Unexplained:
    """A crossing seen by a scan that no traced line passes through, even after tracing from it.

    ``kind`` is the kind of special point, ``point`` (λ1, λ2) where the scan saw it, ``scan`` which
    scan saw it (e.g. "alpha = 1 (edge)"), ``detail`` why no line explains it.
    """

    kind: SpecialKind
    point: tuple[float, float]
    branches: tuple[str, ...]
    scan: str
    detail: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", SpecialKind(self.kind))


@dataclass(frozen=True)
class BoundaryResult:
    """Every line found by ``trace_boundaries``; ``reason`` says why ``lines`` is empty when it is.

    A traced line is the engine's one record of a curve, over the two parameters (λ1, λ2): ``points[i].point`` is
    (λ1, λ2) and ``states[i]`` the state(s) there (one row for fold, stability-loss, bifurcation and event lines, two
    for the coexisting states A and B of a first-order line); its ``name`` is the event's for an event line.

    ``scans`` are the λ1 values scanned along λ2 (the λ1 edges included), ``edges`` the λ2 values
    scanned along λ1 (the λ2 edges). ``unexplained`` lists the crossings no line explains and
    ``warnings`` says in words what may be missing (those crossings, lines that stop inside the box).
    """

    lines: tuple[Curve, ...]
    critical_points: tuple[CriticalPoint, ...]
    reason: str = ""
    scans: tuple[float, ...] = field(default_factory=tuple)
    edges: tuple[float, ...] = field(default_factory=tuple)
    unexplained: tuple[Unexplained, ...] = field(default_factory=tuple)
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def of_kind(self, kind: SpecialKind) -> tuple[Curve, ...]:
        return tuple(line for line in self.lines if line.kind == kind)
