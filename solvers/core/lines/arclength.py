"""Pseudo-arclength continuation of the solution curve of an augmented system G(z) = 0.

G maps R^(N+1) to R^N (the state(s) and the parameters in z), so its regular solutions form a
curve. Each step predicts along the unit tangent τ and corrects with Newton on the bordered system

    G(z) = 0,      τ · (z − z_pred) = 0,

in scaled coordinates (z divided by the system's ``scale``), with a chord Jacobian refreshed
when the contraction is slow. Steps adapt to the corrector's iteration count and to the angle
between successive tangents, are halved on failure, and a curve that cannot be corrected at
``ds_min`` ends as "lost". Monitors are scalar functions of (z, τ) evaluated at every point; a
sign change between two points is located by Brent's method along the arclength (each
evaluation a corrector solve on the hyperplane of the earlier point), so the located point lies on
the curve, not on its chord. A monitor marked ``stop`` ends the curve there; leaving the parameter
box ends it on the box's edge, located the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from scipy.optimize import brentq

from solvers.core.lines.options import LineOptions
from solvers.core.step_size import next_step


class System(Protocol):
    """An augmented system: ``residual`` (N,) and ``jacobian`` (N, N+1) at z (N+1,)."""

    scale: np.ndarray
    lam_index: tuple[int, ...]

    def residual(self, z: np.ndarray) -> np.ndarray: ...

    def jacobian(self, z: np.ndarray) -> np.ndarray: ...

    def accept(self, z: np.ndarray) -> None: ...


@dataclass(frozen=True)
class Monitor:
    """A test function ``value(z, tau)`` (tau: unit tangent in scaled coordinates)."""

    name: str
    value: Callable[[np.ndarray, np.ndarray], float]
    stop: bool = False


@dataclass(frozen=True)
class Box:
    """Bounds of the parameters z[lam_index]."""

    lo: np.ndarray
    hi: np.ndarray


@dataclass
class Located:
    name: str
    z: np.ndarray
    tangent: np.ndarray
    index: int  # lies between points[index] and points[index + 1] of its path
    refined: bool = True


@dataclass
class Path:
    """One continuation run in one direction from its first point."""

    z: list[np.ndarray]
    tangents: list[np.ndarray]
    values: list[np.ndarray]
    located: list[Located] = field(default_factory=list)
    end: str = "max_points"
    detail: str = ""
    #: 0 when the end was located on the curve; else the parameter step that brackets it (max norm).
    end_precision: float = 0.0


class _CorrectorFailed(Exception):
    pass


class Arclength:
    """The predictor-corrector for one system."""

    def __init__(self, system: System, options: LineOptions):
        self.system = system
        self.options = options
        self.S = np.asarray(system.scale, dtype=float)

    # ---- scaled system ------------------------------------------------------------------
    def G(self, u: np.ndarray) -> np.ndarray:
        return self.system.residual(u * self.S)

    def J(self, u: np.ndarray) -> np.ndarray:
        return self.system.jacobian(u * self.S) * self.S[None, :]

    def tangent(self, J: np.ndarray, t_prev: np.ndarray) -> np.ndarray | None:
        """Unit tangent oriented like ``t_prev``: [[J], [t_prevᵀ]] τ = [0, 1]."""
        if not np.all(np.isfinite(J)):
            return None
        A = np.vstack([J, t_prev])
        rhs = np.zeros(A.shape[0])
        rhs[-1] = 1.0
        try:
            t = np.linalg.solve(A, rhs)
        except np.linalg.LinAlgError:
            t = np.linalg.lstsq(A, rhs, rcond=None)[0]
        norm = float(np.linalg.norm(t))
        if not np.isfinite(norm) or norm == 0:
            return None
        return t / norm

    def correct(self, u_pred: np.ndarray, t: np.ndarray, J: np.ndarray) -> tuple[np.ndarray | None, int]:
        """Newton (chord, refreshed when slow) on G = 0 within the hyperplane τ·(u − u_pred) = 0."""
        tol = self.options.tolerance
        u = u_pred.copy()
        r = self.G(u)
        if not np.all(np.isfinite(r)):
            return None, 0
        res = float(np.max(np.abs(r)))
        if res <= tol:
            return u, 0
        first = res
        for it in range(1, self.options.newton_max + 1):
            A = np.vstack([J, t])
            rhs = -np.concatenate([r, [float(t @ (u - u_pred))]])
            try:
                du = np.linalg.solve(A, rhs)
            except np.linalg.LinAlgError:
                du = np.linalg.lstsq(A, rhs, rcond=None)[0]
            if not np.all(np.isfinite(du)):
                return None, it
            u = u + du
            r_new = self.G(u)
            if not np.all(np.isfinite(r_new)):
                return None, it
            new = float(np.max(np.abs(r_new)))
            if new <= tol:
                return u, it
            if new > 1e4 * max(first, tol):
                return None, it
            if float(np.max(np.abs(du))) <= 1e-15 * (1.0 + float(np.max(np.abs(u)))) and new <= 100 * tol:
                return u, it  # at the residual's noise floor
            if new > 0.5 * res:
                J = self.J(u)
            r, res = r_new, new
        return None, self.options.newton_max

    def values(self, monitors: Sequence[Monitor], u: np.ndarray, t: np.ndarray) -> np.ndarray:
        z = u * self.S
        return np.array([float(m.value(z, t)) for m in monitors])

    # ---- location along the arclength -------------------------------------------------------
    def locate(
        self,
        u_a: np.ndarray,
        t_a: np.ndarray,
        J_a: np.ndarray,
        u_b: np.ndarray,
        g: Callable[[np.ndarray, np.ndarray], float],
        g_a: float,
        g_b: float,
    ) -> tuple[np.ndarray, np.ndarray, float] | None:
        """Zero of g(z, τ) on the curve between u_a and u_b: (u, τ, s) or None if a corrector fails."""
        s_b = float(t_a @ (u_b - u_a))
        if not s_b > 0:
            return None
        cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}

        def value(s: float) -> float:
            if s == 0.0:
                return g_a
            if s == s_b:
                return g_b
            u, _ = self.correct(u_a + s * t_a, t_a, J_a)
            if u is None:
                raise _CorrectorFailed
            t = self.tangent(self.J(u), t_a)
            if t is None:
                raise _CorrectorFailed
            cache[s] = (u, t)
            return float(g(u * self.S, t))

        try:
            s = brentq(value, 0.0, s_b, xtol=1e-14 * max(1.0, s_b), rtol=4 * np.finfo(float).eps, maxiter=100)
        except (_CorrectorFailed, RuntimeError, ValueError):
            return None
        if s not in cache:
            if s in (0.0, s_b):
                u = u_a if s == 0.0 else u_b
                t = self.tangent(self.J(u), t_a)
                if t is None:
                    return None
                cache[s] = (u, t)
            else:
                try:
                    value(s)
                except _CorrectorFailed:
                    return None
        u, t = cache[s]
        return u, t, s

    # ---- one direction ------------------------------------------------------------------------
    def run(
        self,
        z0: np.ndarray,
        t0: np.ndarray,
        *,
        box: Box,
        monitors: Sequence[Monitor] = (),
        terminate: Callable[[np.ndarray], bool] | None = None,
        max_points: int | None = None,
    ) -> Path:
        """Continue from z0 along the scaled tangent t0 until a stop condition."""
        opt = self.options
        cap = max_points or opt.max_points
        system = self.system
        system.accept(z0)
        u = z0 / self.S
        t = t0 / np.linalg.norm(t0)
        J = self.J(u)
        vals = self.values(monitors, u, t)
        path = Path([z0.copy()], [t.copy()], [vals])
        ds = opt.ds
        u_first = u.copy()
        lam_idx = np.asarray(system.lam_index)
        width = (box.hi - box.lo) / self.S[lam_idx]
        while len(path.z) < cap:
            u_new, nit = self.correct(u + ds * t, t, J)
            t_new: np.ndarray | None = None
            J_new: np.ndarray | None = None
            if u_new is not None:
                J_new = self.J(u_new)
                t_new = self.tangent(J_new, t)
                turn = np.inf if t_new is None else float(np.arccos(np.clip(float(t_new @ t), -1.0, 1.0)))
                if t_new is None or (turn > opt.max_angle and ds > opt.ds_min * 1.01):
                    u_new = None
            if u_new is None or t_new is None or J_new is None:
                if ds <= opt.ds_min * 1.01:
                    path.end, path.detail = "lost", "the corrector fails at the smallest step"
                    break
                ds = max(opt.ds_min, ds / 2)
                continue
            vals_new = self.values(monitors, u_new, t_new)
            # Candidate ends inside this step: the box edge and every stop monitor changing sign.
            # Each is (s, reason, u, tangent, bracket): bracket 0 when located on the curve, else
            # the parameter step within which the corrector could not locate it.
            ends: list[tuple[float, str, np.ndarray, np.ndarray, float]] = []
            z_a, z_b = u * self.S, u_new * self.S
            step = float(np.max(np.abs(z_b[lam_idx] - z_a[lam_idx])))
            at_edge = False
            for k, idx in enumerate(lam_idx):
                for bound, outside in ((box.lo[k], z_b[idx] < box.lo[k]), (box.hi[k], z_b[idx] > box.hi[k])):
                    if not outside:
                        continue
                    if abs(z_a[idx] - bound) <= 1e-12 * max(1.0, width[k] * self.S[idx]):
                        at_edge = True
                        continue

                    def edge(z: np.ndarray, tau: np.ndarray, idx: int = idx, bound: float = bound) -> float:
                        return float(z[idx] - bound)

                    found = self.locate(u, t, J, u_new, edge, float(z_a[idx] - bound), float(z_b[idx] - bound))
                    if found is not None:
                        uu, tt, s = found
                        uu = uu.copy()
                        uu[idx] = bound / self.S[idx]  # on the edge to round-off
                        ends.append((s, "domain", uu, tt, 0.0))
                    else:
                        ends.append((0.0, "domain", u, t, step))
            if at_edge:
                # Leaving through the edge it starts on, the line is outside the box at once: any other edge this
                # step crosses (near a corner) lies beyond that.
                path.end, path.detail = "domain", "the line starts on the edge of the box and leaves it"
                break
            for i, m in enumerate(monitors):
                if m.stop and _sign_change(vals[i], vals_new[i]):
                    found = self.locate(u, t, J, u_new, m.value, float(vals[i]), float(vals_new[i]))
                    if found is not None:
                        ends.append((found[2], m.name, found[0], found[1], 0.0))
                    else:
                        ends.append((float(t @ (u_new - u)), m.name, u_new, t_new, step))
            s_end = min((e[0] for e in ends), default=np.inf)
            for i, m in enumerate(monitors):
                if not m.stop and _sign_change(vals[i], vals_new[i]):
                    found = self.locate(u, t, J, u_new, m.value, float(vals[i]), float(vals_new[i]))
                    if found is not None and found[2] <= s_end:
                        path.located.append(Located(m.name, found[0] * self.S, found[1], len(path.z) - 1))
                    elif found is None and s_end == np.inf:
                        mid = 0.5 * (u + u_new)
                        path.located.append(Located(m.name, mid * self.S, t_new, len(path.z) - 1, refined=False))
            if ends:
                s, why, uu, tt, bracket = min(ends, key=lambda e: e[0])
                if s > 0:
                    system.accept(uu * self.S)
                    path.z.append(uu * self.S)
                    path.tangents.append(tt)
                    path.values.append(self.values(monitors, uu, tt))
                path.end, path.end_precision = why, bracket
                if bracket > 0:
                    path.detail = "not located on the curve (the corrector fails there); bracketed by the last step"
                break
            system.accept(z_b)
            path.z.append(z_b)
            path.tangents.append(t_new)
            path.values.append(vals_new)
            u, t, J, vals = u_new, t_new, J_new, vals_new
            if terminate is not None and terminate(z_b):
                path.end = "terminated"
                break
            if len(path.z) > 10 and float(np.linalg.norm(u - u_first)) < 0.5 * ds:
                path.end = "closed"
                break
            ds = next_step(ds, nit, opt)
        return path


def _sign_change(a: float, b: float) -> bool:
    return bool(np.isfinite(a) and np.isfinite(b) and a * b < 0)


def initial_tangent(J: np.ndarray) -> np.ndarray:
    """Unit null vector of an (N, N+1) Jacobian (scaled coordinates)."""
    _, _, Vt = np.linalg.svd(J)
    return Vt[-1].copy()


@dataclass
class TwoWay:
    """A curve traced both ways from its seed: ``backward`` and ``forward`` start at the seed."""

    backward: Path
    forward: Path

    def points(self) -> list[np.ndarray]:
        return [*reversed(self.backward.z[1:]), *self.forward.z]

    def tangents(self) -> list[np.ndarray]:
        return [*(-t for t in reversed(self.backward.tangents[1:])), *self.forward.tangents]

    def values(self) -> list[np.ndarray]:
        return [*reversed(self.backward.values[1:]), *self.forward.values]

    def located(self) -> list[Located]:
        """Located points with indices into ``points()``."""
        nb = len(self.backward.z) - 1
        out = [Located(p.name, p.z, -p.tangent, nb - 1 - p.index, p.refined) for p in self.backward.located]
        out += [Located(p.name, p.z, p.tangent, nb + p.index, p.refined) for p in self.forward.located]
        return sorted(out, key=lambda p: p.index)


def trace_two_way(
    system: System,
    z0: np.ndarray,
    t0: np.ndarray,
    options: LineOptions,
    *,
    box: Box,
    monitors: Sequence[Monitor] = (),
    terminate: Callable[[np.ndarray], bool] | None = None,
) -> TwoWay:
    """Continue from z0 along +t0 and then along −t0 (t0 in scaled coordinates)."""
    engine = Arclength(system, options)
    fwd = engine.run(z0, t0, box=box, monitors=monitors, terminate=terminate)
    if fwd.end == "closed":
        return TwoWay(Path([z0.copy()], [t0], [fwd.values[0]], end="closed"), fwd)
    bwd = engine.run(z0, -t0, box=box, monitors=monitors, terminate=terminate)
    return TwoWay(bwd, fwd)
