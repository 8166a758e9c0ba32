"""Solution curves of a one-parameter problem F(x, p) = 0, traced with their special points.

A curve is followed by pseudo-arclength continuation in z = (x, p) (``arclength``), with
monitors whose sign changes are located along the arclength:

* ``fold``: the tangent's p-component (a turning point in p),
* ``singular``: sign(det F_x)|det F_x|^(1/n) (every simple singular point: folds and branch points),
* ``margin``: the problem's stability margin, when it has one,
* ``event:<name>``: each named event indicator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.core.arclength import Box, Monitor, run, trace_two_way
from solvers.core.lines.bordered import singularity_indicator
from solvers.core.lines.derivatives import Model, model_of, safe_scalar
from solvers.core.lines.options import LineOptions
from solvers.core.lines.problem import OneParameterProblem
from solvers.core.newton import ROUND_OFF, newton


def _frozen(a: np.ndarray) -> np.ndarray:
    out = np.array(a, dtype=float)
    out.setflags(write=False)
    return out


class CurveSystem:
    """G(z) = F(x, p) in z = (x, p)."""

    def __init__(self, model: Model, x_scale: np.ndarray, p_width: float):
        self.model = model
        self.n = model.dim
        self.scale = np.concatenate([x_scale, [p_width]])
        self.lam_index = (self.n,)

    def residual(self, z: np.ndarray) -> np.ndarray:
        return self.model.Fz(z)

    def jacobian(self, z: np.ndarray) -> np.ndarray:
        return self.model.jac_z(z)

    def accept(self, z: np.ndarray) -> None:
        pass


@dataclass(frozen=True)
class CurveMark:
    """A located sign change of a monitor: between ``points[index]`` and ``points[index + 1]``."""

    monitor: str
    index: int
    z: np.ndarray
    tangent: np.ndarray
    refined: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "z", _frozen(self.z))
        object.__setattr__(self, "tangent", _frozen(self.tangent))


@dataclass(frozen=True)
class Curve1D:
    """One traced curve: ``z[i] = (x_i, p_i)``, unit scaled ``tangents``, ``margins`` (NaN when unknown)."""

    name: str
    z: np.ndarray
    tangents: np.ndarray
    margins: np.ndarray
    marks: tuple[CurveMark, ...]
    ends: tuple[str, str]

    def __post_init__(self) -> None:
        for f in ("z", "tangents", "margins"):
            object.__setattr__(self, f, _frozen(getattr(self, f)))

    @property
    def parameters(self) -> np.ndarray:
        return self.z[:, -1]

    @property
    def states(self) -> np.ndarray:
        return self.z[:, :-1]


def curve_monitors(problem: OneParameterProblem, model: Model) -> list[Monitor]:
    n = problem.dim
    out = [
        Monitor("fold", lambda z, t: float(t[n])),
        Monitor("singular", lambda z, t: singularity_indicator(model.jac_x(z[:n], z[n:]))),
    ]
    stability = problem.stability
    if stability is not None:
        out.append(Monitor("margin", lambda z, t: safe_scalar(stability, z[:n], float(z[n]))))
    for name, g in problem.events.items():
        out.append(Monitor(f"event:{name}", lambda z, t, g=g: safe_scalar(g, z[:n], float(z[n]))))
    return out


def solve_state(problem: OneParameterProblem, x0: np.ndarray, p: float, options: LineOptions) -> np.ndarray | None:
    """A solution of F(x, p) = 0 by damped Newton from x0 (None when it does not converge)."""
    model = model_of(problem, 1)
    lam = np.array([p])
    res = newton(lambda x: model.residual(x, lam), np.asarray(x0, dtype=float), tol=options.tolerance,
                 jacobian=lambda x: model.jac_x(x, lam), scale=problem.x_scale(), noise_floor=ROUND_OFF)
    return res.x.copy() if res.converged else None


def trace_branch(
    problem: OneParameterProblem,
    x: np.ndarray,
    p: float,
    p_range: tuple[float, float],
    options: LineOptions | None = None,
    *,
    name: str = "branch",
    tangent: np.ndarray | None = None,
    both_ways: bool = True,
) -> Curve1D:
    """The solution curve through (x, p), both ways (or along ``tangent`` only) until it leaves p_range."""
    opts = options or LineOptions()
    model = model_of(problem, 1)
    lo, hi = float(min(p_range)), float(max(p_range))
    system = CurveSystem(model, problem.x_scale(), hi - lo)
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
        two = trace_two_way(system, z0, t0, opts.limits(), box=box, monitors=monitors)
        points, tangents, values, located = two.points(), two.tangents(), two.values(), two.located()
        ends = (two.backward.end, two.forward.end)
    else:
        path = run(system, z0, t0, opts.limits(), box=box, monitors=monitors)
        points, tangents, values, located = path.z, path.tangents, path.values, path.located
        ends = ("start", path.end)
    names = [m.name for m in monitors]
    if "margin" in names:
        margins = np.array([v[names.index("margin")] for v in values])
    else:
        margins = np.full(len(points), np.nan)
    marks = tuple(CurveMark(m.name, m.index, m.z, m.tangent, m.refined) for m in located)
    return Curve1D(name, np.array(points), np.array(tangents), margins, marks, ends)
