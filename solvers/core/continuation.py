"""Pseudo-arclength continuation of one solution curve of F(x; p) = 0 in one parameter.

The problem is the augmented system G(x, p) = F(x, p) with p free (:class:`ProblemSystem`), run by the one
arclength iterator (:mod:`solvers.core.arclength`) in scaled coordinates (x, p / (p_hi - p_lo)), so that step
sizes mean the same thing for every theory. Its bordered Jacobian [[F_x, F_p], [τᵀ]] stays regular at folds,
where F_x alone is singular. A fold is a sign change of the tangent's p-component, a monitor that the iterator
locates along the arclength (each evaluation a corrector solve), which places the fold parameter to round-off
because p is quadratic in s there. The curve ends at its first point past the sweep's range (by 10⁻³ of it), where the
corrector fails at the smallest step (a domain boundary or a solver failure, said which), on the theory's
singular edge, where it closes on itself, or at the step cap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from solvers.core import arclength
from solvers.core.arclength import Box, Monitor
from solvers.core.corrector import Limits, initial_tangent, scaled_jacobian, tangent
from solvers.core.curve import Curve, CurvePoint, End, Mark
from solvers.core.errors import MAYBE_NUMERICAL, is_numerical, or_none
from solvers.core.newton import fd_jacobian
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem

OnStep = Callable[["CurvePoint"], None]
#: How far past the sweep's range (as a fraction of it) a curve is followed before it ends on the box's edge.
RANGE_MARGIN = 1e-3


class ProblemSystem:
    """G(z) = F(x, p) in z = (x, p): a one-parameter problem as an augmented system of the arclength iterator.

    A residual the theory cannot evaluate (a numerical error) is NaN, which the corrector rejects; its message
    is kept in ``failure``. F_p is a difference in p: forward from the last residual evaluated when that was
    at the same point (the corrector's iterate, whose Jacobian then costs one more residual, not two), central
    otherwise. The O(h) error of the forward form moves neither the curve (the corrector drives F itself to
    zero) nor its folds (τ_p = 0 exactly where F_x is singular). The state is scaled by ``x_scale`` (default: ones,
    as a sweep's curves are) and p by the range's width.
    """

    def __init__(self, problem: Problem, p_lo: float, p_hi: float, x_scale: np.ndarray | None = None):
        self.problem = problem
        self.n = problem.dim
        self.p_lo = p_lo
        self.width = (p_hi - p_lo) or 1.0
        self.scale = np.concatenate([np.ones(self.n) if x_scale is None else x_scale, [self.width]])
        self.lam_index = (self.n,)
        #: the last residual evaluated, keyed by (x bytes, p)
        self._last: tuple[bytes, float, np.ndarray] | None = None
        #: the numerical error of the last residual that could not be evaluated ("" when it was a NaN)
        self.failure = ""
        #: where it was: the point outside the equations' domain whose quantity the theory can name
        self.failed_at: tuple[np.ndarray, float] | None = None

    def F(self, x: np.ndarray, p: float) -> np.ndarray:
        known = self._known(x, p)
        if known is not None:
            return known.copy()
        try:
            f = np.asarray(self.problem.F(x, p), dtype=float)
        except MAYBE_NUMERICAL as exc:
            if not is_numerical(exc):
                raise
            self.failure = f"{type(exc).__name__}: {exc}"
            self.failed_at = (np.array(x, dtype=float), p)
            f = np.full(np.asarray(x).size, np.nan)
        self._last = (np.asarray(x, dtype=float).tobytes(), p, f.copy())
        return f

    def _known(self, x: np.ndarray, p: float) -> np.ndarray | None:
        last = self._last
        if last is not None and last[1] == p and last[0] == np.asarray(x, dtype=float).tobytes():
            return last[2]
        return None

    def residual(self, z: np.ndarray) -> np.ndarray:
        return self.F(z[: self.n], float(z[self.n]))

    def jacobian(self, z: np.ndarray) -> np.ndarray:
        x, p = np.asarray(z[: self.n], dtype=float), float(z[self.n])
        f0 = self._known(x, p)  # read first: a difference Jacobian in x replaces the cached residual
        if self.problem.jacobian is not None:
            jx = np.asarray(self.problem.jacobian(x, p), dtype=float)
        else:
            jx = fd_jacobian(lambda y: self.F(y, p), x)
        h = 1e-6 * self.width * max(1.0, abs((p - self.p_lo) / self.width))
        if f0 is not None and np.all(np.isfinite(f0)):
            jp = (self.F(x, p + h) - f0) / h
        else:
            jp = (self.F(x, p + h) - self.F(x, p - h)) / (2 * h)
        return np.column_stack([jx, jp])

    def accept(self, z: np.ndarray) -> None:
        pass

    def project(self, z: np.ndarray) -> np.ndarray:
        if self.problem.project is None:
            return z
        out = np.array(z, dtype=float)
        out[: self.n] = self.problem.project(out[: self.n])
        return out

    def on_edge(self, z: np.ndarray) -> str | None:
        return "edge" if self.problem.on_edge(z[: self.n], float(z[self.n])) else None


def curve_limits(options: SolverOptions) -> Limits:
    """The iterator's limits for a sweep's curves: its steps, the solves' residual tolerance, its step cap."""
    copt = options.continuation
    return Limits(copt, lambda z: options.tolerance(float(np.max(np.abs(z[:-1]))) if z.size > 1 else 0.0),
                  copt.max_steps + 1, secant=True, exact=True)


def curve_point(system: ProblemSystem, z: np.ndarray, tau: np.ndarray) -> CurvePoint:
    n = system.n
    x, p = np.array(z[:n], dtype=float), float(z[n])
    problem = system.problem
    fe = float(problem.free_entropy(x, p)) if problem.free_entropy is not None else None
    return CurvePoint((p,), x, np.array(tau, dtype=float), or_none(problem.margin, x, p), fe)


def refine_between(
    system: ProblemSystem, options: SolverOptions, a: CurvePoint, b: CurvePoint,
    g: Callable[[np.ndarray, np.ndarray], float], g_a: float,
) -> tuple[float, np.ndarray, float] | None:
    """Root of ``g(z, tangent)`` on the curve between its points ``a`` and ``b``: (p, x, uncertainty in p).

    Located by the iterator's :func:`~solvers.core.arclength.locate` from ``a``, with ``g`` evaluated afresh at
    ``b``'s arclength (the points of a curve's table need not be consecutive steps).
    """
    S = system.scale
    u_a = np.concatenate([a.x, [a.p]]) / S
    u_b = np.concatenate([b.x, [b.p]]) / S
    J_a = scaled_jacobian(system, u_a)
    if not np.all(np.isfinite(J_a)):
        return None
    found = arclength.locate(system, curve_limits(options), u_a, a.tangent, J_a, u_b, g, g_a, exact=True)
    if found is None:
        return None
    z = found.u * S
    return float(z[system.n]), z[: system.n].copy(), found.uncertainty


def trace_curve(
    problem: Problem,
    p0: float,
    x0: np.ndarray,
    p_lo: float,
    p_hi: float,
    options: SolverOptions,
    *,
    name: str = "branch",
    on_step: OnStep | None = None,
) -> Curve:
    """Follow the solution through (p0, x0) in both directions until it leaves [p_lo, p_hi]; a closed curve once
    round, from (p0, x0) back to it."""
    system = ProblemSystem(problem, p_lo, p_hi)
    limits = curve_limits(options)
    n = system.n
    margin = RANGE_MARGIN * system.width
    box = Box(np.array([p_lo - margin]), np.array([p_hi + margin]), exact=False)
    fold = Monitor("fold", lambda z, t: float(t[n]))
    z0 = np.concatenate([np.asarray(x0, dtype=float), [float(p0)]])
    seed_dir = np.zeros(n + 1)
    seed_dir[n] = 1.0
    J0 = scaled_jacobian(system, z0 / system.scale)
    tau0 = tangent(J0, seed_dir)
    if tau0 is not None and float(np.linalg.norm(J0 @ tau0)) > 1e-8 * float(np.linalg.norm(J0)):
        # A seed at a fold: the tangent is orthogonal to p there, so the bordered system that orients it along p is
        # singular. The null vector, either way along the curve.
        tau0 = initial_tangent(J0)
        tau0 = -tau0 if tau0[n] < 0 else tau0
    if tau0 is None or (abs(tau0[n]) < 1e-12 and np.allclose(tau0, seed_dir)):
        tau0 = seed_dir
    first = curve_point(system, z0, tau0)
    halves: list[tuple[list[CurvePoint], list[Mark], str, End | None]] = []
    for direction in (+1.0, -1.0):
        state = arclength.init(system, z0, direction * tau0, limits, box=box, monitors=[fold], stop=system.on_edge)
        pts = [first if direction > 0 else first.flipped()]
        while not arclength.terminate(state)[0]:
            arclength.step(state)
            new = list(zip(state.path.z[len(pts):], state.path.tangents[len(pts):], strict=True))
            if state.path.end == "edge":
                new.pop()  # past the edge the curve runs into a singular limit: following it would only trace round-off
            for z, tau in new:
                pts.append(curve_point(system, z, tau))
                if on_step is not None:
                    on_step(pts[-1])
        path = state.path
        message, end = _end(system, state, pts)
        folds = [Mark("fold", f.index, (float(f.z[n]),), f.z[:n], f.tangent, f.refined, f.uncertainty)
                 for f in path.located if f.index < len(pts) - 1]
        halves.append((pts, folds, message, end))
        if path.end == "closed":
            # Once round, back on its first point: the other way round is the same curve. Its first point is where
            # it was started, not an end.
            return Curve(name, tuple(pts), tuple(folds), (None, end), message)
    (fwd, ffold, fmsg, fend), (bwd, bfold, bmsg, bend) = halves
    # Join: backward half reversed (its tangents flipped to the forward orientation), then forward.
    back = [q.flipped() for q in reversed(bwd[1:])]
    offset = len(back)
    folds = [replace(f, index=offset - 1 - f.index, tangent=-f.tangent) for f in bfold] + [
        replace(f, index=f.index + offset) for f in ffold
    ]
    folds.sort(key=lambda f: f.index)
    return Curve(name, tuple(back + fwd), tuple(folds), (bend, fend), f"backward: {bmsg}; forward: {fmsg}")


def _end(system: ProblemSystem, state: arclength.State, pts: list[CurvePoint]) -> tuple[str, End | None]:
    """The message and branch end of one direction of a curve (None where it leaves the range)."""
    why = state.path.end
    if why == "domain":
        return "left the parameter range", None
    if why == "max_points":
        steps = state.limits.max_points - 1
        return "step cap reached", End("max_points", pts[-1].point, detail=f"{steps} steps in this direction")
    if why == "closed":
        return "closed loop", End("closed", pts[-1].point, detail="the curve closes on itself")
    if why == "edge":
        z = state.path.z[-1]
        return "reached a singular edge of the domain", End(
            "domain", pts[-1].point, quantity=_quantity(system.problem, z[: system.n], float(z[system.n])),
            detail="the equations degenerate at the edge of the theory's domain")
    end = _failure_end(system, state, pts[-1])
    if end.kind == "domain":
        return f"left the domain of its equations{f' ({end.quantity})' if end.quantity else ''}", end
    return "step below ds_min", end


def _quantity(problem: Problem, x: np.ndarray, p: float) -> str | None:
    """The theory's name for the quantity outside its domain at (x, p), if it gives one; else the parameter itself
    where p lies outside the problem's bounds (``Problem.bounds``: the values the theory admits)."""
    named = None if problem.domain is None else or_none(problem.domain, x, p)
    if named is not None:
        return named
    lo, hi = problem.bounds[0]  # type: ignore[index]
    name = problem.parameters[0]
    if p < lo:
        return f"{name} < {lo:g}"
    if p > hi:
        return f"{name} > {hi:g}"
    return None


def _failure_end(system: ProblemSystem, state: arclength.State, last: CurvePoint) -> End:
    """Why the corrector failed at the smallest step from ``last``: the residual could not be evaluated (a
    domain boundary, the quantity named by the theory where it can) or Newton did not converge (a solver
    failure, with its last residual)."""
    failure, z_pred = state.failure, state.predicted
    n = system.n
    if failure is not None and failure.left_domain and z_pred is not None:
        x, p = system.failed_at if system.failure and system.failed_at is not None else (z_pred[:n], float(z_pred[n]))
        quantity = _quantity(system.problem, x, p)
        detail = system.failure or "the residual is not finite past this point"
        return End("domain", last.point, detail=detail, quantity=quantity)
    residual = failure.residual if failure is not None else float("nan")
    return End("solver", last.point, method="pseudo-arclength corrector (Newton on the bordered system)",
                     residual=residual, detail="the corrector does not converge at the smallest step (ds_min)")
