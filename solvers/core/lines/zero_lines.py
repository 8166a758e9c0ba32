"""Stability-loss and event lines: a zero of a scalar g(x, λ) on the solutions, continued in (λ1, λ2).

z = (x, λ1, λ2) and the equations F(x, λ) = 0, g(x, λ) = 0, with g the stability margin or a
named event indicator. The system is regular where F_x is (a stability margin that vanishes
while F_x stays regular, e.g. a contraction margin at an eigenvalue −1, or any event away from
folds). A line whose state reaches a fold (det F_x changes sign) ends there as ``spinodal``.
Margins that vanish *because* F_x is singular are folds (traced by ``fold``) or branch points
(traced by ``branch_point_line``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from solvers.core.arclength import Box, Monitor
from solvers.core.curve import Curve
from solvers.core.lines.bordered import singularity_indicator
from solvers.core.lines.derivatives import Model, model_of, safe_scalar, scalar_gradient
from solvers.core.lines.tracing import (
    LineCoordinates,
    Traced,
    Tracer,
    lam_scale,
    parameter_box,
    polish_seed,
    run_two_way,
)
from solvers.core.options import LineOptions
from solvers.core.problem import Problem
from solvers.core.special_points import BifurcationPoint, SpecialKind

Indicator = Callable[[np.ndarray, np.ndarray], float]


class ZeroSystem(LineCoordinates):
    """G = [F(x, λ); g(x, λ)] in z = (x, λ1, λ2)."""

    def __init__(self, model: Model, g: Indicator, x_scale: np.ndarray, lam_sc: np.ndarray):
        self.model = model
        self.g = g
        self.n = model.dim
        self.scale = np.concatenate([x_scale, lam_sc])
        self.lam_index = (self.n, self.n + 1)

    def _g(self, z: np.ndarray) -> float:
        return safe_scalar(self.g, z[: self.n], z[self.n :])

    def residual(self, z: np.ndarray) -> np.ndarray:
        return np.concatenate([self.model.residual(z[: self.n], z[self.n :]), [self._g(z)]])

    def jacobian(self, z: np.ndarray) -> np.ndarray:
        return np.vstack([self.model.jac_z(z), scalar_gradient(self._g, z)])

    def accept(self, z: np.ndarray) -> None:
        pass


def trace_zero(
    problem: Problem,
    kind: str,
    g: Indicator,
    x: np.ndarray,
    lam: Sequence[float],
    box: Box,
    options: LineOptions,
    branches: Sequence[str] = (),
    *,
    name: str = "",
    bifurcation: BifurcationPoint | None = None,
) -> Traced:
    model = model_of(problem)
    system = ZeroSystem(model, g, problem.x_scale(), lam_scale(box))
    tracer = Tracer(problem, system, kind, branches, "zero", name, bifurcation)
    z_seed = np.concatenate([np.asarray(x, dtype=float), np.asarray(lam, dtype=float)])
    z0 = polish_seed(system, z_seed, options, fix=system.n)
    if z0 is None:
        return tracer.lost(z_seed, "the seed does not converge")
    fold = Monitor("fold", lambda z, t: singularity_indicator(model.jac_x(z[: system.n], z[system.n :])), stop=True)
    both = run_two_way(system, z0, options, box, [fold])
    ends = [tracer.end(path, "spinodal", "; ".join(d for d in ("the state reaches a fold", path.detail) if d))
            if path.end == "fold" else tracer.end(path) for path in (both.backward, both.forward)]
    return tracer.line(both.points(), (ends[0], ends[1]))


def trace_event_line(
    problem: Problem,
    event: str,
    x: np.ndarray,
    lam: Sequence[float],
    lam1_range: tuple[float, float],
    lam2_range: tuple[float, float],
    options: LineOptions | None = None,
    *,
    branches: Sequence[str] = (),
) -> Curve:
    """The line where the named event indicator vanishes, through the zero (x, λ)."""
    opts = options or LineOptions()
    box = parameter_box(problem, lam1_range, lam2_range)
    g = problem.indicator(event)
    return trace_zero(problem, SpecialKind.EVENT, g, x, lam, box, opts, branches, name=event).line


def trace_stability_line(
    problem: Problem,
    x: np.ndarray,
    lam: Sequence[float],
    lam1_range: tuple[float, float],
    lam2_range: tuple[float, float],
    options: LineOptions | None = None,
    *,
    branches: Sequence[str] = (),
) -> Curve:
    """The line where the stability margin of a regular state vanishes (F_x regular there)."""
    if problem.stability is None:
        raise ValueError("a stability-loss line needs the problem's stability margin")
    opts = options or LineOptions()
    box = parameter_box(problem, lam1_range, lam2_range)
    return trace_zero(problem, SpecialKind.STABILITY_LOSS, problem.stability, x, lam, box, opts, branches).line
