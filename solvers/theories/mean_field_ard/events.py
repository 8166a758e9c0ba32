"""The alignment onset of plain MF as an engine event.

Plain MF has a single solution at every parameter (its free entropy is convex in the residual), so
its transition is neither a fold nor a free-entropy crossing of branches: at finite d the aligned
mass grows smoothly with the reward. The onset κ_c is located on the unaligned state instead — the
law restricted to the central basin, which a sampler started at the prior stays in: it is where an
aligned well of that state's single-neuron potential becomes as deep as the central well. As
d → ∞ (κ√d fixed) the law concentrates on the deepest well and this is the transition of plain MF
(the equal-depth criterion of the cavity theory). The indicator has the sign of the aligned minus the
central depth at the unaligned state's residual t_c, read at the residual t* where the two depths are equal
(``PopulationParity.onset_indicator``); the engine brackets its sign change between sweep values and refines it
by Brent's method.

At finite d the unaligned state itself learns part of the target before any aligned well is as deep as its
central one (its residual t_c < 1 at the onset: at k = 2, d ≤ 64 most of it), which delays the onset; the
equal-depth point at the unlearned residual t = 1 is the d → ∞ form Theorem 4.1 scales
(docs/theories/mean_field_ard.md, §4).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from solvers.core.problem import Event

NAME = "alignment_onset"
DETAIL = ("alignment onset: an aligned well of the unaligned state's single-neuron potential reaches the "
          "central well's depth (the d → ∞ transition of plain MF)")
#: The indicator's value where the unaligned state's potential has no aligned well at all (it is then
#: positive: the central well is the deepest). Finite, so that the engine can bracket the sign change;
#: the jump to it is a discontinuity Brent's bracketing search handles like any other.
NO_ALIGNED_WELL = 1.0e3


def bracketable(gap: float) -> float:
    """A gap that reads +inf where there is no aligned well, as a root search can bracket it (``NO_ALIGNED_WELL``)."""
    return gap if math.isfinite(gap) else NO_ALIGNED_WELL


def onset_event(gap: Callable[[float], float]) -> Event:
    """``gap(p)``: > 0 while the unaligned state's central well is its deepest at p, < 0 once an aligned well is
    deeper (+inf without an aligned well)."""

    def indicator(x: np.ndarray, p: float) -> float:
        return bracketable(gap(p))

    return Event(NAME, indicator, transition="first_order", branches=("aligned", "symmetric"), detail=DETAIL)
