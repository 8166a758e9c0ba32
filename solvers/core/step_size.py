"""The one step-size rule of every pseudo-arclength continuation (sweeps' curves and two-parameter lines).

After an accepted step whose corrector took ``nit`` iterations: past the target the next step shrinks by
0.6; at or below it the step grows by 1 + ½((N_max − n)/N_max)² (BifurcationKit's rule: at most ×1.5, less the
harder the corrector worked); the result is clamped to [ds_min, ds_max]. A rejected step is halved by the caller.
"""

from __future__ import annotations

from typing import Protocol


class StepControl(Protocol):
    """The options the rule reads (both continuation option blocks have them)."""

    ds_min: float
    ds_max: float
    newton_target: int
    newton_max: int


def next_step(ds: float, nit: int, opt: StepControl) -> float:
    """The step after an accepted one of size ``ds`` whose corrector took ``nit`` iterations."""
    if nit > opt.newton_target:
        return max(opt.ds_min, 0.6 * ds)
    factor = (opt.newton_max - nit) / opt.newton_max
    return min(opt.ds_max, ds * (1.0 + 0.5 * factor * factor))
