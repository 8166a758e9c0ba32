"""The ``potential`` mode as a :class:`~solvers.theories.base.Theory` of its own."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.theories.base import Example, ExperimentRefused, Theory
from solvers.theories.rubin_cavity.potential.problem import (
    POTENTIAL_FIELDS,
    potential_lines_problem,
    potential_problem,
)
from solvers.theories.rubin_cavity.specs import PotentialSpec


class PotentialTheory(Theory):
    name: ClassVar[str] = "rubin_cavity"
    start_names: ClassVar[tuple[str, ...]] = ("uninformative", "informative")
    summary: ClassVar[str] = "Wells, barriers and phase of the overlap potential Ũ_u(ρ)/D at fixed (b, c, u)."
    spec_model: ClassVar[Any] = PotentialSpec
    sweepable: ClassVar[tuple[str, ...]] = ("u", "b", "c", "sigma_w2", "D")
    examples: ClassVar[tuple[Example, ...]] = (
        Example({"theory": "rubin_cavity", "mode": "potential", "u": 29.45, "D": 150.0, "potential_samples": 21}, "u",
                (20.0, 30.0, 40.0)),
    )

    def sweepable_for(self, spec: BaseModel) -> tuple[str, ...]:
        """``D`` only when the spec gives one (without it, only the D → ∞ picture is reported)."""
        if spec.D is None:  # type: ignore[attr-defined]
            return tuple(f for f in self.sweepable if f != "D")
        return self.sweepable

    def problem(self, spec: BaseModel, parameter: str | None = None, options: SolverOptions | None = None) -> Problem:
        return potential_problem(spec, parameter)  # type: ignore[arg-type]

    def two_parameter_problem(
        self, spec: BaseModel, parameters: tuple[str, str], options: SolverOptions | None = None
    ) -> Problem:
        """Native in any two of (σ_w², b, c, u), the potential's own fields; re-bound otherwise (D)."""
        pair = self.check_pair(spec, parameters)
        if set(pair) <= set(POTENTIAL_FIELDS):
            return potential_lines_problem(spec, pair)  # type: ignore[arg-type]
        return super().two_parameter_problem(spec, pair, options)

    def experiment_sizes_for(self, spec: BaseModel) -> type[BaseModel]:
        raise ExperimentRefused(("model", "mode"), "the potential mode has no network (b, c are given, not learned); "
                                "use finite_sample or self_consistent")
