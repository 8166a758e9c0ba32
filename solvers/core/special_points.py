"""Special points along a one-parameter family of solutions, as typed records.

``kind`` says what happened:

- ``fold``: a branch turns back in the parameter (two branches merge and vanish) — a spinodal;
- ``stability_loss``: a branch's stability margin changes sign away from any fold — a spinodal;
- ``bifurcation``: a stability loss where another branch splits off (a pitchfork or transcritical
  point), with the type in ``detail``;
- ``first_order``: the free entropies of two stable branches cross;
- ``event``: a zero of one of the theory's event indicators (a named scalar function of the state,
  e.g. a phase boundary that no fold or crossing reveals); ``event`` names it and ``transition``
  says how the theory classifies it.

Every special point says how precisely it is known: ``refined_to`` is the parameter tolerance it
was refined to, or None when it is only bracketed between two computed points (then
``uncertainty`` is the bracket's half-width).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

import numpy as np

Transition = Literal["first_order", "spinodal"]


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


def dedupe(points: list[SpecialPoint]) -> tuple[SpecialPoint, ...]:
    """Sorted by parameter, one record per (kind, branches, location); a refined record beats a bracket."""
    out: list[SpecialPoint] = []
    for sp in sorted(points, key=lambda s: (s.parameter, not s.refined)):
        if any(sp.same_as(u) for u in out):
            continue
        out.append(sp)
    return tuple(out)
