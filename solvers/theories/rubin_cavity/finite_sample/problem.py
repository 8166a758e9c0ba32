"""The bound problem of ``finite_sample``: the self-consistency map on the spec's data set, and its report.

The evaluator (data set, kernel geometry, last state) is built once per problem. A single solve
also reports the posterior mean's measured train and test errors (notes of the catalogue); a
sweep does not, since each would cost a P_test x P kernel per point.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import Catalogue, Notes, Report
from solvers.theories.rubin_cavity.common.guards import guarded
from solvers.theories.rubin_cavity.common.network import Network
from solvers.theories.rubin_cavity.common.observables import (
    law_wells,
    learned_fractions,
    phase_of_wells,
    weight_covariance,
)
from solvers.theories.rubin_cavity.common.overlap_law import overlap_moments
from solvers.theories.rubin_cavity.finite_sample.evaluator import evaluator, population_start
from solvers.theories.rubin_cavity.specs import FiniteSampleSpec

BRANCH = "finite_sample"


def report(net: Network, x: np.ndarray) -> Report:
    b, c = float(x[0]), float(x[1])
    mom = overlap_moments(net.potential(b, c), net.D)
    aligned = [(wt, w.rho) for w, wt in zip(mom.wells, mom.weights, strict=True) if w.kind == "aligned"]
    rho_star = max(aligned)[1] if aligned else 0.0  # the most populated aligned well
    wells = law_wells(mom)
    observables: dict[str, Any] = {
        "u": net.u,
        "eta": net.eta,
        "phase": phase_of_wells(wells),
        "potential_wells": wells,
        **learned_fractions(net.epsilon, b, c),
        "weight_covariance": weight_covariance(net, mom.R),
    }
    return Report({"rho_star": rho_star, "b": b, "c": c, "R": mom.R}, observables)


def finite_sample_problem(spec: FiniteSampleSpec, parameter: str | None, options: SolverOptions) -> Problem:
    ev = evaluator(spec, parameter, options)

    def notes(cat: Catalogue) -> Notes:
        eq = cat.get(cat.equilibrium)
        if eq is None or not eq.converged:
            return Notes()
        return Notes(observables=ev.errors(eq.x, cat.parameter))

    return Problem(
        residual=None,
        fixed_point=guarded(ev.fixed_point, (2,)),
        dim=2,
        starts=lambda p: {"population": population_start(ev.net(p), options)},
        jacobian=guarded(ev.jacobian, (2, 2)),
        kind="saddle",
        label=lambda x, p, start: BRANCH,
        project=lambda x: np.array([max(x[0], 1e-12), x[1]]),
        scale=np.array([1.0, 1.0]),
        names=("b", "c"),
        report=lambda x, p: report(ev.net(p), x),
        notes=notes if parameter is None else None,
    )
