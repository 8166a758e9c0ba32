"""One front door for a single solve of a :class:`Problem` at a fixed parameter value."""

from __future__ import annotations

import time

import numpy as np

from solvers.core.fixed_point import iterate
from solvers.core.newton import newton
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import SolveResult


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
    exception.
    """
    start = time.perf_counter()
    method = options.method

    def F(x: np.ndarray) -> np.ndarray:
        return problem.F(x, p)

    jac = (lambda x: problem.jacobian(x, p)) if problem.jacobian is not None else None
    G = (lambda x: np.asarray(problem.fixed_point(x, p), dtype=float)) if problem.fixed_point is not None else None
    # Without an explicit map, x + F(x) is the natural (undamped) fixed-point form.
    G_or_F = G if G is not None else (lambda x: x + F(x))

    try:
        if method == "newton":
            result = newton(F, x0, options, jacobian=jac, project=problem.project)
        elif method == "picard":
            result = iterate(G_or_F, x0, options, anderson=False, project=problem.project)
        elif method == "anderson":
            result = iterate(G_or_F, x0, options, anderson=True, project=problem.project)
        else:
            result = newton(F, x0, options, jacobian=jac, project=problem.project)
            if not result.converged:
                # One time budget for the whole cascade, not one per method.
                tries = [iterate(G_or_F, x0, remaining(options, start), anderson=True, project=problem.project)]
                if not tries[0].converged and tries[0].status != "time_limit":
                    tries.append(iterate(G_or_F, x0, remaining(options, start), anderson=False,
                                         project=problem.project))
                best = min([result, *tries], key=lambda r: (not r.converged, r.residual))
                best.iterations = result.iterations + sum(t.iterations for t in tries)
                best.nfev = result.nfev + sum(t.nfev for t in tries)
                result = best
                if result.converged:
                    result.method = f"auto:{result.method}"
    except (FloatingPointError, ZeroDivisionError, OverflowError, ValueError, np.linalg.LinAlgError) as exc:
        # A theory that cannot evaluate its equations at an iterate reports it as non-convergence.
        return SolveResult(np.array(x0, dtype=float), False, float("inf"), 0, method, time.perf_counter() - start,
                           f"error: {type(exc).__name__}: {exc}")
    result.seconds = time.perf_counter() - start
    return result
