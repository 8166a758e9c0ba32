"""Special points along the population (self-consistent, D → ∞) solution of a sweep.

The saddle-point branch is unique and passes GFL → GMFL-I → GMFL-II through kinks of its
complementarity condition, which no free-entropy crossing or fold reveals; each special point is
instead the root of a function of the solution, refined by Brent's method on the parameter
(every evaluation is an engine solve warm-started between the two bracketing sweep points):

* ``first_order`` GFL → GMFL-I: the self-consistent potential reaches equal depth with the
  aligned mass still zero. Indicator: Δ while ω = 0, −ω once ω > 0 (continuous, zero at the onset).
* ``first_order`` GMFL-I → GMFL-II: the center population empties (end of the coexistence
  interval). Indicator: 1 − ω while ω < 1, Δ once ω = 1.
* ``spinodal``: the aligned well of the self-consistent potential is born (or dies) at a fold of
  Ŝ' (located by bisection on its existence), and the center loses local stability (Ŝ''(0) = 0).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np
from scipy.optimize import bisect, brentq

from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.solve import solve_at
from solvers.core.transitions import Transition
from solvers.theories.rubin_cavity.network import NetworkAt
from solvers.theories.rubin_cavity.phases import GFL, GMFL_I, GMFL_II
from solvers.theories.rubin_cavity.saddle_mode import GAP_SCALE, WEIGHT_EPS, SaddleState, evaluate, gfl_start

Indicator = Callable[[SaddleState], float]


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


#: (kind, indicator, branches, detail, smooth)
EVENTS: list[tuple[str, Indicator, list[str], str, bool]] = [
    (
        "first_order",
        onset_indicator,
        [GFL, GMFL_I],
        "equal depth of the self-consistent potential: an aligned population appears at finite overlap",
        True,
    ),
    (
        "first_order",
        emptying_indicator,
        [GMFL_I, GMFL_II],
        "end of the equal-depth (coexistence) interval: the center population empties",
        True,
    ),
    (
        "spinodal",
        aligned_well_indicator,
        ["aligned"],
        "fold of the self-consistent potential: the aligned well is born or dies",
        False,
    ),
    ("spinodal", center_indicator, ["center"], "local stability of the center well changes (Ŝ''(0) = 0)", True),
]


def locate(
    problem: Problem,
    network_at: NetworkAt,
    solutions: Sequence[tuple[float, np.ndarray]],
    options: SolverOptions,
) -> list[Transition]:
    """Transitions between consecutive converged equilibrium solutions ``(p, x)``, refined in p."""
    newton = options.model_copy(update={"method": "newton"})
    pts = sorted(solutions, key=lambda s: s[0])
    states = [evaluate(network_at(p), x) for p, x in pts]
    out: list[Transition] = []
    for (pa, xa), (pb, xb), sa, sb in zip(pts[:-1], pts[1:], states[:-1], states[1:], strict=True):
        for kind, ind, branches, detail, smooth in EVENTS:
            fa, fb = ind(sa), ind(sb)
            if not (math.isfinite(fa) and math.isfinite(fb)) or fa == 0 or fb == 0 or np.sign(fa) == np.sign(fb):
                continue

            def g(p: float, ind: Indicator = ind, pa: float = pa, pb: float = pb, xa=xa, xb=xb) -> float:
                x = solve_between(problem, network_at, p, pa, pb, xa, xb, newton)
                return float(ind(evaluate(network_at(p), x)))

            tol = 1e-13 * max(abs(pa), abs(pb), 1e-300)
            try:
                if smooth:
                    pc = brentq(g, pa, pb, xtol=tol, rtol=1e-14, maxiter=200)
                else:
                    pc = bisect(g, pa, pb, xtol=tol, rtol=1e-14, maxiter=200)
                refined, unc = True, 0.0
            except (ValueError, RuntimeError):
                pc, refined, unc = 0.5 * (pa + pb), False, abs(pb - pa) / 2
            out.append(
                Transition(
                    kind,
                    float(pc),
                    list(branches),
                    detail=detail,
                    refined=refined,
                    uncertainty=unc,
                    state=_state_at(problem, network_at, pc, pa, pb, xa, xb, newton),
                )
            )
    return out


def solve_between(
    problem: Problem,
    network_at: NetworkAt,
    p: float,
    pa: float,
    pb: float,
    xa: np.ndarray,
    xb: np.ndarray,
    options: SolverOptions,
) -> np.ndarray:
    """The solution at p from the interpolated guess, else from either end, else from the exact GFL state.

    Newton's generalised Jacobian changes at the kinks of the complementarity condition, so a guess
    interpolated across a phase boundary can stall; one of the other guesses lies on the right side.
    """
    w = (p - pa) / (pb - pa) if pb != pa else 0.0
    for x0 in ((1 - w) * xa + w * xb, xa, xb, gfl_start(network_at(p))):
        res = solve_at(problem, p, x0, options)
        if res.converged:
            return res.x
    raise ValueError("solve failed during refinement")


def _state_at(
    problem: Problem,
    network_at: NetworkAt,
    p: float,
    pa: float,
    pb: float,
    xa: np.ndarray,
    xb: np.ndarray,
    options: SolverOptions,
) -> dict[str, float | None]:
    net = network_at(p)
    try:
        x = solve_between(problem, network_at, p, pa, pb, xa, xb, options)
    except ValueError:
        return {"u": net.u, "T": net.T, "P": net.P}
    st = evaluate(net, x)
    aligned = st.aligned
    return {
        "b": st.b,
        "c": st.c,
        "aligned_weight": st.omega,
        "aligned_rho": aligned.rho if aligned is not None else None,
        "u": net.u,
        "T": net.T,
        "P": net.P,
    }


def first_crossing(ps: Sequence[float], values: Sequence[float], level: float) -> float | None:
    """First p where the sampled ``values`` cross ``level`` (linear interpolation), None if never."""
    for (p0, v0), (p1, v1) in itertools.pairwise(zip(ps, values, strict=True)):
        if v0 is None or v1 is None:
            continue
        if (v0 - level) * (v1 - level) <= 0 and v0 != v1:
            return float(p0 + (level - v0) * (p1 - p0) / (v1 - v0))
    return None
