"""Exact points of a traced line at requested parameter values.

A line's points lie where its continuation stepped; between them the polyline is only a chord
(off by up to ds²·curvature/8, ~1e-2 for a strongly curved line at the default steps). Here every
crossing of the line with λ_axis = value is solved by the line's own augmented system, from the
chord's interpolation, so each returned point is on the line to the corrector's tolerance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from solvers.core.curve import Curve, CurvePoint
from solvers.core.lines.branch_point_line import BranchPointSystem
from solvers.core.lines.coexistence import CoexistenceSystem
from solvers.core.lines.derivatives import model_of
from solvers.core.lines.fold import FoldSystem
from solvers.core.lines.tracing import lam_scale, parameter_box, solve_on
from solvers.core.lines.zero_lines import ZeroSystem
from solvers.core.options import LineOptions
from solvers.core.problem import Problem


def _system(problem: Problem, line: Curve, lam_sc: np.ndarray):
    model = model_of(problem)
    xs = problem.x_scale()
    x0, lam0 = np.asarray(line.states[0][0]), np.asarray(line.points[0].point, dtype=float)
    if line.formulation == "fold":
        return FoldSystem(model, x0, lam0, xs, lam_sc)
    if line.formulation == "coexistence":
        assert problem.free_entropy is not None
        return CoexistenceSystem(model, problem.free_entropy, xs, lam_sc)
    if line.formulation == "branch_point":
        return BranchPointSystem(model, x0, lam0, xs, lam_sc)
    g = problem.indicator(line.name) if line.kind == "event" else problem.stability
    if g is None:
        raise ValueError("the problem has no indicator for this line")
    return ZeroSystem(model, g, xs, lam_sc)


def _z(line: Curve, i: int) -> np.ndarray:
    lam = np.asarray(line.points[i].point, dtype=float)
    states = line.states[i]
    if line.formulation == "coexistence":
        return np.concatenate([states[0], states[1], lam])
    if line.formulation == "branch_point":
        return np.concatenate([states[0], lam, [0.0]])
    return np.concatenate([states[0], lam])


def resample_line(
    problem: Problem,
    line: Curve,
    values: Sequence[float],
    lam1_range: tuple[float, float],
    lam2_range: tuple[float, float],
    options: LineOptions | None = None,
    *,
    axis: int = 0,
) -> Curve:
    """The line's points at λ_axis = each value (every crossing, in the line's order).

    The box (lam1_range × lam2_range) must be the one the line was traced in: it sets the scaled
    coordinates. A crossing whose solve fails is left out (the message counts them).
    """
    opts = options or LineOptions()
    box = parameter_box(problem, lam1_range, lam2_range)
    system = _system(problem, line, lam_scale(box))
    pts = line.array()
    found: list[tuple[int, float, np.ndarray]] = []
    failed = 0
    for v in values:
        for i in range(len(pts) - 1):
            a, b = pts[i, axis], pts[i + 1, axis]
            if not (min(a, b) <= v <= max(a, b)) or a == b:
                continue
            if v == b and i + 2 < len(pts):
                continue  # a vertex: taken by the next segment
            w = (v - a) / (b - a)
            guess = (1 - w) * _z(line, i) + w * _z(line, i + 1)
            if hasattr(system, "reset"):
                system.reset(guess)
            z = solve_on(system, guess, axis, float(v), opts)
            if z is None:
                failed += 1
                continue
            found.append((i, w, z))
    found.sort(key=lambda f: (f[0], f[1]))
    zs = [z for _, _, z in found]
    message = f"{len(zs)} points at {('λ1', 'λ2')[axis]} = requested values" + (f"; {failed} failed" if failed else "")
    return replace(line, points=tuple(CurvePoint(system.params(z), system.states(z)) for z in zs), message=message)
