"""The one corrector of pseudo-arclength continuation, and what it needs: the augmented system, the limits.

Newton on the bordered system [G(u); τ · (u − u_pred)] = 0 in scaled coordinates u = z / scale, from the Jacobian
of the point the step is predicted from, recomputed at the iterate only where the residual does not at least halve
in a step, and (where the :class:`Limits` ask for it) updated by Broyden's rank-one rule after each iterate: along
a smooth curve a step then costs about one residual per iteration rather than a Jacobian. With ``fresh`` it is
Newton proper (a Jacobian at every iterate), for locating special points to round-off. The iterator that calls it
is :mod:`solvers.core.arclength`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from solvers.core.options import ArclengthOptions

#: The corrector recomputes the Jacobian where its residual shrinks by less than this factor in a step.
CONTRACTION = 0.5
#: A corrector whose residual grows past this multiple of its first one is diverging.
DIVERGED = 1e4


class System(Protocol):
    """An augmented system: ``residual`` (N,) and ``jacobian`` (N, N+1) at z (N+1,), in unscaled coordinates.

    ``scale``: the size of each coordinate (the iterator works in z / scale); ``lam_index``: the free
    parameters' positions in z (the box bounds them); ``accept``: called with every accepted point (a
    system whose equations depend on the last point, e.g. its borders, updates them there). A system may
    also have ``project(z) -> z``, applied to every corrector iterate (to keep it in the theory's domain).
    """

    scale: np.ndarray
    lam_index: tuple[int, ...]

    def residual(self, z: np.ndarray) -> np.ndarray: ...

    def jacobian(self, z: np.ndarray) -> np.ndarray: ...

    def accept(self, z: np.ndarray) -> None: ...


@dataclass(frozen=True)
class Limits:
    """What the iterator reads besides the system: the step control, the corrector's residual threshold at z
    (max norm), the cap on the points of one run, whether a step's corrector updates its Jacobian by Broyden's
    rule (``secant``; else only recomputes it where the contraction is slow), and whether a monitor's zero is
    solved by Newton with a fresh Jacobian at every iterate (``exact``: to round-off; else by the step's chord
    corrector, to the tolerance). Secant updates save Jacobians along the curves of an expensive theory, whose
    special points are then located exactly; a tracer that scans for branch points (where a secant Jacobian can
    slide onto the crossing branch) leaves them off. A box edge is always located by the chord corrector (it is
    placed on the edge to round-off whatever the solve's precision)."""

    step: ArclengthOptions
    tolerance: Callable[[np.ndarray], float]
    max_points: int
    secant: bool = False
    exact: bool = False


@dataclass(frozen=True)
class Correction:
    """One corrector solve: the point (scaled; None when it failed), its iterations, its last residual (max
    norm), and whether it failed because the residual could not be evaluated (outside the equations' domain)."""

    u: np.ndarray | None
    iterations: int
    residual: float = float("nan")
    left_domain: bool = False


def scaled_jacobian(system: System, u: np.ndarray) -> np.ndarray:
    S = np.asarray(system.scale, dtype=float)
    return np.asarray(system.jacobian(u * S), dtype=float) * S[None, :]


def tangent(J: np.ndarray, t_prev: np.ndarray) -> np.ndarray | None:
    """Unit tangent oriented like ``t_prev``: [[J], [t_prevᵀ]] τ = [0, 1] (None where J is not finite)."""
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


def initial_tangent(J: np.ndarray) -> np.ndarray:
    """Unit null vector of an (N, N+1) Jacobian (scaled coordinates)."""
    _, _, Vt = np.linalg.svd(J)
    return Vt[-1].copy()


def correct(
    system: System, limits: Limits, u_pred: np.ndarray, t: np.ndarray, J: np.ndarray | None, *,
    secant: bool = False, fresh: bool = False,
) -> Correction:
    """Newton on G = 0 within the hyperplane τ · (u − u_pred) = 0, from the Jacobian ``J`` (scaled) of a nearby
    point, recomputed where the contraction is slow and Broyden-updated after each iterate (``secant``).
    ``fresh``: a Jacobian at every iterate and twice the iterations (locating special points, where the
    corrector should converge quadratically, to round-off, not just below the tolerance)."""
    S = np.asarray(system.scale, dtype=float)
    project = getattr(system, "project", None)
    newton_max = limits.step.newton_max * (2 if fresh else 1)

    def G(u: np.ndarray) -> np.ndarray:
        return np.asarray(system.residual(u * S), dtype=float)

    u = u_pred.copy()
    r = G(u)
    if not np.all(np.isfinite(r)):
        return Correction(None, 0, left_domain=True)
    res = float(np.max(np.abs(r))) if r.size else 0.0
    first = res
    Jk = np.array(J, dtype=float) if J is not None and not fresh else None
    u_old: np.ndarray | None = None
    r_old: np.ndarray | None = None
    res_old = np.inf
    for it in range(newton_max + 1):
        tol = limits.tolerance(u * S)
        if res <= tol:
            return Correction(u, it, res)
        if it == newton_max:
            break
        if Jk is None or fresh or (u_old is not None and res > CONTRACTION * res_old):
            Jk = scaled_jacobian(system, u)
            if not np.all(np.isfinite(Jk)):
                return Correction(None, it, res, left_domain=True)
        elif secant and u_old is not None and r_old is not None:
            step = u - u_old
            ss = float(step @ step)
            if ss > 0:
                Jk += np.outer((r - r_old) - Jk @ step, step) / ss
        A = np.vstack([Jk, t])
        rhs = -np.concatenate([r, [float(t @ (u - u_pred))]])
        try:
            du = np.linalg.solve(A, rhs)
        except np.linalg.LinAlgError:
            du = np.linalg.lstsq(A, rhs, rcond=None)[0]
        if not np.all(np.isfinite(du)):
            return Correction(None, it + 1, res)
        u_old, r_old, res_old = u, r, res
        u = u + du
        if project is not None:
            u = np.asarray(project(u * S), dtype=float) / S
        r = G(u)
        if not np.all(np.isfinite(r)):
            return Correction(None, it + 1, res, left_domain=True)
        res = float(np.max(np.abs(r))) if r.size else 0.0
        if res > DIVERGED * max(first, tol) and not fresh:
            # a chord step that throws the iterate this far is not converging; Newton near a singular point may
            # take such a step and still converge
            return Correction(None, it + 1, res)
        if float(np.max(np.abs(du))) <= 1e-15 * (1.0 + float(np.max(np.abs(u)))) and res <= 100 * tol:
            return Correction(u, it + 1, res)  # at the residual's noise floor
    return Correction(None, newton_max, res)
