"""Special points along a one-parameter family of solutions, as typed records.

``kind`` says what happened:

- ``fold``: a branch turns back in the parameter (two branches merge and vanish) — a spinodal;
- ``stability_loss``: a branch's stability margin changes sign away from any fold — a spinodal;
- ``bifurcation``: a stability loss where another branch splits off (a simple branch point), with
  its type in ``bifurcation`` (a :class:`BifurcationPoint`: pitchfork or transcritical, super- or
  subcritical, the kernel and the normal-form coefficients);
- ``first_order``: the free entropies of two stable branches cross;
- ``event``: a zero of one of the theory's event indicators (a named scalar function of the state,
  e.g. a phase boundary that no fold or crossing reveals); ``event`` names it and ``transition``
  says how the theory classifies it.

The same kinds name the lines of a two-parameter problem (``solvers.core.lines``): a fold line is
a line of spinodals, a ``bifurcation`` line a line of branch points.

Every special point says how precisely it is known: ``refined_to`` is the tolerance it was refined
to, or None when it is only bracketed between two computed points; ``uncertainty`` bounds its
distance in the parameter from the true point — for a refined point the final bracket of its root
finder (the larger distance from the point to either end), else the half-width of the bracket
between the computed points.

An event that the theory classifies as a first-order transition is recorded as ``first_order``
(its ``event`` names it); other events keep the kind ``event``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

import numpy as np

Transition = Literal["first_order", "spinodal"]
BifurcationType = Literal["pitchfork", "transcritical"]
Criticality = Literal["supercritical", "subcritical"]


class SpecialKind(StrEnum):
    FOLD = "fold"
    STABILITY_LOSS = "stability_loss"
    BIFURCATION = "bifurcation"
    FIRST_ORDER = "first_order"
    EVENT = "event"


#: How each kind is classified as a phase transition (the HTTP contract's ``kind``).
TRANSITION_OF: Mapping[SpecialKind, Transition] = {
    SpecialKind.FOLD: "spinodal",
    SpecialKind.STABILITY_LOSS: "spinodal",
    SpecialKind.BIFURCATION: "spinodal",
    SpecialKind.FIRST_ORDER: "first_order",
}

BoundaryKind = Literal["first_order", "spinodal", "stability_loss", "event"]

#: How each kind of line is reported by a boundary job (the HTTP contract's ``lines[].kind``): a fold line
#: is a spinodal, a line of branch points is where the symmetric branch loses stability.
BOUNDARY_OF: Mapping[SpecialKind, BoundaryKind] = {
    SpecialKind.FOLD: "spinodal",
    SpecialKind.STABILITY_LOSS: "stability_loss",
    SpecialKind.BIFURCATION: "stability_loss",
    SpecialKind.FIRST_ORDER: "first_order",
    SpecialKind.EVENT: "event",
}


def _frozen(a: Any) -> np.ndarray:
    out = np.array(a, dtype=float)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class NormalForm:
    """Coefficients of the reduced bifurcation equation g(ξ, μ) = 0 at a simple zero eigenvalue.

    With x = x0 + ξ v + ..., p = p0 + μ, v the unit right null vector and w the left one with ⟨w, v⟩ = 1:

        g(ξ, μ) = a ξ²/2 + b11 ξ μ + b20 μ²/2 + c ξ³/6 + ...

    a = ⟨w, F_xx[v,v]⟩, b11 = ⟨w, F_xp v + F_xx[v,q]⟩, b20 = ⟨w, F_pp + 2 F_xp q + F_xx[q,q]⟩,
    c = ⟨w, F_xxx[v,v,v] + 3 F_xx[v, y2]⟩, where F_x q = −F_p and F_x y2 = −F_xx[v,v] (both solved
    on the complement of v, the right-hand sides projected on the range of F_x).
    """

    a: float
    b11: float
    b20: float
    c: float


@dataclass(frozen=True)
class BifurcationPoint:
    """A simple branch point (pitchfork or transcritical) of a one-parameter problem.

    ``kernel`` is (v, w): the unit right null vector and the left null vector with ⟨w, v⟩ = 1.
    ``criticality`` (pitchforks) is None when the problem gives no stability margin to tell.
    ``tangents`` are the unit directions in (x, p) of the branches through the point (two);
    ``found_on`` indexes the branch the point was found on, when that is known.
    """

    type: BifurcationType
    parameter: float
    x: np.ndarray
    kernel: tuple[np.ndarray, np.ndarray]
    coefficients: NormalForm
    criticality: Criticality | None = None
    tangents: tuple[np.ndarray, ...] = ()
    found_on: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", _frozen(self.x))
        object.__setattr__(self, "kernel", tuple(_frozen(k) for k in self.kernel))
        object.__setattr__(self, "tangents", tuple(_frozen(t) for t in self.tangents))

    def describe(self) -> str:
        """E.g. "supercritical pitchfork"."""
        return f"{self.criticality} {self.type}" if self.criticality else self.type


@dataclass(frozen=True)
class SpecialPoint:
    kind: SpecialKind
    parameter: float
    branches: tuple[str, ...]
    refined_to: float | None = None
    uncertainty: float = 0.0
    detail: str = ""
    #: For ``event``: the event's name and how the theory classifies it.
    event: str | None = None
    event_transition: Transition | None = None
    #: The state at the point, where the engine solved for it (None when only bracketed).
    x: np.ndarray | None = None
    #: What the theory reports about the state at the point (``Problem.point_state``).
    state: Mapping[str, Any] = field(default_factory=dict)
    #: For ``bifurcation``: the branch point's type, kernel and normal form (None when it could not be computed).
    bifurcation: BifurcationPoint | None = None

    @property
    def refined(self) -> bool:
        return self.refined_to is not None

    @property
    def transition(self) -> Transition:
        if self.kind is SpecialKind.EVENT:
            return self.event_transition or "spinodal"
        return TRANSITION_OF[self.kind]

    def replace(self, **changes: Any) -> SpecialPoint:
        return dataclasses.replace(self, **changes)

    def same_as(self, other: SpecialPoint, rel: float = 1e-7) -> bool:
        return (
            self.kind is other.kind
            and self.event == other.event
            and sorted(self.branches) == sorted(other.branches)
            and abs(self.parameter - other.parameter) <= rel * max(1.0, abs(self.parameter))
        )


#: Two records of one kind and branches this close (relative) are one point. A free-entropy crossing refined from
#: different pieces of the same two branches lands up to a few 1e-7 apart where the free entropies cross at a shallow
#: angle (their difference is known only to the solves' tolerance), though each bracket is far narrower.
SAME_POINT_RTOL = 1e-6


def dedupe(points: list[SpecialPoint]) -> tuple[SpecialPoint, ...]:
    """Sorted by parameter, one record per (kind, branches, location); a refined record beats a bracket."""
    out: list[SpecialPoint] = []
    for sp in sorted(points, key=lambda s: (s.parameter, not s.refined)):
        if any(sp.same_as(u, rel=SAME_POINT_RTOL) for u in out):
            continue
        out.append(sp)
    return tuple(out)
