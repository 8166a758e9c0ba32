"""The alignment onset of plain MF along a sweep.

Plain MF has a single solution at every parameter (its free entropy is convex in the residual), so
its transition is neither a fold nor a free-entropy crossing of branches: at finite d the aligned
mass grows smoothly with the reward. The onset κ_c is located on the unaligned state instead — the
law restricted to the central basin, which a sampler started at the prior stays in: it is where an
aligned well of that state's single-neuron potential becomes as deep as the central well. As
d → ∞ (κ√d fixed) the law concentrates on the deepest well and this is the transition of plain MF
(the equal-depth criterion of the cavity theory). The indicator (aligned minus central depth, +∞
without an aligned well) is bracketed between consecutive sweep values and refined by Brent's
method (bisection where one end has no aligned well), each evaluation a solve of the unaligned state.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from scipy.optimize import bisect, brentq

from solvers.core.transitions import Transition

DETAIL = ("alignment onset: an aligned well of the unaligned state's single-neuron potential reaches the "
          "central well's depth (the d → ∞ transition of plain MF)")


def locate_onsets(model: Any, values: list[float]) -> list[Transition]:
    """Onsets between consecutive values of the swept parameter (plain MF only; [] otherwise)."""
    if model.spec.model != "mf":
        return []
    vals = sorted(set(float(v) for v in values))
    ind = [model.onset_indicator(v) for v in vals]
    out: list[Transition] = []
    for (pa, fa), (pb, fb) in itertools.pairwise(zip(vals, ind, strict=True)):
        if fa == 0 or fb == 0 or np.sign(fa) == np.sign(fb):
            continue
        tol = 1e-10 * max(abs(pa), abs(pb))
        try:
            solver = brentq if (math.isfinite(fa) and math.isfinite(fb)) else bisect
            pc = solver(lambda p: model.onset_indicator(p), pa, pb, xtol=tol, maxiter=200)
            refined, unc = True, 0.0
        except (ValueError, RuntimeError):
            pc, refined, unc = 0.5 * (pa + pb), False, abs(pb - pa) / 2
        name = "aligned" if fb < 0 else "symmetric"
        out.append(Transition("first_order", float(pc), sorted({"symmetric", "aligned", name})[:2], detail=DETAIL,
                              refined=refined, uncertainty=unc))
    return out
