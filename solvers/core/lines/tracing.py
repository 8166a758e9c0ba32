"""Shared pieces of the line tracers: the parameter box, seeds' tangents, a line's ends and assembly (``Tracer``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from solvers.core.arclength import Box, Monitor, Path, TwoWay, trace_two_way
from solvers.core.corrector import Limits, System, initial_tangent
from solvers.core.curve import Curve, CurvePoint, End, EndKind, Formulation
from solvers.core.newton import ROUND_OFF, newton
from solvers.core.options import LineOptions
from solvers.core.problem import Problem
from solvers.core.special_points import BifurcationPoint, SpecialKind


def parameter_box(
    problem: Problem, lam1_range: tuple[float, float], lam2_range: tuple[float, float]
) -> Box:
    """The tracing box: the given ranges cut to the problem's bounds; it must be finite."""
    lo = np.array([max(min(lam1_range), problem.bounds[0][0]), max(min(lam2_range), problem.bounds[1][0])])
    hi = np.array([min(max(lam1_range), problem.bounds[0][1]), min(max(lam2_range), problem.bounds[1][1])])
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi > lo)):
        raise ValueError("the parameter box must be finite and non-empty")
    return Box(lo, hi)


def line_limits(options: LineOptions) -> Limits:
    """What the arclength iterator reads: the options' steps, their fixed residual tolerance, their point cap."""
    tolerance = options.tolerance
    return Limits(options, lambda z: tolerance, options.max_points)


def seed_tangent(system: System, z0: np.ndarray) -> np.ndarray:
    """Unit tangent at the seed (scaled coordinates), oriented towards increasing λ1."""
    J = system.jacobian(z0) * np.asarray(system.scale)[None, :]
    if not np.all(np.isfinite(J)):
        raise np.linalg.LinAlgError("the augmented Jacobian is not finite at the seed")
    t = initial_tangent(J)
    i1 = system.lam_index[0]
    lead = t[i1] if abs(t[i1]) > 1e-12 else t[system.lam_index[1]]
    return t if lead >= 0 else -t


def polish_seed(system: System, z0: np.ndarray, options: LineOptions, fix: int) -> np.ndarray | None:
    """The seed solved to tolerance with z[fix] held at its value (None when it does not converge)."""
    S = np.asarray(system.scale, dtype=float)
    value = float(z0[fix])

    def fun(u: np.ndarray) -> np.ndarray:
        z = u * S
        return np.concatenate([system.residual(z), [(z[fix] - value) / S[fix]]])

    def jac(u: np.ndarray) -> np.ndarray:
        z = u * S
        row = np.zeros(z.size)
        row[fix] = 1.0
        return np.vstack([system.jacobian(z) * S[None, :], row])

    res = newton(fun, z0 / S, tol=options.tolerance, jacobian=jac, noise_floor=ROUND_OFF)
    return res.x * S if res.converged else None


def solve_on(system: System, guess: np.ndarray, axis: int, value: float, options: LineOptions) -> np.ndarray | None:
    """The point of the system's curve with z[system.lam_index[axis]] = value, from a nearby guess."""
    idx = system.lam_index[axis]
    z0 = np.array(guess, dtype=float)
    z0[idx] = value
    return polish_seed(system, z0, options, idx)


def run_two_way(
    system: System, z0: np.ndarray, options: LineOptions, box: Box, monitors: Sequence[Monitor],
    stop: Callable[[np.ndarray], str | None] | None = None,
) -> TwoWay:
    limits = line_limits(options)
    return trace_two_way(system, z0, seed_tangent(system, z0), limits, box=box, monitors=monitors, stop=stop)


class LineSystem(System, Protocol):
    """An augmented system of a line: ``params`` and ``states`` read (λ1, λ2) and the state(s) off a point z."""

    def params(self, z: np.ndarray) -> tuple[float, float]: ...

    def states(self, z: np.ndarray) -> np.ndarray: ...


class LineCoordinates:
    """Where an augmented system keeps the parameters (at ``lam_index``) and the state (the first ``n`` entries) in
    its points z: the ``params`` and ``states`` of a :class:`LineSystem` (a system of two states reads its own)."""

    n: int
    lam_index: tuple[int, int]

    def params(self, z: np.ndarray) -> tuple[float, float]:
        i, j = self.lam_index
        return float(z[i]), float(z[j])

    def states(self, z: np.ndarray) -> np.ndarray:
        return z[: self.n].copy()


@dataclass
class Traced:
    """A traced line and the augmented system it was traced in (the box tracer solves on it again to tell whether
    the line passes a crossing); ``beyond``: seeds of partner lines met on the way (fold points past a cusp)."""

    line: Curve
    system: LineSystem
    beyond: list[np.ndarray] = field(default_factory=list)


@dataclass(frozen=True)
class Tracer:
    """What every line traced from one seed shares (its problem, system, kind, branches and formulation): it makes
    the ends of the line's two paths and assembles the line, a ``Curve`` through the system's points."""

    problem: Problem
    system: LineSystem
    kind: SpecialKind
    branches: Sequence[str]
    formulation: Formulation
    name: str = ""
    bifurcation: BifurcationPoint | None = None

    def end(self, path: Path, kind: EndKind | None = None, detail: str | None = None) -> End:
        """The end at a path's last point: ``kind`` (default: the path's own stop reason), ``detail`` (default: the
        path's)."""
        z = path.z[-1]
        return End(kind or default_end(path.end), self.system.params(z), self.system.states(z),
                   path.detail if detail is None else detail, path.end_precision)

    def line(self, points: Sequence[np.ndarray], ends: tuple[End | None, End], message: str | None = None,
             beyond: Sequence[np.ndarray] = ()) -> Traced:
        """The line through ``points`` with the ends of its two paths (one, at its last point, when it is closed;
        default message: its point count and ends)."""
        params, states = self.system.params, self.system.states
        ends = both_ends(*ends)
        curve = Curve(self.name, tuple(CurvePoint(params(z), states(z)) for z in points), (), ends,
                      describe(ends, len(points)) if message is None else message, tuple(self.problem.parameters),
                      self.kind, tuple(self.branches), self.bifurcation, self.formulation)
        return Traced(curve, self.system, list(beyond))

    def lost(self, z_seed: np.ndarray, detail: str) -> Traced:
        """The line of a seed that does not converge: that one point, lost both ways."""
        end = End("lost", self.system.params(z_seed), self.system.states(z_seed), detail)
        return self.line([z_seed], (end, end), detail)


def both_ends(first: End | None, last: End) -> tuple[End | None, End]:
    """The ends of a curve traced both ways from a seed: a closed curve ends once, ``closed`` at its last point (its
    first is where it was seeded, not an end), as a sweep's closed curve does."""
    return (None, last) if last.kind == "closed" else (first, last)


def default_end(path_end: str) -> EndKind:
    """The end kind of a path's own stop reasons."""
    return {"domain": "domain", "lost": "lost", "max_points": "max_points", "closed": "closed"}.get(
        path_end, "lost"
    )  # type: ignore[return-value]


def lam_scale(box: Box) -> np.ndarray:
    return np.asarray(box.hi - box.lo, dtype=float)


def describe(ends: tuple[End | None, End | None], npoints: int) -> str:
    return f"{npoints} points; ends: " + ", ".join(f"{e.kind} at {_fmt(e.point)}" for e in ends if e is not None)


def _fmt(p: tuple[float, float]) -> str:
    return "(" + ", ".join(f"{v:.10g}" if math.isfinite(v) else str(v) for v in p) + ")"

