"""Whether a solution lies on a traced curve: the test by which a sweep judges a branch already known."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from solvers.core.catalogue import same_solution
from solvers.core.curve import Curve, interpolations
from solvers.core.detect import polish
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem


def on_some_curve(problem: Problem, curves: Sequence[Curve], p: float, x: np.ndarray, options: SolverOptions) -> bool:
    """True when a point of some curve at ``p``, interpolated and polished by Newton, is the same solution as ``x``
    (the catalogue's notion of "the same", symmetry included). Two curves that share one such point are one
    branch: continuation from a point is unique away from singular points."""
    for curve in curves:
        for g in interpolations(curve.points, p):
            if not same_solution(problem, g, x, tol=0.2):
                continue
            res = polish(problem, p, g, options)
            if res.converged and same_solution(problem, res.x, x):
                return True
    return False
