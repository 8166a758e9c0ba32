"""Branch points of a one-parameter sweep: which stability losses are bifurcations, and the branches that split off.

A stability loss found by the detector is a *simple branch point* when F_x is singular there and
F_p lies in its range (⟨w, F_p⟩ = 0): another solution branch crosses the one that loses
stability, as at a pitchfork (forced by a symmetry) or a transcritical point (an ever-present
solution). Where F_x stays regular (a margin that vanishes for another reason) the loss stays a
``stability_loss``; where F_p is not in the range it is a fold, which the continuation reports.

The classification and the first points of the bifurcating branches come from the
Lyapunov–Schmidt normal form of :mod:`solvers.core.lines.branch_switching`, which takes the sweep's own
problem (its stability margin ``Problem.margin``): one vocabulary (``SpecialKind.BIFURCATION`` with a
:class:`~solvers.core.special_points.BifurcationPoint`) for a sweep's point and a line of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from solvers.core.lines.branch_switching import (
    NEAR_RANGE,
    branch_off,
    classify_branch_point,
    jacobian_size,
    locate_branch_point,
    singular_defects,
)
from solvers.core.lines.derivatives import model_of
from solvers.core.options import LineOptions, SolverOptions
from solvers.core.problem import Problem
from solvers.core.special_points import BifurcationPoint, SpecialKind, SpecialPoint

#: σ_min(F_x) and ⟨ŵ, F_p⟩ (relative to the Jacobian's size) below which a stability loss is a branch point.
BRANCH_POINT_DEFECT = 1e-6


def _remembered(fn: Callable[[np.ndarray, float], np.ndarray]) -> Callable[[np.ndarray, float], np.ndarray]:
    """``fn`` evaluated once per point: the normal form's stencils meet the same points more than once."""
    seen: dict[tuple[bytes, float], np.ndarray] = {}

    def once(x: np.ndarray, p: float) -> np.ndarray:
        key = (np.asarray(x, dtype=float).tobytes(), float(p))
        hit = seen.get(key)
        if hit is None:
            hit = seen[key] = np.asarray(fn(x, p), dtype=float)
        return hit.copy()

    return once


def remembering(problem: Problem) -> Problem:
    """The problem with its residual and Jacobian evaluated once per point (for one classification, whose
    finite-difference stencils overlap; not for continuation, which never returns to a point)."""
    jac = problem.jacobian
    return replace(problem, residual=_remembered(problem.F), jacobian=None if jac is None else _remembered(jac))


def line_options(options: SolverOptions) -> LineOptions:
    """The sweep's own step settings (``options.continuation``) as line options, with the sweep's residual
    tolerance for the corrector: branch switching works in the steps of the curves it starts."""
    steps = options.continuation.model_dump(exclude={"max_steps"})
    return LineOptions(**steps, max_points=options.continuation.max_steps + 1,
                       tolerance=float(min(max(options.tol_abs, 1e-14), 1e-3)))


def classify_loss(
    problem: Problem,
    sp: SpecialPoint,
    around: Sequence[tuple[float, np.ndarray]],
    width: float,
    options: SolverOptions,
) -> SpecialPoint:
    """The stability loss ``sp`` as a typed ``bifurcation`` when it is a simple branch point, else unchanged.

    ``around`` are two points (p, x) of the lost branch on either side of the loss: their chord tells
    the continued branch from the bifurcating one, and their Jacobians set the scale against which
    F_x counts as singular (at a transcritical point of x(x − p) the whole Jacobian vanishes at the
    point itself). ``width`` is the sweep's range (the parameter's scale).
    """
    if sp.x is None or not problem.looks_for(SpecialKind.BIFURCATION):
        return sp
    one = remembering(problem)
    model = model_of(one)
    x, p = np.asarray(sp.x, dtype=float), float(sp.parameter)
    xs = one.x_scale()
    S = np.concatenate([xs, [width]])
    zs = [np.concatenate([np.asarray(xa, dtype=float), [pa]]) for pa, xa in around]
    ref = jacobian_size(model, [*zs, np.concatenate([x, [p]])], S)
    tangent = zs[-1] - zs[0] if len(zs) >= 2 else None
    singular, defect = singular_defects(model, x, np.array([p]), xs, S[-1:], ref)
    if singular > BRANCH_POINT_DEFECT or defect > NEAR_RANGE:
        return sp  # F_x regular, or F_p clearly outside its range: not a branch point
    opts = line_options(options)
    at = (x, p)
    if defect > BRANCH_POINT_DEFECT:
        # Close to a branch point, not on it to the margin's precision: the Moore system decides.
        located = locate_branch_point(one, x, p, opts, max_iter=15)
        if located is None:
            return sp
        if np.max(np.abs((np.concatenate([located[0], [located[1]]]) - np.concatenate([x, [p]])) / S)) > 1e-6:
            return sp
        at = located
    bp = classify_branch_point(one, at[0], at[1], opts, incoming=tangent)
    if bp is None:
        return sp
    lost = ", ".join(repr(b) for b in sp.branches)
    return sp.replace(
        kind=SpecialKind.BIFURCATION,
        bifurcation=bp,
        detail=f"{bp.describe()}: {lost} loses stability where another branch splits off",
    )


def bifurcating_starts(
    problem: Problem, sp: SpecialPoint, options: SolverOptions, width: float
) -> list[tuple[float, np.ndarray]]:
    """(p, x) of a first point on every branch that splits off at the bifurcation ``sp`` (both sides).

    Each lies within the sweep's largest step (``options.continuation.ds_max``, in the curves' coordinates
    (x, p / width), ``width`` the sweep's range) of the branch point. A point that the problem's ``project``
    moves lies outside the theory's domain (e.g. a negative overlap on the mirror side of a pitchfork) and is
    dropped.
    """
    bp = sp.bifurcation
    if bp is None:
        return []
    out: list[tuple[float, np.ndarray]] = []
    step_scale = np.concatenate([np.ones(bp.x.size), [width]])
    for start in branch_off(problem, bp, line_options(options), bifurcating_only=True, step_scale=step_scale):
        if not start.bifurcating:
            continue
        x = np.array(start.x, dtype=float)
        if inside_domain(problem, x):
            out.append((float(start.parameter), x))
    return out


def bifurcating_tangents(bp: BifurcationPoint) -> list[np.ndarray]:
    """Unit directions in (x, p) of the branches that split off at ``bp`` (each one way; the other is its negative)."""
    n = bp.x.size
    if bp.type == "pitchfork":
        return [t for t in bp.tangents if abs(float(t[n])) < 1e-12][:1]
    return [t for i, t in enumerate(bp.tangents) if i != bp.found_on]


def inside_domain(problem: Problem, x: np.ndarray) -> bool:
    """``project`` leaves x where it is."""
    if problem.project is None:
        return True
    return bool(np.allclose(np.asarray(problem.project(np.array(x, dtype=float)), dtype=float), x, rtol=0.0,
                            atol=1e-14))
