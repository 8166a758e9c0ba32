"""Run a boundary job: the transition lines of a spec in a parameter box, traced as one computation.

A boundary job (``POST /v1/sweeps`` with two parameters and ``"method": "boundary"``) is a single
line of its own kind on every backend: the theory's two-parameter problem
(``Theory.two_parameter_problem``) handed to :func:`solvers.core.lines.trace_boundaries` over the
range of the first parameter and the bracket of the second. It stores no points on the way (a line
is not a sequence of independent values), so an interrupted boundary job runs again from the start;
the cancel flag and a worker's hand-off are honoured between residual evaluations.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from service.jobs.boundary_regions import probe_points, region_probes
from service.serialize import boundary_json
from solvers.core.lines import LineOptions, trace_boundaries
from solvers.core.problem import Problem
from solvers.theories import get as get_theory
from solvers.theories.two_parameter import integer_field

#: Residual evaluations between two checks of the cancel flag.
CHECK_EVERY = 200


def _checked(problem: Problem, check: Callable[[], None]) -> Problem:
    """The problem with ``check()`` called every CHECK_EVERY residual evaluations (it raises to stop)."""
    count = [0]
    F = problem.F

    def residual(x: np.ndarray, lam: np.ndarray) -> np.ndarray:
        count[0] += 1
        if count[0] % CHECK_EVERY == 0:
            check()
        return F(x, lam)

    return dataclasses.replace(problem, residual=residual)


def run_boundary(payload: dict[str, Any], spec: Any, options: Any, check: Callable[[], None],
                 spec_at: Callable[[float, float], Any]) -> dict[str, Any]:
    """The boundary job's result (``service.serialize.boundary_json``) for the payload's validated spec;
    ``spec_at(p1, p2)``: the validated spec at one point of the box (for the phases on either side of each line)."""
    theory = get_theory(payload["theory"])
    p1, p2 = payload["parameters"]
    box = ((lo1, hi1), (lo2, hi2)) = tuple((min(a), max(a)) for a in payload["axes"])
    lines = LineOptions.model_validate(payload.get("lines") or {})
    t0 = time.perf_counter()
    problem = _checked(theory.two_parameter_problem(spec, (p1, p2), options), check)
    result = trace_boundaries(problem, (lo1, hi1), (lo2, hi2), lines)
    regions = region_probes(theory, spec_at, probe_points([line.coordinates for line in result.lines], box), options,
                            check)
    # an integer field the theory declares real (a width) takes real values along the lines
    as_real = tuple(p for p in (p1, p2) if integer_field(spec, p) and p in theory.real_integers_for(spec))
    return boundary_json(theory.name, (p1, p2), box, result, time.perf_counter() - t0, regions, as_real)
