"""Special points along the population (self-consistent, D → ∞) solution, as the engine's events.

The saddle-point branch is unique and passes GFL → GMFL-I → GMFL-II through kinks of its
complementarity condition, which no free-entropy crossing or fold reveals; each special point is
instead the zero of an indicator of the solution, which the engine's detector locates along the
sweep and refines in the parameter (every evaluation a Newton solve between the two bracketing
points, then from the problem's starts, the first of which is the exact GFL state):

* ``first_order`` GFL → GMFL-I: the self-consistent potential reaches equal depth with the
  aligned mass still zero. Indicator: Δ while ω = 0, −ω once ω > 0 (continuous, zero at the onset).
* ``first_order`` GMFL-I → GMFL-II: the center population empties (end of the coexistence
  interval). Indicator: 1 − ω while ω < 1, Δ once ω = 1.
* ``spinodal``: the aligned well of the self-consistent potential is born (or dies) at a fold of
  Ŝ' (located by bisection on its existence), and the center loses local stability (Ŝ''(0) = 0).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from solvers.core.problem import Event
from solvers.core.special_points import Transition
from solvers.theories.rubin_cavity.common.guards import guarded_scalar
from solvers.theories.rubin_cavity.common.network import Network
from solvers.theories.rubin_cavity.common.phases import GFL, GMFL_I, GMFL_II
from solvers.theories.rubin_cavity.common.potential import OverlapPotential
from solvers.theories.rubin_cavity.self_consistent.saddle import GAP_SCALE, WEIGHT_EPS, SaddleState

Indicator = Callable[[SaddleState], float]
#: A minimum of Ŝ'(s) within this fraction of its value at infinity, 1/(2σ_w²), from zero is a well being born.
BIRTH_TOL = 1e-6
#: Points of the scan for that minimum (uniform in ρ on [0, √s_max], as the stationary-point scan).
BIRTH_GRID = 2000


def onset_indicator(st: SaddleState) -> float:
    if st.omega > WEIGHT_EPS:
        return -st.omega
    if st.center_curvature <= 0:
        return -1.0
    return GAP_SCALE * st.aligned.depth if st.aligned is not None else 1.0


def emptying_indicator(st: SaddleState) -> float:
    if st.omega < 1.0 - WEIGHT_EPS:
        return 1.0 - st.omega
    return GAP_SCALE * st.aligned.depth if st.aligned is not None else -1.0


def aligned_well_indicator(st: SaddleState) -> float:
    return 1.0 if st.aligned is not None else -1.0


def center_indicator(st: SaddleState) -> float:
    return st.center_curvature


@dataclass(frozen=True)
class PopulationEvent:
    name: str
    indicator: Indicator
    transition: Transition
    branches: tuple[str, ...]
    detail: str
    smooth: bool


EVENTS: tuple[PopulationEvent, ...] = (
    PopulationEvent(
        "aligned_onset",
        onset_indicator,
        "first_order",
        (GFL, GMFL_I),
        "equal depth of the self-consistent potential: an aligned population appears at finite overlap",
        True,
    ),
    PopulationEvent(
        "center_emptying",
        emptying_indicator,
        "first_order",
        (GMFL_I, GMFL_II),
        "end of the equal-depth (coexistence) interval: the center population empties",
        True,
    ),
    PopulationEvent(
        "aligned_well",
        aligned_well_indicator,
        "spinodal",
        ("aligned",),
        "fold of the self-consistent potential: the aligned well is born or dies",
        False,
    ),
    PopulationEvent(
        "center_stability",
        center_indicator,
        "spinodal",
        ("center",),
        "local stability of the center well changes (Ŝ''(0) = 0)",
        True,
    ),
)


def engine_events(state: Callable[[np.ndarray, float], SaddleState]) -> tuple[Event, ...]:
    """The events of :data:`EVENTS` on the states of one problem (``state(x, p)``, its memo)."""

    def on_state(ind: Indicator) -> Callable[[np.ndarray, float], float]:
        # A state that cannot be evaluated has no sign: NaN, which the detector skips.
        return guarded_scalar(lambda x, p: ind(state(x, p)))

    return tuple(
        Event(ev.name, on_state(ev.indicator), ev.transition, ev.branches, ev.detail, ev.smooth) for ev in EVENTS
    )


def well_at_birth(pot: OverlapPotential) -> float | None:
    """ρ of an aligned well at its birth (or death): where Ŝ'(s) has an interior minimum touching zero.

    At the fold itself the refined state may lie a rounding error on the side where the well does not
    exist yet; this names the place where it appears either way (None when no minimum of Ŝ' is near zero).
    """
    s_max = pot.s_max()
    if not (math.isfinite(s_max) and s_max > 0):
        return None
    s = np.linspace(0.0, math.sqrt(s_max), BIRTH_GRID + 1)[1:] ** 2
    slope = np.asarray(pot.dF(s), dtype=float)
    if not np.all(np.isfinite(slope)):
        return None
    i = int(np.argmin(slope))
    if not 0 < i < len(s) - 1:
        return None  # the slope is smallest at an end: no well is born inside
    lo, hi = float(s[i - 1]), float(s[i + 1])
    curv = lambda t: float(pot.d2F(t))  # noqa: E731 - Ŝ'' = 0 at the minimum of Ŝ'
    s_star = brentq(curv, lo, hi, xtol=1e-15, rtol=1e-15) if curv(lo) * curv(hi) < 0 else float(s[i])
    if abs(float(pot.dF(s_star))) > BIRTH_TOL / (2.0 * pot.sigma_w2):
        return None
    return math.sqrt(s_star)


def point_state(st: SaddleState, net: Network) -> dict[str, float | None]:
    """What a special point reports about the solution there."""
    aligned = st.aligned
    return {
        "b": st.b,
        "c": st.c,
        "aligned_weight": st.omega,
        "aligned_rho": aligned.rho if aligned is not None else well_at_birth(st.potential),
        "u": net.u,
        "T": net.T,
        "P": net.P,
    }
