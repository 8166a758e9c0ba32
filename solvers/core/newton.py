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
#: ``noise_floor`` of the augmented systems of the line tracers: a stalled line search within 100× the
#: tolerance is at their round-off floor.
ROUND_OFF = 100.0


def fd_jacobian(
    F: Fun, x: np.ndarray, f0: np.ndarray | None = None, *, central: bool = True, scale: np.ndarray | None = None
) -> np.ndarray:
    """Finite-difference Jacobian; central by default (O(h²) error, smooth for fixed quadratures).

    The step in x_j is relative to max(|x_j|, scale_j) (scale: 1 when not given), so a component whose
    natural size is far from 1 is differenced at its own scale.
    """
    x = np.asarray(x, dtype=float)
    n = x.size
    if f0 is None and not central:
        f0 = np.asarray(F(x), dtype=float)
    m = int(np.asarray(F(x)).size) if f0 is None else f0.size
    J = np.empty((m, n))
    eps = np.finfo(float).eps
    s = np.ones(n) if scale is None else np.asarray(scale, dtype=float)
    for j in range(n):
        h = (eps ** (1 / 3) if central else np.sqrt(eps)) * max(abs(x[j]), s[j], 1e-300)
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
    options: SolverOptions | None = None,
    *,
    tol: float | None = None,
    jacobian: Callable[[np.ndarray], np.ndarray] | None = None,
    project: Callable[[np.ndarray], np.ndarray] | None = None,
    max_iterations: int | None = None,
    scale: np.ndarray | None = None,
    noise_floor: float = 1.0,
) -> SolveResult:
    """Solve F(x) = 0 from x0: Newton steps, globalised by backtracking on ½|F|² (Armijo).

    The tolerance is ``tol`` (max norm) when given, else the options' (absolute plus relative to |x|);
    the options also give the time limit and the iteration cap (at most 200; 40 without options).
    ``scale`` sets the finite-difference steps when there is no ``jacobian``. A line search that finds no
    decrease ends the solve (``line_search``), unless the residual is within ``noise_floor`` times the
    tolerance: the augmented systems of the line tracers stall at their round-off floor, which they
    count as converged (noise_floor 100), whereas a single solve insists on its tolerance (1).
    """
    start = time.perf_counter()
    limit = options.time_limit if options is not None else None
    deadline = start + limit if limit else float("inf")
    cap = max_iterations or (min(options.max_iterations, 200) if options is not None else 40)

    def threshold(x: np.ndarray) -> float:
        if tol is not None:
            return tol
        assert options is not None, "newton needs options or tol"
        return options.tolerance(float(np.max(np.abs(x))) if x.size else 0.0)

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
        if res <= threshold(x):
            status = Status.CONVERGED
            it -= 1
            break
        if time.perf_counter() > deadline:
            status = Status.TIME_LIMIT
            break
        J = jacobian(x) if jacobian is not None else fd_jacobian(F, x, scale=scale)
        if jacobian is None:
            nfev += 2 * x.size
        if not np.all(np.isfinite(J)):
            # A linear solver given NaN or Inf returns garbage (LAPACK complains on stderr): the iterate has
            # left the region where the equations can be differentiated.
            status = Status.DIVERGED
            break
        dx = newton_step(np.asarray(J, dtype=float), f)
        if not np.all(np.isfinite(dx)):
            status = Status.DIVERGED
            break
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
            # No decrease along the Newton direction: at the residual's noise floor this is convergence.
            status = Status.CONVERGED if res <= noise_floor * threshold(x) else Status.LINE_SEARCH
            break
        x, f = x_try, f_try
        res = float(np.max(np.abs(f))) if f.size else 0.0
        history.append(res)
    else:
        if res <= threshold(x):
            status = Status.CONVERGED
    if status is not Status.CONVERGED and res <= threshold(x):
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
