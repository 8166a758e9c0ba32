"""The one object a theory hands to the engine: a parametrised system F(x; p) = 0.

The engine knows no physics. A theory describes its saddle-point equations as a residual on a
flat vector of order parameters ``x`` at a scalar control parameter ``p`` (the value of the
swept field; for a single solve, the spec's own value), plus optional structure the engine can
exploit: a fixed-point map for Picard/Anderson, an analytic Jacobian for Newton, a free entropy
to rank branches, a stability margin, names for the solutions, and an exhaustive root search
where the theory can afford one (e.g. a 1-D scan).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

Vector = np.ndarray
Residual = Callable[[Vector, float], Vector]
Scalar = Callable[[Vector, float], float]


@dataclass(frozen=True)
class Problem:
    """F(x; p) = 0 with the structure the engine may use.

    Attributes:
        residual: F(x, p). A zero is a solution. For a fixed-point theory G, set
            ``residual = G(x) - x`` (or leave it None and give ``fixed_point``).
        dim: length of x.
        starts: p -> named starting points ("uninformative", "informative", ...).
        fixed_point: G(x, p), enables ``picard``/``anderson``; its residual is G(x) - x.
        jacobian: dF/dx (dim x dim); finite differences are used when absent.
        free_entropy: larger is preferred; the equilibrium is the stable branch maximising it.
            Theories with an action S give ``-S``.
        stability: a margin, > 0 stable, < 0 unstable, smooth in p so that a sign change can be
            bisected. When absent the engine derives one from ``kind``.
        kind: "gradient" when F is the gradient of an action to be minimised (stable = positive
            definite Jacobian); "fixed_point" when stability means a contracting map;
            "saddle" when the theory must supply ``stability`` itself (else: unknown).
        label: names a solution (e.g. "center", "aligned"); default: the start it came from.
        enumerate: p -> list of (name, x) of *all* solutions, for theories that can afford an
            exhaustive search; the engine then uses it instead of (and in addition to) starts.
        project: maps an iterate back into the domain (e.g. clips a variance to > 0).
        canonical: maps a solution to the representative of its symmetry class (e.g. rho -> |rho|
            for an even potential); used to merge mirror images and to report solutions.
        scale: typical magnitude of each component, for duplicate merging.
        names: names of the components of x (for diagnostics).
    """

    residual: Residual | None
    dim: int
    starts: Callable[[float], Mapping[str, Vector]]
    fixed_point: Residual | None = None
    jacobian: Callable[[Vector, float], np.ndarray] | None = None
    free_entropy: Scalar | None = None
    stability: Scalar | None = None
    kind: Literal["gradient", "fixed_point", "saddle"] = "fixed_point"
    label: Callable[[Vector, float, str], str] | None = None
    enumerate: Callable[[float], Sequence[tuple[str, Vector]]] | None = None
    project: Callable[[Vector], Vector] | None = None
    canonical: Callable[[Vector], Vector] | None = None
    scale: Vector | None = None
    names: Sequence[str] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.residual is None and self.fixed_point is None:
            raise ValueError("Problem needs a residual or a fixed_point map")

    def F(self, x: Vector, p: float) -> Vector:
        """The residual, derived from the fixed-point map when only that was given."""
        if self.residual is not None:
            return np.asarray(self.residual(x, p), dtype=float)
        assert self.fixed_point is not None
        return np.asarray(self.fixed_point(x, p), dtype=float) - x

    def name_of(self, x: Vector, p: float, start: str) -> str:
        return self.label(x, p, start) if self.label is not None else start
