"""One front door for a single solve of a :class:`Problem` at a fixed parameter value."""

from __future__ import annotations

import time

import numpy as np

from solvers.core.errors import MAYBE_NUMERICAL, is_numerical
from solvers.core.fixed_point import iterate
from solvers.core.newton import newton
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import SolveResult
from solvers.core.status import Status


def remaining(options: SolverOptions, start: float) -> SolverOptions:
    """The options with the time limit reduced to what is left of it since ``start``."""
    if options.time_limit is None:
        return options
    left = max(options.time_limit - (time.perf_counter() - start), 1e-6)
    return options.model_copy(update={"time_limit": left})


def solve_at(problem: Problem, p: float, x0: np.ndarray, options: SolverOptions) -> SolveResult:
    """Solve F(x; p) = 0 from x0 with ``options.method``.

    ``auto`` runs Newton first (fast, and the only method that converges onto unstable
    saddles of a fixed-point map) and falls back to Anderson-accelerated damped iteration, then
    to plain damped iteration, keeping the best result. Non-convergence is a result, never an
    exception; so is a numerical failure of the equations (``numerical_error``). Any other
    exception is a bug and propagates.
    """
    start = time.perf_counter()
    try:
        result = _solve(problem, p, x0, options, start)
    except MAYBE_NUMERICAL as exc:
        if not is_numerical(exc):
            raise
        return SolveResult(np.array(x0, dtype=float), Status.NUMERICAL_ERROR, float("inf"), 0, options.method,
                           time.perf_counter() - start, detail=f"{type(exc).__name__}: {exc}")
    return result.replace(seconds=time.perf_counter() - start)


def _solve(problem: Problem, p: float, x0: np.ndarray, options: SolverOptions, start: float) -> SolveResult:
    method = options.method

    def F(x: np.ndarray) -> np.ndarray:
        return problem.F(x, p)

    jac = (lambda x: problem.jacobian(x, p)) if problem.jacobian is not None else None
    G = (lambda x: np.asarray(problem.fixed_point(x, p), dtype=float)) if problem.fixed_point is not None else None
    # Without an explicit map, x + F(x) is the natural (undamped) fixed-point form.
    G_or_F = G if G is not None else (lambda x: x + F(x))
    if method == "newton":
        return newton(F, x0, options, jacobian=jac, project=problem.project)
    if method == "picard":
        return iterate(G_or_F, x0, options, anderson=False, project=problem.project)
    if method == "anderson":
        return iterate(G_or_F, x0, options, anderson=True, project=problem.project)
    first = newton(F, x0, options, jacobian=jac, project=problem.project)
    if first.converged:
        return first
    # One time budget for the whole cascade, not one per method.
    tries = [iterate(G_or_F, x0, remaining(options, start), anderson=True, project=problem.project)]
    if not tries[0].converged and tries[0].status is not Status.TIME_LIMIT:
        tries.append(iterate(G_or_F, x0, remaining(options, start), anderson=False, project=problem.project))
    best = min([first, *tries], key=lambda r: (not r.converged, r.residual))
    # A time limit anywhere in the cascade means the verdict is the circumstances', not the equations'.
    status = best.status
    if not best.converged and any(r.status is Status.TIME_LIMIT for r in (first, *tries)):
        status = Status.TIME_LIMIT
    return best.replace(
        status=status,
        iterations=first.iterations + sum(t.iterations for t in tries),
        nfev=first.nfev + sum(t.nfev for t in tries),
        method=f"auto:{best.method}" if best.converged else best.method,
    )
