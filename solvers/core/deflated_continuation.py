"""Deflated continuation (Farrell, Beentjes & Birkisson 2016, algorithm 1), on traced curves.

Algorithm 1 steps through the parameter: it continues every known branch to the next value, deflates the
solutions found there, and runs deflated Newton from the previous value's solutions to find new branches. Here the
known branches are whole pseudo-arclength curves (traced over the range once found, folds included), so the
"continue" half of each step is a look-up: at every requested value the solutions on the known curves are
interpolated and polished, deflated, and a deflated search from them and from the named starts
(:func:`solvers.core.deflation.deflated_search`) looks for solutions on no curve: as in algorithm 1 each guess is
tried again after every success and dropped at its first failure, and the search at one value ends once as many
solves in a row as it has guesses (at most ``options.search.budget``) found nothing new. Each solution found starts
a new curve, traced over the whole range, which is known from then on.
A branch disconnected from every start (an isola) is found at the first value where it exists and deflation
reaches it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from solvers.core.catalogue import novelty, same_solution
from solvers.core.continuation import OnStep, trace_curve
from solvers.core.curve import Curve, interpolations
from solvers.core.curve_membership import on_some_curve
from solvers.core.deflation import deflated_search
from solvers.core.detect import polish
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import SolveResult


def deflate_along(
    problem: Problem,
    vals: Sequence[float],
    options: SolverOptions,
    curves: list[Curve],
    on_step: OnStep | None = None,
    *,
    max_curves: int = 24,
) -> None:
    """Add to ``curves`` (in place) every branch a deflated search finds at some value of ``vals`` off the known
    curves; each new curve's message says where deflation found it."""
    p_lo, p_hi = min(vals), max(vals)
    for v in sorted(set(vals)):
        if len(curves) >= max_curves:
            return
        on_curves = _solutions_on(problem, curves, v, options)
        known = [r.x for r in on_curves]
        named = problem.starts(v)
        if options.search.starts is not None:
            named = {k: x for k, x in named.items() if k in options.search.starts}
        guesses = [*known, *(np.asarray(x, dtype=float) for x in named.values())]
        # Algorithm 1 tries each guess until it fails once: the search ends when every guess has failed, or earlier
        # at the budget, so its cost per value stays with the branches known there.
        per_value = options.model_copy(update={"search": options.search.model_copy(
            update={"budget": max(1, min(options.search.budget, len(guesses)))})})
        tally = deflated_search(problem, v, per_value, guesses, known, novelty(problem, v, on_curves))
        for _, res in tally.results:
            if len(curves) >= max_curves or on_some_curve(problem, curves, v, res.x, options):
                continue
            curve = trace_curve(problem, v, res.x, p_lo, p_hi, options, name=problem.name_of(res.x, v, "deflation"),
                                on_step=on_step)
            # A solution at a fold of a known curve (a double root) may fall just outside its traced points: the new
            # curve is new only if its points a quarter, half and three quarters along are on no known curve either
            # (a closed curve is traced once round from its start, so these are spread round it).
            n = len(curve.points)
            along = (curve.points[k * n // 4] for k in (1, 2, 3))
            if any(on_some_curve(problem, curves, q.p, q.x, options) for q in along):
                continue
            curves.append(replace(curve, message=f"found by deflation at p = {v:.10g}; {curve.message}"))


def _solutions_on(problem: Problem, curves: Sequence[Curve], v: float, options: SolverOptions) -> list[SolveResult]:
    """The distinct converged solutions on the curves at ``v`` (interpolated, then polished by Newton)."""
    out: list[SolveResult] = []
    for curve in curves:
        for g in interpolations(curve.points, v):
            res = polish(problem, v, g, options)
            if res.converged and not any(same_solution(problem, r.x, res.x) for r in out):
                out.append(res)
    return out
