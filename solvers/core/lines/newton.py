"""Damped Newton for small square systems (starting solves, polishing, point location)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from solvers.core.lines.derivatives import EPS


@dataclass(frozen=True)
class NewtonResult:
    z: np.ndarray
    converged: bool
    iterations: int
    residual: float


def fd_jacobian(fun: Callable[[np.ndarray], np.ndarray], z: np.ndarray, scale: np.ndarray | None = None) -> np.ndarray:
    """Central-difference Jacobian (second order: enough for a Newton direction)."""
    s = np.ones(z.size) if scale is None else scale
    cols = []
    for k in range(z.size):
        h = EPS ** (1 / 3) * max(abs(z[k]), s[k], 1e-300)
        e = np.zeros(z.size)
        e[k] = h
        cols.append((fun(z + e) - fun(z - e)) / (2 * h))
    return np.column_stack(cols)


def newton(
    fun: Callable[[np.ndarray], np.ndarray],
    z0: np.ndarray,
    *,
    tol: float,
    jac: Callable[[np.ndarray], np.ndarray] | None = None,
    scale: np.ndarray | None = None,
    max_iter: int = 40,
) -> NewtonResult:
    """Solve fun(z) = 0 (max-norm ≤ tol) with a backtracking line search on ½|fun|²."""
    z = np.array(z0, dtype=float)
    r = fun(z)
    if not np.all(np.isfinite(r)):
        return NewtonResult(z, False, 0, float("inf"))
    res = float(np.max(np.abs(r)))
    for it in range(1, max_iter + 1):
        if res <= tol:
            return NewtonResult(z, True, it - 1, res)
        J = jac(z) if jac is not None else fd_jacobian(fun, z, scale)
        if not np.all(np.isfinite(J)):
            return NewtonResult(z, False, it, res)
        try:
            dz = np.linalg.solve(J, -r)
        except np.linalg.LinAlgError:
            dz = np.linalg.lstsq(J, -r, rcond=None)[0]
        if not np.all(np.isfinite(dz)):
            return NewtonResult(z, False, it, res)
        merit = float(r @ r)
        step = 1.0
        for _ in range(30):
            z_try = z + step * dz
            r_try = fun(z_try)
            if np.all(np.isfinite(r_try)) and float(r_try @ r_try) <= (1 - 1e-4 * step) * merit:
                break
            step *= 0.5
        else:
            # No decrease: at the noise floor of the residual this is convergence, otherwise failure.
            return NewtonResult(z, res <= 100 * tol, it, res)
        z, r = z_try, r_try
        res = float(np.max(np.abs(r)))
    return NewtonResult(z, res <= tol, max_iter, res)
