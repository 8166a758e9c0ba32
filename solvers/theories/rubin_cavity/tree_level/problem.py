"""The bound problem of ``self_consistent`` with ``treatment: "tree_level"``.

The engine solves and sweeps the D → ∞ saddle point of :mod:`.saddle` (unknowns M and ω); special points are
the cavity saddle's events (:mod:`..self_consistent.events`) on the same states, refined by the engine's
detector; every catalogue carries the finite-D tree-level solution as ``observables.finite_D`` and a sweep in P
its ``sample_complexity``, as for the cavity treatment.
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
from solvers.theories.rubin_cavity.self_consistent.saddle import BRANCH, SaddleState
from solvers.theories.rubin_cavity.self_consistent.sample_complexity import sample_complexity
from solvers.theories.rubin_cavity.specs import SelfConsistentSpec
from solvers.theories.rubin_cavity.tree_level.finite_d import TREE_LEVEL
from solvers.theories.rubin_cavity.tree_level.jacobian import jacobian
from solvers.theories.rubin_cavity.tree_level.report import report
from solvers.theories.rubin_cavity.tree_level.saddle import NAMES, StateMemo, guesses


def tree_level_problem(
    spec: SelfConsistentSpec, parameter: str | None, options: SolverOptions, values: Sequence[float]
) -> Problem:
    """The problem at control values ``values`` (the finite-D rule is sized for all of them)."""
    return problem_on(NetworkAt(network_of(spec), parameter), parameter, options, values)


def problem_on(
    network_at: NetworkAt, parameter: str | None, options: SolverOptions, values: Sequence[float]
) -> Problem:
    """The tree-level problem of ``network_at``'s control parameter (a spec field, ``u``, or the χ of annealing)."""
    state = StateMemo(network_at)
    finite_d = FiniteD(network_at, values, options, TREE_LEVEL)

    def saddle(x: np.ndarray, p: float) -> SaddleState:
        return state(x, p).saddle

    def notes(cat: Catalogue) -> Notes:
        eq = cat.get(cat.equilibrium)
        return Notes(observables={"finite_D": finite_d.block(cat.parameter, None if eq is None else eq.x)})

    def sweep_notes(sweep: Sweep) -> Notes:
        return Notes(fields={"sample_complexity": sample_complexity(network_at.base, sweep)})

    return Problem(
        residual=None,
        # x + F(x) is the damped map: M ← M_new, ω ← clip(ω − Δ, 0, 1).
        fixed_point=guarded(lambda x, p: state(x, p).residual, (4,)),
        dim=4,
        starts=lambda p: guesses(network_at(p), options),
        jacobian=guarded(lambda x, p: jacobian(network_at(p), x, state(x, p)), (4, 4)),
        stability=guarded_scalar(lambda x, p: saddle(x, p).margin),
        kind="saddle",
        label=lambda x, p, start: BRANCH,
        # A kernel's eigenvalues on the target modes are non-negative; ω is a mass fraction.
        project=lambda x: np.array([max(x[0], 0.0), x[1], max(x[2], 0.0), min(max(x[3], 0.0), 1.0)]),
        scale=np.ones(4),
        names=NAMES,
        report=lambda x, p: report(network_at(p), state(x, p)),
        events=events.engine_events(saddle),
        detect=frozenset({SpecialKind.FOLD, SpecialKind.EVENT}),
        notes=notes,
        sweep_notes=sweep_notes if parameter == "P" else None,
        point_state=lambda x, p: events.point_state(saddle(x, p), network_at(p)),
    )
