"""Pseudo-arclength continuation of one solution curve of F(x; p) = 0.

The curve is followed in z = (x, t), with t = (p - p_lo) / (p_hi - p_lo) the parameter rescaled
to the sweep range, so that step sizes mean the same thing for every theory. Each step predicts
along the unit tangent τ and corrects with Newton on the bordered system

    F(x, t) = 0,      τ · (z - z_pred) = 0,

whose Jacobian [[F_x, F_t], [τ_xᵀ, τ_t]] stays regular at folds, where F_x alone is singular.
Step size adapts to the corrector's iteration count and to the angle between successive tangents.
A fold is a sign change of the tangent's t-component; it is refined by root-finding that
component along the arclength from the last point before it (each evaluation is a corrector
solve), which places the fold parameter to round-off because p is quadratic in s there.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from solvers.core.catalogue import stability_margin
from solvers.core.curve_results import BranchEnd, Curve, CurvePoint, Fold
from solvers.core.errors import MAYBE_NUMERICAL, is_numerical
from solvers.core.newton import fd_jacobian
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.roots import bracketed_root
from solvers.core.step_size import next_step

OnStep = Callable[["CurvePoint"], None]
#: The corrector computes a fresh Jacobian where its residual shrinks by less than this factor in a step.
CONTRACTION = 0.5


class CorrectorFailed(Exception):
    """The bordered corrector did not reach the curve from a predicted point."""


class Frame:
    """The rescaled coordinates (x, t) and the bordered corrector at one problem."""

    def __init__(self, problem: Problem, p_lo: float, p_hi: float, options: SolverOptions):
        self.problem = problem
        self.p_lo = p_lo
        self.width = (p_hi - p_lo) or 1.0
        self.options = options
        #: the last residual evaluated, keyed by (x bytes, t): the corrector's own iterate, which the
        #: bordered matrix at that iterate then differentiates in t with one more evaluation, not two
        self._last: tuple[bytes, float, np.ndarray] | None = None
        #: the numerical error of the last residual that could not be evaluated ("" when it was a NaN)
        self.failure = ""
        #: how the last corrector solve went: its last residual (max norm), and whether it stopped because the
        #: residual could not be evaluated (outside the equations' domain) rather than by not converging
        self.last_residual = float("nan")
        self.left_domain = False
        #: [F_x, F_t] at the last point whose tangent was computed, and that point (x, t): the corrector's first
        #: Jacobian for a step from there
        self._chord: tuple[np.ndarray, np.ndarray] | None = None

    def p(self, t: float) -> float:
        return self.p_lo + self.width * t

    def t(self, p: float) -> float:
        return (p - self.p_lo) / self.width

    def F(self, x: np.ndarray, t: float) -> np.ndarray:
        """The residual; a theory that cannot evaluate it here yields NaN, which the corrector rejects."""
        known = self._known(x, t)
        if known is not None:
            return known.copy()
        try:
            f = np.asarray(self.problem.F(x, self.p(t)), dtype=float)
        except MAYBE_NUMERICAL as exc:
            if not is_numerical(exc):
                raise
            self.failure = f"{type(exc).__name__}: {exc}"
            f = np.full(x.size, np.nan)
        self._last = (np.asarray(x, dtype=float).tobytes(), t, f.copy())
        return f

    def _known(self, x: np.ndarray, t: float) -> np.ndarray | None:
        last = self._last
        if last is not None and last[1] == t and last[0] == np.asarray(x, dtype=float).tobytes():
            return last[2]
        return None

    def jac_x(self, x: np.ndarray, t: float) -> np.ndarray:
        if self.problem.jacobian is not None:
            return np.asarray(self.problem.jacobian(x, self.p(t)), dtype=float)
        return fd_jacobian(lambda y: self.F(y, t), x)

    def jac_t(self, x: np.ndarray, t: float, f0: np.ndarray | None = None) -> np.ndarray:
        """F_t by differences: forward from ``f0`` = F(x, t) when it is known (the corrector's iterate),
        central otherwise. The O(h) error of the forward form moves neither the curve (the corrector
        drives F itself to zero) nor its folds (τ_t = 0 exactly where F_x is singular)."""
        h = 1e-6 * max(1.0, abs(t))
        if f0 is not None and np.all(np.isfinite(f0)):
            return (self.F(x, t + h) - f0) / h
        return (self.F(x, t + h) - self.F(x, t - h)) / (2 * h)

    def bordered(self, x: np.ndarray, t: float, tau: np.ndarray) -> np.ndarray:
        n = x.size
        A = np.empty((n + 1, n + 1))
        f0 = self._known(x, t)  # read first: a difference Jacobian in x replaces the cached residual
        A[:n, :n] = self.jac_x(x, t)
        A[:n, n] = self.jac_t(x, t, f0)
        A[n, :] = tau
        return A

    def tangent(self, x: np.ndarray, t: float, tau_prev: np.ndarray) -> np.ndarray:
        """Unit tangent oriented like ``tau_prev``: solve [[F_x, F_t], [τ_prevᵀ]] τ = [0, 1]."""
        n = x.size
        rhs = np.zeros(n + 1)
        rhs[n] = 1.0
        A = self.bordered(x, t, tau_prev)
        if not np.all(np.isfinite(A)):
            return tau_prev
        self._chord = (np.concatenate([np.asarray(x, dtype=float), [t]]), A[:n].copy())
        try:
            tau = np.linalg.solve(A, rhs)
        except np.linalg.LinAlgError:
            tau = np.linalg.lstsq(A, rhs, rcond=None)[0]
        norm = np.linalg.norm(tau)
        if not np.isfinite(norm) or norm == 0:
            return tau_prev
        return tau / norm

    def correct(
        self, z_pred: np.ndarray, tau: np.ndarray, max_iter: int, *, origin: np.ndarray | None = None,
        newton: bool = False,
    ) -> tuple[np.ndarray | None, int]:
        """Quasi-Newton on the bordered system from the predicted point; None when it fails.

        The first Jacobian [F_x, F_t] is the one the tangent at ``origin`` (the point on the curve the step is
        predicted from) was computed with, when that was the last tangent computed; it is updated by Broyden's
        rank-one rule after each step, and a fresh one is computed at the iterate
        only when the residual does not at least halve in a step. Along a smooth curve a step then costs one
        residual per iteration instead of a (finite-difference) Jacobian per iteration. The border row τ is exact.
        ``newton``: a fresh Jacobian at every iterate (the refinement of special points, where the curve may pass
        through a singular point and a secant Jacobian would slide onto another branch).
        """
        n = z_pred.size - 1
        z = z_pred.copy()
        self.left_domain, self.failure = False, ""
        J = None
        if self._chord is not None and origin is not None and not newton:
            at, chord = self._chord
            # the same point (t to round-off: the curve stores p, from which t is recomputed)
            if np.allclose(at, origin, rtol=1e-12, atol=1e-14) and np.all(np.isfinite(chord)):
                J = chord.copy()
        z_old: np.ndarray | None = None
        f_old: np.ndarray | None = None
        res_old = np.inf
        for it in range(1, max_iter + 1):
            x, t = z[:n], float(z[n])
            f = self.F(x, t)
            if not np.all(np.isfinite(f)):
                self.left_domain = True
                return None, it
            res = float(np.max(np.abs(f))) if n else 0.0
            self.last_residual = res
            g = float(tau @ (z - z_pred))
            if res <= self.options.tolerance(float(np.max(np.abs(x))) if n else 0.0) and abs(g) < 1e-12:
                return z, it - 1
            if J is None or newton or res > CONTRACTION * res_old:
                A = self.bordered(x, t, tau)
                if not np.all(np.isfinite(A)):
                    self.left_domain = True
                    return None, it
                J = A[:n].copy()
            elif z_old is not None and f_old is not None:
                step = z - z_old
                ss = float(step @ step)
                if ss > 0:
                    J += np.outer((f - f_old) - J @ step, step) / ss
                A = np.vstack([J, tau])
            else:
                A = np.vstack([J, tau])
            z_old, f_old, res_old = z.copy(), f, res
            rhs = -np.concatenate([f, [g]])
            try:
                dz = np.linalg.solve(A, rhs)
            except np.linalg.LinAlgError:
                dz = np.linalg.lstsq(A, rhs, rcond=None)[0]
            z = z + dz
            if self.problem.project is not None:
                z[:n] = self.problem.project(z[:n])
            if not np.all(np.isfinite(z)):
                return None, it
        x, t = z[:n], float(z[n])
        f = self.F(x, t)
        self.left_domain = not np.all(np.isfinite(f))
        if not self.left_domain:
            self.last_residual = float(np.max(np.abs(f))) if n else 0.0
        ok = np.all(np.isfinite(f)) and np.max(np.abs(f)) <= self.options.tolerance(float(np.max(np.abs(x))))
        return (z if ok else None), max_iter


def _point(frame: Frame, z: np.ndarray, tau: np.ndarray) -> CurvePoint:
    n = z.size - 1
    x, p = z[:n].copy(), frame.p(float(z[n]))
    problem = frame.problem
    fe = float(problem.free_entropy(x, p)) if problem.free_entropy is not None else None
    try:
        margin = stability_margin(problem, x, p)
    except MAYBE_NUMERICAL as exc:
        if not is_numerical(exc):
            raise
        margin = None
    return CurvePoint(p=p, x=x, tangent=tau.copy(), margin=margin, free_entropy=fe)


def refine_along(
    frame: Frame, a: CurvePoint, b: CurvePoint, g: Callable[[np.ndarray, np.ndarray], float], g_a: float
) -> tuple[float, np.ndarray, float] | None:
    """Root of ``g(z, tangent)`` along the arclength between curve points ``a`` and ``b``: (p, x, uncertainty).

    Each evaluation is a corrector solve on the hyperplane at arclength s from ``a``, so the
    root lies on the curve itself, not on its chord. The uncertainty is the largest distance in p
    from the root to the corrected points at the ends of the root finder's final bracket in s.
    """
    n = a.x.size
    za = np.concatenate([a.x, [frame.t(a.p)]])
    zb = np.concatenate([b.x, [frame.t(b.p)]])
    span = float(np.linalg.norm(zb - za))
    if span == 0:
        return None
    cache: dict[float, np.ndarray] = {}

    def value(s: float) -> float:
        z, _ = frame.correct(za + s * a.tangent, a.tangent, frame.options.continuation.newton_max * 2, newton=True)
        if z is None:
            raise CorrectorFailed()
        tau = frame.tangent(z[:n], float(z[n]), a.tangent)
        cache[s] = z
        return float(g(z, tau))

    try:
        hi = span
        f_hi = value(hi)
        if np.sign(f_hi) == np.sign(g_a):
            hi = span * 1.05
            f_hi = value(hi)
            if np.sign(f_hi) == np.sign(g_a):
                return None
        root = bracketed_root(value, 0.0, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps,
                              failures=(CorrectorFailed, np.linalg.LinAlgError))
        s = root.x
        if s not in cache:
            value(s)
        z = cache[s]
        p_root = frame.p(float(z[n]))
        ends = [frame.p(float(cache[e][n])) for e in (root.lo, root.hi) if e in cache]
        # At a fold p is quadratic in s, so the bracket's ends can agree with p_root to the last bit: a few units
        # in the last place are the least a location computed in floating point is known to.
        floor = 4 * float(np.spacing(abs(p_root)))
        return p_root, z[:n].copy(), max(floor, *(abs(pe - p_root) for pe in ends))
    except (CorrectorFailed, RuntimeError, np.linalg.LinAlgError):
        return None


def _refine_fold(frame: Frame, a: CurvePoint, b: CurvePoint) -> Fold | None:
    n = a.x.size
    found = refine_along(frame, a, b, lambda z, tau: float(tau[n]), float(a.tangent[n]))
    return None if found is None else Fold(p=found[0], x=found[1], index=-1, uncertainty=found[2])


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
    """Follow the solution through (p0, x0) in both directions until it leaves [p_lo, p_hi]."""
    frame = Frame(problem, p_lo, p_hi, options)
    copt = options.continuation
    n = x0.size
    z0 = np.concatenate([np.asarray(x0, dtype=float), [frame.t(p0)]])
    seed_dir = np.zeros(n + 1)
    seed_dir[n] = 1.0
    tau0 = frame.tangent(z0[:n], float(z0[n]), seed_dir)
    if abs(tau0[n]) < 1e-12 and np.allclose(tau0, seed_dir):
        tau0 = seed_dir
    first = _point(frame, z0, tau0)
    halves: list[tuple[list[CurvePoint], list[Fold], str, BranchEnd | None]] = []
    for direction in (+1.0, -1.0):
        pts = [first if direction > 0 else first.flipped()]
        folds: list[Fold] = []
        ds = copt.ds
        message = "left the parameter range"
        end: BranchEnd | None = None
        margin_t = 1e-3
        steps = 0
        while True:
            steps += 1
            if steps > copt.max_steps:
                message = "step cap reached"
                end = BranchEnd("step_cap", pts[-1].p, detail=f"{copt.max_steps} steps in this direction")
                break
            cur = pts[-1]
            zc = np.concatenate([cur.x, [frame.t(cur.p)]])
            z, nit = frame.correct(zc + ds * cur.tangent, cur.tangent, copt.newton_max, origin=zc)
            if z is not None:
                tau = frame.tangent(z[:n], float(z[n]), cur.tangent)
                angle = float(np.arccos(np.clip(tau @ cur.tangent, -1.0, 1.0)))
                if angle > copt.max_angle and ds > copt.ds_min * 1.01:
                    z = None
            if z is None:
                if ds <= copt.ds_min * 1.01:
                    message = "step below ds_min"
                    end = _failure_end(frame, cur, zc + ds * cur.tangent)
                    break
                ds = max(copt.ds_min, ds / 2)
                continue
            if problem.on_edge(z[:n], frame.p(float(z[n]))):
                # Past here the curve runs into a singular limit of the equations (an unknown diverges):
                # following it would only trace round-off.
                message = "reached a singular edge of the domain"
                end = BranchEnd("domain", cur.p, quantity=_quantity(problem, z[:n], frame.p(float(z[n]))),
                                detail="the equations degenerate at the edge of the theory's domain")
                break
            new = _point(frame, z, tau)
            if np.sign(new.tangent[n]) != np.sign(cur.tangent[n]) and cur.tangent[n] != 0:
                found = _refine_fold(frame, cur, new)
                if found is None:  # refinement failed: keep the midpoint estimate, flagged unrefined
                    folds.append(Fold(0.5 * (cur.p + new.p), 0.5 * (cur.x + new.x), len(pts) - 1, refined=False,
                                      uncertainty=abs(new.p - cur.p) / 2))
                else:
                    folds.append(Fold(found.p, found.x, len(pts) - 1, uncertainty=found.uncertainty))
            pts.append(new)
            if on_step is not None:
                on_step(new)
            ds = next_step(ds, nit, copt)
            t_new = float(z[n])
            if t_new < -margin_t or t_new > 1 + margin_t:
                break
            if len(pts) > 8 and np.linalg.norm(z - z0) < 0.5 * ds:
                message = "closed loop"
                end = BranchEnd("loop", new.p, detail="the curve closes on itself")
                break
        halves.append((pts, folds, message, end))
    (fwd, ffold, fmsg, fend), (bwd, bfold, bmsg, bend) = halves
    # Join: backward half reversed (its tangents flipped to the forward orientation), then forward.
    back = [q.flipped() for q in reversed(bwd[1:])]
    offset = len(back)
    folds = [Fold(f.p, f.x, offset - 1 - f.index, f.refined, f.uncertainty) for f in bfold] + [
        Fold(f.p, f.x, f.index + offset, f.refined, f.uncertainty) for f in ffold
    ]
    folds.sort(key=lambda f: f.index)
    return Curve(name, tuple(back + fwd), tuple(folds), f"backward: {bmsg}; forward: {fmsg}", (bend, fend))


def _quantity(problem: Problem, x: np.ndarray, p: float) -> str | None:
    """The theory's name for the quantity outside its domain at (x, p), if it gives one."""
    if problem.domain is None:
        return None
    try:
        return problem.domain(x, p)
    except MAYBE_NUMERICAL as exc:
        if not is_numerical(exc):
            raise
        return None


def _failure_end(frame: Frame, last: CurvePoint, z_pred: np.ndarray) -> BranchEnd:
    """Why the corrector failed at the smallest step from ``last``: the residual could not be evaluated (a
    domain boundary, the quantity named by the theory where it can) or Newton did not converge (a solver
    failure, with its last residual)."""
    n = z_pred.size - 1
    if frame.left_domain:
        quantity = _quantity(frame.problem, z_pred[:n], frame.p(float(z_pred[n])))
        detail = frame.failure or "the residual is not finite past this point"
        return BranchEnd("domain", last.p, quantity=quantity, detail=detail)
    return BranchEnd("solver", last.p, method="pseudo-arclength corrector (Newton on the bordered system)",
                     residual=frame.last_residual,
                     detail="the corrector does not converge at the smallest step (ds_min)")
