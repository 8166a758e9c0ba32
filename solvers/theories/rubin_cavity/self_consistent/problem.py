"""The bound problem of ``self_consistent``: the D → ∞ saddle point, with the finite-D solution as its notes.

The engine solves and sweeps the saddle-point equations (:mod:`.saddle`); special points are
the events of :mod:`.events`, located and refined by the engine's detector, which reports only
those and folds (genuine multiple solutions). Every catalogue carries the finite-D solution
(:mod:`.finite_d`) as ``observables.finite_D``, warm-started along a sweep from the previous
point; a sweep in P also carries its ``sample_complexity``. Everything a solve or sweep learns
(states, the finite-D warm start) lives on the problem built for it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import Catalogue, Notes
from solvers.core.special_points import SpecialKind
from solvers.core.sweep import Sweep
from solvers.theories.rubin_cavity.common.guards import guarded, guarded_scalar
from solvers.theories.rubin_cavity.common.network import NetworkAt, network_of
from solvers.theories.rubin_cavity.self_consistent import events
from solvers.theories.rubin_cavity.self_consistent.finite_d import FiniteD
from solvers.theories.rubin_cavity.self_consistent.report import report as saddle_report
from solvers.theories.rubin_cavity.self_consistent.saddle import BRANCH, StateMemo, gfl_start, jacobian
from solvers.theories.rubin_cavity.self_consistent.sample_complexity import sample_complexity
from solvers.theories.rubin_cavity.specs import SelfConsistentSpec


def self_consistent_problem(
    spec: SelfConsistentSpec, parameter: str | None, options: SolverOptions, values: Sequence[float]
) -> Problem:
    """The problem at control values ``values`` (the finite-D rule is sized for all of them)."""
    base = network_of(spec)
    network_at = NetworkAt(base, parameter)
    state = StateMemo(network_at)
    finite_d = FiniteD(network_at, values, options)

    # Written as G(x) − x so that x + F(x) is the natural damped map: ω ← clip(ω − DΔ, 0, 1).
    def fixed_point(x: np.ndarray, p: float) -> np.ndarray:
        st = state(x, p)
        return np.array([st.b_new, st.c_new, x[2] - st.complementarity])

    def starts(p: float) -> dict[str, np.ndarray]:
        net = network_at(p)
        gfl = gfl_start(net)
        return {
            "uninformative": gfl,
            "mixed": np.array([0.9 * gfl[0], 0.97 * net.epsilon, 1.0 / max(net.n_eff, 1.0)]),
            "informative": np.array([0.05, 0.5 * net.epsilon, 1.0]),
        }

    def notes(cat: Catalogue) -> Notes:
        eq = cat.get(cat.equilibrium)
        return Notes(observables={"finite_D": finite_d.block(cat.parameter, None if eq is None else eq.x)})

    def sweep_notes(sweep: Sweep) -> Notes:
        return Notes(fields={"sample_complexity": sample_complexity(base, sweep)})

    return Problem(
        residual=None,
        fixed_point=guarded(fixed_point, (3,)),
        dim=3,
        starts=starts,
        jacobian=guarded(lambda x, p: jacobian(network_at(p), x, state(x, p)), (3, 3)),
        stability=guarded_scalar(lambda x, p: state(x, p).margin),
        kind="saddle",
        # One name for the population solution: the phase (GFL / GMFL-I / GMFL-II) changes along it and is
        # reported as an observable, so a sweep does not mistake a phase change for a branch ending.
        label=lambda x, p, start: BRANCH,
        # b is a residual fraction: b <= 0 would mean over-learning, which no positive kernel produces.
        project=lambda x: np.array([max(x[0], 1e-12), x[1], min(max(x[2], 0.0), 1.0)]),
        scale=np.array([1.0, 1.0, 1.0]),
        names=("b", "c", "omega"),
        report=lambda x, p: saddle_report(network_at(p), state(x, p)),
        events=events.engine_events(state),
        # The phase boundaries are events; a fold is a genuine end of the solution. Stability changes and
        # free-entropy crossings of this single-branch problem say nothing beyond the events.
        detect=frozenset({SpecialKind.FOLD, SpecialKind.EVENT}),
        notes=notes,
        sweep_notes=sweep_notes if parameter == "P" else None,
        point_state=lambda x, p: events.point_state(state(x, p), network_at(p)),
    )
