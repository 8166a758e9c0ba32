"""Solution curves of a problem in one parameter, F(x, p) = 0, traced with their special points.

A curve is followed by pseudo-arclength continuation in z = (x, p) (``arclength``), with
monitors whose sign changes are located along the arclength:

* ``fold``: the tangent's p-component (a turning point in p),
* ``singular``: sign(det F_x)|det F_x|^(1/n) (every simple singular point: folds and branch points),
* ``margin``: the problem's stability margin, when it can tell one (``Problem.margin``),
* ``event:<name>``: each named event indicator.
"""

from __future__ import annotations

import numpy as np

from solvers.core.arclength import Box, Monitor, Path, run, trace_two_way
from solvers.core.continuation import ProblemSystem
from solvers.core.curve import Curve, CurvePoint, End, Mark
from solvers.core.lines.bordered import singularity_indicator
from solvers.core.lines.derivatives import Model, model_of, safe_margin, safe_scalar
from solvers.core.lines.tracing import both_ends, default_end, line_limits
from solvers.core.newton import ROUND_OFF, newton
from solvers.core.options import LineOptions
from solvers.core.problem import Problem


def curve_monitors(problem: Problem, model: Model) -> list[Monitor]:
    n = problem.dim
    out = [
        Monitor("fold", lambda z, t: float(t[n])),
        Monitor("singular", lambda z, t: singularity_indicator(model.jac_x(z[:n], z[n:]))),
    ]
    if problem.has_margin:
        out.append(Monitor("margin", lambda z, t: safe_margin(problem, z[:n], float(z[n]))))
    for e in problem.events:
        out.append(Monitor(f"event:{e.name}", lambda z, t, g=e.indicator: safe_scalar(g, z[:n], float(z[n]))))
    return out


def solve_state(problem: Problem, x0: np.ndarray, p: float, options: LineOptions) -> np.ndarray | None:
    """A solution of F(x, p) = 0 by damped Newton from x0 (None when it does not converge)."""
    model = model_of(problem)
    lam = np.array([p])
    res = newton(lambda x: model.residual(x, lam), np.asarray(x0, dtype=float), tol=options.tolerance,
                 jacobian=lambda x: model.jac_x(x, lam), scale=problem.x_scale(), noise_floor=ROUND_OFF)
    return res.x.copy() if res.converged else None


def trace_branch(
    problem: Problem,
    x: np.ndarray,
    p: float,
    p_range: tuple[float, float],
    options: LineOptions | None = None,
    *,
    name: str = "branch",
    tangent: np.ndarray | None = None,
    both_ways: bool = True,
) -> Curve:
    """The solution curve through (x, p), both ways (or along ``tangent`` only) until it leaves p_range.

    Its marks are the located sign changes of :func:`curve_monitors`; each direction ends where it leaves p_range
    (``domain``), where the corrector fails at the smallest step (``lost``), where it closes (once, at its last
    point), or at the step cap (a one-way curve has no end at its start: None).
    """
    opts = options or LineOptions()
    model = model_of(problem)
    lo, hi = float(min(p_range)), float(max(p_range))
    system = ProblemSystem(problem, lo, hi, problem.x_scale())
    z0 = np.concatenate([np.asarray(x, dtype=float), [float(p)]])
    monitors = curve_monitors(problem, model)
    box = Box(np.array([lo]), np.array([hi]))
    S = system.scale
    if tangent is not None:
        t0 = np.asarray(tangent, dtype=float) / S
    else:
        J = system.jacobian(z0) * S[None, :]
        t0 = np.linalg.svd(J)[2][-1]
        if t0[-1] < 0:
            t0 = -t0
    t0 = t0 / np.linalg.norm(t0)
    if both_ways:
        two = trace_two_way(system, z0, t0, line_limits(opts), box=box, monitors=monitors)
        points, tangents, values, located = two.points(), two.tangents(), two.values(), two.located()
        ends = both_ends(_end(two.backward), _end(two.forward))
    else:
        path = run(system, z0, t0, line_limits(opts), box=box, monitors=monitors)
        points, tangents, values, located = path.z, path.tangents, path.values, path.located
        ends = (None, _end(path))
    names = [m.name for m in monitors]
    at = names.index("margin") if "margin" in names else None
    n = problem.dim
    rows = tuple(CurvePoint((float(z[n]),), z[:n], t, _margin(v, at)) for z, t, v in zip(points, tangents, values,
                                                                                           strict=True))
    marks = tuple(Mark(m.name, m.index, (float(m.z[n]),), m.z[:n], m.tangent, m.refined, m.uncertainty)
                  for m in located)
    return Curve(name, rows, marks, ends)


def _margin(values: np.ndarray, at: int | None) -> float | None:
    if at is None or not np.isfinite(values[at]):
        return None
    return float(values[at])


def _end(path: Path) -> End:
    """How one direction of a branch ends: ``domain`` where it leaves the parameter range."""
    z = path.z[-1]
    return End(default_end(path.end), (float(z[-1]),), z[:-1], path.detail, path.end_precision)


def branch_z(curve: Curve) -> np.ndarray:
    """A branch's points as rows z = (x, p)."""
    return np.array([np.concatenate([q.x, [q.p]]) for q in curve.points])
