"""The bound problem of ``finite_sample``: the self-consistency map on the spec's data set, and its report.

The evaluator (data set, kernel geometry, last state) is built once per problem. A single solve
also reports the posterior mean's measured train and test errors (notes of the catalogue); a
sweep does not, since each would cost a P_test x P kernel per point. The cavity treatment solves for
x = (b, c); the tree level for (b, c) and the learnabilities of its variance term (:mod:`.tree_level`); the
unreduced tree level for the exponents of its particles (:mod:`.unreduced.bound`).

(b, c) is a least-squares projection of the mean residual on the sampled [H1, H3]: on a finite sample it may be
negative (the linear part over-learnt on the training inputs, as the sampled network does at low T), so neither
coordinate is projected onto a domain.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import Catalogue, Notes, Report
from solvers.theories.rubin_cavity.common.guards import guarded
from solvers.theories.rubin_cavity.common.network import Network, NetworkAt, network_of
from solvers.theories.rubin_cavity.common.observables import (
    law_wells,
    learned_fractions,
    phase_of_wells,
    weight_covariance,
)
from solvers.theories.rubin_cavity.common.overlap_law import overlap_moments
from solvers.theories.rubin_cavity.common.potential import OverlapPotential
from solvers.theories.rubin_cavity.finite_sample import tree_level
from solvers.theories.rubin_cavity.finite_sample.evaluator import Evaluator, evaluator, population_start
from solvers.theories.rubin_cavity.finite_sample.unreduced.bound import unreduced_problem
from solvers.theories.rubin_cavity.specs import FiniteSampleSpec

BRANCH = "finite_sample"


@dataclass(frozen=True)
class Treatment:
    """What the finite-sample problem of one treatment is made of."""

    names: tuple[str, ...]
    start: Callable[[Network, SolverOptions], np.ndarray]
    potential: Callable[[Network, np.ndarray], OverlapPotential]


CAVITY = Treatment(("b", "c"), population_start, lambda net, x: net.potential(float(x[0]), float(x[1])))
TREE_LEVEL = Treatment(tree_level.NAMES, tree_level.population_start, tree_level.potential_of)


def report(net: Network, x: np.ndarray, potential: OverlapPotential) -> Report:
    b, c = float(x[0]), float(x[1])
    mom = overlap_moments(potential, net.D)
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
    if len(x) > 2:
        observables["tree_level"] = {
            "kappa": net.kappa,
            "learnability": {"H1": float(x[2]), "H3": float(x[4]), "H1_H3": float(x[3]), "perpendicular": float(x[5])},
        }
    return Report({"rho_star": rho_star, "b": b, "c": c, "R": mom.R}, observables)


def finite_sample_problem(
    spec: FiniteSampleSpec, parameter: str | None, options: SolverOptions,
    pilot: tuple[float, float] | None = None,
) -> Problem:
    """The bound problem of the spec's treatment; ``pilot``: the control value at which the unreduced tree level
    draws its particles and the smallest T they serve (default: the spec's own value and T)."""
    if spec.treatment == "tree_level_unreduced":
        if pilot is None:
            p0 = float(getattr(spec, parameter)) if parameter else 0.0
            pilot = (p0, network_of(spec, parameter, p0).T)
        return unreduced_problem(spec, parameter, *pilot)
    ev: Evaluator
    if spec.treatment == "tree_level":
        form = TREE_LEVEL
        ev = tree_level.TreeLevelEvaluator(spec, NetworkAt(network_of(spec), parameter), options)
    else:
        form = CAVITY
        ev = evaluator(spec, parameter, options)
    return _bound(form, ev, options, parameter)


def _bound(form: Treatment, ev: Evaluator, options: SolverOptions, parameter: str | None) -> Problem:
    dim = len(form.names)

    def notes(cat: Catalogue) -> Notes:
        eq = cat.get(cat.equilibrium)
        if eq is None or not eq.converged:
            return Notes()
        return Notes(observables=ev.errors(eq.x, cat.parameter))

    return Problem(
        residual=None,
        fixed_point=guarded(ev.fixed_point, (dim,)),
        dim=dim,
        starts=lambda p: {"population": form.start(ev.net(p), options)},
        jacobian=guarded(ev.jacobian, (dim, dim)),
        kind="saddle",
        label=lambda x, p, start: BRANCH,
        scale=np.ones(dim),
        names=form.names,
        report=lambda x, p: report(ev.net(p), x, form.potential(ev.net(p), x)),
        notes=notes if parameter is None else None,
    )

