"""The alignment onset along a sweep: where an aligned well of the self-consistent single-neuron
potential becomes as deep as the central one.

Plain MF has a single solution at every parameter (its free entropy is convex in the residual), so
its transition is not a fold or a free-entropy crossing of branches: at finite d the aligned
mass grows smoothly, and as d → ∞ (κ√d fixed) it becomes a kink at equal depth of the two wells
(the d → ∞ law concentrates on the deepest well). The onset is located here on the engine's
solution branches: the indicator (aligned minus central well depth, + while there is no aligned
well) is bracketed between consecutive sweep points and refined by Brent's method in the
parameter, each evaluation an engine (Newton) solve warm-started on the branch.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from scipy.optimize import bisect, brentq

from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.solve import solve_at
from solvers.core.transitions import Transition

DETAIL = "alignment onset: an aligned well of the single-neuron potential reaches the central well's depth"


def locate_onsets(problem: Problem, model: Any, result: Any, options: SolverOptions) -> list[Transition]:
    newton = options.model_copy(update={"method": "newton"})
    out: list[Transition] = []
    order = np.argsort(result.values)
    for i0, i1 in itertools.pairwise(order):
        pa, pb = result.values[i0], result.values[i1]
        ca, cb = result.catalogues[i0], result.catalogues[i1]
        for ba in ca.branches:
            if not ba.converged:
                continue
            # the same branch at the next value: the nearest converged solution
            cands = [b for b in cb.branches if b.converged]
            if not cands:
                continue
            bb = min(cands, key=lambda b: float(np.max(np.abs(b.x - ba.x))))
            fa, fb = model.onset_indicator(ba.x, pa), model.onset_indicator(bb.x, pb)
            if not (fa != 0 and fb != 0 and np.sign(fa) != np.sign(fb)):
                continue
            xa, xb = ba.x.copy(), bb.x.copy()

            def g(p: float, pa: float = pa, pb: float = pb, xa: np.ndarray = xa, xb: np.ndarray = xb) -> float:
                w = (p - pa) / (pb - pa)
                res = solve_at(problem, p, (1 - w) * xa + w * xb, newton)
                if not res.converged:
                    raise ValueError("branch solve failed during refinement")
                return float(model.onset_indicator(res.x, p))

            tol = 1e-10 * max(abs(pa), abs(pb), 1e-300)
            try:
                smooth = math.isfinite(fa) and math.isfinite(fb)
                pc = (brentq if smooth else bisect)(g, pa, pb, xtol=tol, maxiter=200)
                refined, unc = True, 0.0
            except (ValueError, RuntimeError):
                pc, refined, unc = 0.5 * (pa + pb), False, abs(pb - pa) / 2
            out.append(Transition("first_order", float(pc), [ba.name], detail=DETAIL, refined=refined,
                                  uncertainty=unc))
    # one onset per location (several branches may share it)
    uniq: list[Transition] = []
    for t in sorted(out, key=lambda t: t.parameter):
        if not any(abs(u.parameter - t.parameter) <= 1e-8 * max(1.0, abs(t.parameter)) for u in uniq):
            uniq.append(t)
    return uniq
