"""Damped fixed-point iteration x <- (1 - mixing) x + mixing G(x), optionally Anderson-accelerated.

Convergence is judged on the undamped residual ||G(x) - x||_inf against ``tol_abs + tol_rel |x|``
-- never on the step, which heavy damping makes small long before the fixed point is reached.

Anderson (type II, Walker & Ni 2011): keep the last m residual differences ΔF and iterate
differences ΔX, solve the Tikhonov-regularised least squares min_γ ||F_k - ΔF γ||² + r ||γ||²,
and mix x_{k+1} = x_k + β F_k - (ΔX + β ΔF) γ. The history is dropped when the residual grows
by more than a factor ``restart_growth`` over its best value, which guards the method against
stale secant information in the strongly non-linear regions of a saddle-point system.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

import numpy as np

from solvers.core.options import SolverOptions
from solvers.core.results import SolveResult
from solvers.core.status import Status

Map = Callable[[np.ndarray], np.ndarray]


def _deadline(options: SolverOptions, start: float) -> float:
    return start + options.time_limit if options.time_limit else float("inf")


def iterate(
    G: Map,
    x0: np.ndarray,
    options: SolverOptions,
    *,
    anderson: bool = False,
    project: Callable[[np.ndarray], np.ndarray] | None = None,
    restart_growth: float = 10.0,
) -> SolveResult:
    """Solve x = G(x) by damped (optionally Anderson-accelerated) iteration."""
    start = time.perf_counter()
    deadline = _deadline(options, start)
    method = "anderson" if anderson else "picard"
    beta = options.mixing
    x = np.array(x0, dtype=float)
    dX: deque[np.ndarray] = deque(maxlen=options.anderson_memory)
    dF: deque[np.ndarray] = deque(maxlen=options.anderson_memory)
    x_prev: np.ndarray | None = None
    f_prev: np.ndarray | None = None
    best_res = np.inf
    best_x = x.copy()
    history: list[float] = []
    nfev = 0
    status = Status.MAX_ITERATIONS
    res = np.inf
    it = 0
    for it in range(1, options.max_iterations + 1):  # noqa: B007 (reported after the loop)
        gx = np.asarray(G(x), dtype=float)
        nfev += 1
        if not np.all(np.isfinite(gx)):
            status = Status.DIVERGED
            break
        f = gx - x
        res = float(np.max(np.abs(f))) if f.size else 0.0
        history.append(res)
        if res < best_res:
            best_res, best_x = res, x.copy()
        if res <= options.tolerance(float(np.max(np.abs(x))) if x.size else 0.0):
            status = Status.CONVERGED
            best_x, best_res = x.copy(), res
            break
        if time.perf_counter() > deadline:
            status = Status.TIME_LIMIT
            break
        if anderson and x_prev is not None and f_prev is not None:
            if res > restart_growth * best_res:
                dX.clear()
                dF.clear()
            else:
                dX.append(x - x_prev)
                dF.append(f - f_prev)
        x_prev, f_prev = x, f
        if anderson and dF:
            DF = np.column_stack(dF)
            DX = np.column_stack(dX)
            # Columns are normalised so that the Tikhonov weight means the same at every scale
            # (early, large differences would otherwise swamp the late, small ones).
            norms = np.linalg.norm(DF, axis=0)
            norms[norms == 0] = 1.0
            A = np.vstack([DF / norms, np.sqrt(options.anderson_regularization) * np.eye(DF.shape[1])])
            rhs = np.concatenate([f, np.zeros(DF.shape[1])])
            try:
                gamma = np.linalg.lstsq(A, rhs, rcond=None)[0] / norms
                x_new = x + beta * f - (DX + beta * DF) @ gamma
            except np.linalg.LinAlgError:
                dX.clear()
                dF.clear()
                x_new = x + beta * f
        else:
            x_new = x + beta * f
        if project is not None:
            x_new = project(x_new)
        if not np.all(np.isfinite(x_new)):
            dX.clear()
            dF.clear()
            x_new = x + beta * f
        x = x_new
    converged = status is Status.CONVERGED
    return SolveResult(
        x=best_x if not converged else x,
        residual=float(best_res if np.isfinite(best_res) else res),
        iterations=it,
        method=method,
        seconds=time.perf_counter() - start,
        status=status,
        nfev=nfev,
        history=tuple(history),
    )
