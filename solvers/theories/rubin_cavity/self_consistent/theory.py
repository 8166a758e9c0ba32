"""``mode: "self_consistent"``: the population theory, reported at D → ∞ and at the spec's finite D.

The equilibrium is the D → ∞ saddle point (unknowns b, c and the aligned mass ω); the finite-D
solution is solved next to it and reported under ``observables.finite_D`` (see :mod:`.problem`).
A sweep in ``u`` moves T = P √(s_a2/(u D)) at fixed P, N, s_a2, D.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel

from solvers.core.continuation import OnStep
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import Catalogue
from solvers.core.sweep import OnPoint, Sweep, run_sweep
from solvers.theories.base import Example, Theory, swept
from solvers.theories.rubin_cavity.common.network import network_of
from solvers.theories.rubin_cavity.common.solving import auto_means_newton
from solvers.theories.rubin_cavity.network_experiment import ErfNetworkExperiment
from solvers.theories.rubin_cavity.self_consistent.problem import self_consistent_problem
from solvers.theories.rubin_cavity.specs import SelfConsistentSpec
from solvers.theories.rubin_cavity.tree_level.problem import tree_level_problem


def _problem(
    spec: SelfConsistentSpec, parameter: str | None, options: SolverOptions, values: Sequence[float]
) -> Problem:
    """The cavity or the tree-level population problem, as the spec's ``treatment`` says."""
    build = tree_level_problem if spec.treatment == "tree_level" else self_consistent_problem
    return build(spec, parameter, options, values)


class SelfConsistentTheory(ErfNetworkExperiment, Theory):
    name: ClassVar[str] = "rubin_cavity"
    start_names: ClassVar[tuple[str, ...]] = ("uninformative", "mixed", "informative", "mean_field", "nngp")
    summary: ClassVar[str] = (
        "Population theory of the 2024 paper: the residual (b, c) self-consistent with the overlap law, at "
        "D → ∞ (with the aligned mass ω) and at finite D; GFL / GMFL phases and their transitions."
    )
    spec_model: ClassVar[Any] = SelfConsistentSpec
    sweepable: ClassVar[tuple[str, ...]] = ("T", "P", "N", "u", "sigma_w2", "epsilon", "s_a2", "D")
    examples: ClassVar[tuple[Example, ...]] = (
        Example({"theory": "rubin_cavity", "mode": "self_consistent"}, "T", (0.15, 0.18, 0.21)),
        Example({"theory": "rubin_cavity", "mode": "self_consistent", "treatment": "tree_level"}, "T", (0.15, 0.21)),
    )

    def control_value(self, spec: BaseModel, parameter: str | None) -> float:
        if parameter == "u":  # not a field: it sets T
            return network_of(spec).u
        return super().control_value(spec, parameter)

    def problem(self, spec: BaseModel, parameter: str | None = None, options: SolverOptions | None = None) -> Problem:
        options = auto_means_newton(options or SolverOptions())
        return _problem(spec, parameter, options, [self.control_value(spec, parameter)])  # type: ignore[arg-type]

    def solve(self, spec: BaseModel, options: SolverOptions) -> Catalogue:
        return super().solve(spec, auto_means_newton(options))

    def sweep(
        self,
        spec: BaseModel,
        parameter: str,
        values: Sequence[float],
        method: str,
        options: SolverOptions,
        *,
        on_point: OnPoint | None = None,
        on_step: OnStep | None = None,
        stored: Mapping[int, Catalogue] | None = None,
    ) -> Sweep:
        """The engine's sweep with Newton for ``auto``, on a problem whose finite-D rule fits every value."""
        options = auto_means_newton(options)
        problem = swept(_problem(spec, parameter, options, values), spec, parameter)  # type: ignore[arg-type]
        return run_sweep(problem, values, options, method=method, on_point=on_point, on_step=on_step, stored=stored)
