"""The finite-D solution next to the saddle point: reported as ``observables.finite_D`` of every catalogue.

p(ρ) ∝ exp(−D Ŝ) is integrated by the fixed rule of :mod:`.quadrature`. Each solve is
warm-started from the previous point's solution (closest along a sweep, whose points are
reported in order), then from the saddle point; the warm start belongs to one bound problem.
What differs between treatments (the finite-D problem, its start from the saddle point, the block it
reports) is a :class:`FiniteDForm`; the cavity's is :data:`CAVITY`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.core.catalogue import solve_catalogue
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import SolveResult
from solvers.core.solve import solve_at
from solvers.theories.rubin_cavity.common.network import Network, NetworkAt
from solvers.theories.rubin_cavity.common.observables import (
    law_wells,
    learned_fractions,
    phase_of_wells,
    weight_covariance,
)
from solvers.theories.rubin_cavity.common.overlap_law import overlap_moments
from solvers.theories.rubin_cavity.common.potential import OverlapPotential
from solvers.theories.rubin_cavity.self_consistent.quadrature import panel_count, quadrature_problem


def finite_d_block(net: Network, result: SolveResult) -> dict[str, Any]:
    b, c = float(result.x[0]), float(result.x[1])
    return law_block(net, b, c, result, lambda: net.potential(b, c))


def law_block(
    net: Network, b: float, c: float, result: SolveResult, potential: Callable[[], OverlapPotential]
) -> dict[str, Any]:
    """(b, c) of a finite-D solve with its diagnostics, and the wells and moments of its law when it converged."""
    block: dict[str, Any] = {
        "converged": result.converged,
        "b": b,
        "c": c,
        **learned_fractions(net.epsilon, b, c),
        "diagnostics": result,  # the service reports a solve's diagnostics the same way everywhere
    }
    if not result.converged:
        return block
    mom = overlap_moments(potential(), net.D)
    wells = law_wells(mom)
    block.update(
        {
            "R": mom.R,
            "potential_wells": wells,
            "phase": phase_of_wells(wells),
            "weight_covariance": weight_covariance(net, mom.R),
        }
    )
    return block


@dataclass(frozen=True)
class FiniteDForm:
    """A treatment's finite-D problem (on a rule of so many panels), its start from the D → ∞ saddle point's x,
    and the block it reports for a solve."""

    problem: Callable[[NetworkAt, int], Problem]
    from_saddle: Callable[[np.ndarray, Network], np.ndarray]
    block: Callable[[Network, SolveResult], dict[str, Any]]


CAVITY = FiniteDForm(quadrature_problem, lambda x, net: np.asarray(x[:2], dtype=float), finite_d_block)


class FiniteD:
    """Solves the finite-D problem along a sequence of parameter values, warm-starting each from the last.

    The panel count is the largest any of ``values`` needs, so the rule (and the solution) is smooth in p.
    """

    def __init__(
        self, network_at: NetworkAt, values: Sequence[float], options: SolverOptions, form: FiniteDForm = CAVITY
    ):
        nets = [network_at(p) for p in values] or [network_at.base]
        panels = max(panel_count(net, options.quadrature_order) for net in nets)
        self.network_at = network_at
        self.form = form
        self.problem = form.problem(network_at, panels)
        self.options = options
        self.last: np.ndarray | None = None

    def block(self, p: float, saddle_x: np.ndarray | None) -> dict[str, Any]:
        starts: dict[str, np.ndarray] = {}
        if self.last is not None:  # the previous sweep point is closest in a sweep
            starts["previous"] = self.last
        if saddle_x is not None:
            starts["saddle"] = self.form.from_saddle(np.asarray(saddle_x, dtype=float), self.network_at(p))
        res = None
        for x0 in starts.values():
            res = solve_at(self.problem, p, x0, self.options)
            if res.converged:
                break
        if res is None or not res.converged:
            cat = solve_catalogue(self.problem, p, self.options, extra_starts=starts)
            eq = cat.get(cat.equilibrium) or (cat.branches[0] if cat.branches else None)
            if eq is not None:
                res = eq.result
        assert res is not None
        if res.converged:
            self.last = res.x.copy()
        return self.form.block(self.network_at(p), res)
