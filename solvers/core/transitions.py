"""Special points found along a sweep: spinodals (folds, stability loss) and first-order points."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass
class Transition:
    """A special point of a sweep.

    ``kind`` is ``spinodal`` for a fold of a branch (where a branch is born or dies) or the loss
    of local stability of a branch, and ``first_order`` for a free-entropy crossing between two
    stable branches. ``refined`` says whether the location was refined to tolerance
    (``uncertainty`` gives the bracket half-width in the parameter otherwise).
    """

    kind: Literal["first_order", "spinodal"]
    parameter: float
    branches: list[str]
    detail: str = ""
    refined: bool = True
    uncertainty: float = 0.0
    state: dict[str, Any] = field(default_factory=dict)

    def payload(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "parameter": self.parameter,
            "branches": list(self.branches),
            "detail": self.detail,
            "refined": self.refined,
            "uncertainty": self.uncertainty,
            **({"state": self.state} if self.state else {}),
        }
