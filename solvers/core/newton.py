"""Newton's method with a backtracking line search on the merit ½||F||².

The Jacobian is the theory's analytic one when it gives one, central finite differences
otherwise. A singular Jacobian falls back to the least-squares (minimum-norm) step, so Newton
still moves along the non-singular directions at a fold.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from solvers.core.options import SolverOptions
from solvers.core.results import SolveResult
from solvers.core.status import Status

Fun = Callable[[np.ndarray], np.ndarray]


def fd_jacobian(F: Fun, x: np.ndarray, f0: np.ndarray | None = None, *, central: bool = True) -> np.ndarray:
    """Finite-difference Jacobian; central by default (O(h²) error, smooth for fixed quadratures)."""
    x = np.asarray(x, dtype=float)
    n = x.size
    if f0 is None and not central:
        f0 = np.asarray(F(x), dtype=float)
    m = int(np.asarray(F(x)).size) if f0 is None else f0.size
    J = np.empty((m, n))
    eps = np.finfo(float).eps
    for j in range(n):
        h = (eps ** (1 / 3) if central else np.sqrt(eps)) * max(1.0, abs(x[j]))
        e = np.zeros(n)
        e[j] = h
        if central:
            J[:, j] = (np.asarray(F(x + e)) - np.asarray(F(x - e))) / (2 * h)
        else:
            assert f0 is not None
            J[:, j] = (np.asarray(F(x + e)) - f0) / h
    return J


def newton_step(J: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Solve J dx = -f, least squares when J is (near) singular."""
    try:
        dx = np.linalg.solve(J, -f)
        if np.all(np.isfinite(dx)):
            return dx
    except np.linalg.LinAlgError:
        pass
    return np.linalg.lstsq(J, -f, rcond=None)[0]


def newton(
    F: Fun,
    x0: np.ndarray,
    options: SolverOptions,
    *,
    jacobian: Callable[[np.ndarray], np.ndarray] | None = None,
    project: Callable[[np.ndarray], np.ndarray] | None = None,
    max_iterations: int | None = None,
) -> SolveResult:
    """Solve F(x) = 0 from x0."""
    start = time.perf_counter()
    deadline = start + options.time_limit if options.time_limit else float("inf")
    cap = max_iterations or min(options.max_iterations, 200)
    x = np.array(x0, dtype=float)
    nfev = 0
    f = np.asarray(F(x), dtype=float)
    nfev += 1
    history: list[float] = []
    status = Status.MAX_ITERATIONS
    it = 0
    if not np.all(np.isfinite(f)):
        return SolveResult(x, Status.DIVERGED, float("inf"), 0, "newton", time.perf_counter() - start, nfev,
                           detail="The residual is not finite at the start.")
    res = float(np.max(np.abs(f))) if f.size else 0.0
    history.append(res)
    for it in range(1, cap + 1):
        if res <= options.tolerance(float(np.max(np.abs(x))) if x.size else 0.0):
            status = Status.CONVERGED
            it -= 1
            break
        if time.perf_counter() > deadline:
            status = Status.TIME_LIMIT
            break
        J = jacobian(x) if jacobian is not None else fd_jacobian(F, x)
        if jacobian is None:
            nfev += 2 * x.size
        if not np.all(np.isfinite(J)):
            # A linear solver given NaN or Inf returns garbage (LAPACK complains on stderr): the iterate has
            # left the region where the equations can be differentiated.
            status = Status.DIVERGED
            break
        dx = newton_step(np.asarray(J, dtype=float), f)
        merit = 0.5 * float(f @ f)
        t = 1.0
        accepted = False
        for _ in range(30):
            x_try = x + t * dx
            if project is not None:
                x_try = project(x_try)
            f_try = np.asarray(F(x_try), dtype=float)
            nfev += 1
            if np.all(np.isfinite(f_try)) and 0.5 * float(f_try @ f_try) <= (1 - 1e-4 * t) * merit:
                accepted = True
                break
            t *= 0.5
        if not accepted:
            # Accept a tiny step only if it is finite; a stalled line search ends the solve.
            status = Status.LINE_SEARCH
            break
        x, f = x_try, f_try
        res = float(np.max(np.abs(f))) if f.size else 0.0
        history.append(res)
    else:
        if res <= options.tolerance(float(np.max(np.abs(x))) if x.size else 0.0):
            status = Status.CONVERGED
    if status is not Status.CONVERGED and res <= options.tolerance(float(np.max(np.abs(x))) if x.size else 0.0):
        status = Status.CONVERGED
    return SolveResult(
        x=x,
        residual=res,
        iterations=it,
        method="newton",
        seconds=time.perf_counter() - start,
        status=status,
        nfev=nfev,
        history=tuple(history),
    )
