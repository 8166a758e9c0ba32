"""A theory family with several modes: one :class:`Theory` per mode, selected by the spec's ``mode``.

The family is registered under one name; every call is handed to the theory of the spec's mode,
so a mode is one class of its own and adding a mode is one entry in the family's table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from solvers.core.continuation import OnStep
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import Catalogue
from solvers.core.sweep import OnPoint, Sweep
from solvers.theories.base import Predictions, Sizes, Theory

if TYPE_CHECKING:
    from solvers.experiments.target import Target


class Modes(Theory):
    """Dispatches on ``spec.mode``. Subclasses set ``name``, ``summary``, ``spec_model`` and ``modes``."""

    #: mode -> the theory of that mode
    modes: ClassVar[Mapping[str, Theory]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.modes:
            cls.sweepable = tuple(dict.fromkeys(f for t in cls.modes.values() for f in t.sweepable))
            cls.size_limits = {k: v for t in cls.modes.values() for k, v in t.size_limits.items()}
            cls.experiment_size_limits = {k: v for t in cls.modes.values() for k, v in t.experiment_size_limits.items()}
            cls.examples = tuple(e for t in cls.modes.values() for e in t.examples)
            cls.real_integers = tuple(dict.fromkeys(f for t in cls.modes.values() for f in t.real_integers))

    def of(self, spec: BaseModel) -> Theory:
        return self.modes[spec.mode]  # type: ignore[attr-defined]

    def problem(self, spec: BaseModel, parameter: str | None = None, options: SolverOptions | None = None) -> Problem:
        return self.of(spec).problem(spec, parameter, options)

    def two_parameter_problem(
        self, spec: BaseModel, parameters: tuple[str, str], options: SolverOptions | None = None
    ) -> Problem:
        return self.of(spec).two_parameter_problem(spec, parameters, options)

    def sizes(self, spec: BaseModel) -> Sizes:
        return self.of(spec).sizes(spec)

    def memory_bytes(self, spec: BaseModel) -> int:
        return self.of(spec).memory_bytes(spec)

    def memory_fields(self, spec: BaseModel) -> tuple[str | int, ...]:
        return self.of(spec).memory_fields(spec)

    def sweepable_for(self, spec: BaseModel) -> tuple[str, ...]:
        return self.of(spec).sweepable_for(spec)

    def start_names_for(self, spec: BaseModel) -> tuple[str, ...]:
        return self.of(spec).start_names_for(spec)

    def control_value(self, spec: BaseModel, parameter: str | None) -> float:
        return self.of(spec).control_value(spec, parameter)

    def real_integers_for(self, spec: BaseModel) -> tuple[str, ...]:
        return self.of(spec).real_integers_for(spec)

    def experiment_sizes_for(self, spec: BaseModel) -> type[BaseModel]:
        return self.of(spec).experiment_sizes_for(spec)

    def experiment_inits_for(self, spec: BaseModel) -> tuple[str, ...]:
        return self.of(spec).experiment_inits_for(spec)

    def experiment_minibatch_for(self, spec: BaseModel) -> bool:
        return self.of(spec).experiment_minibatch_for(spec)

    def experiment_example_sizes(self, spec: BaseModel) -> Mapping[str, Any]:
        return self.of(spec).experiment_example_sizes(spec)

    def check_experiment(self, spec: BaseModel, sizes: BaseModel) -> Sizes:
        return self.of(spec).check_experiment(spec, sizes)

    def experiment_estimator_sizes(self, spec: BaseModel, sizes: BaseModel) -> Mapping[str, int]:
        return self.of(spec).experiment_estimator_sizes(spec, sizes)

    def experiment(self, spec: BaseModel, sizes: BaseModel, seed: int = 0) -> Target:
        return self.of(spec).experiment(spec, sizes, seed)

    def experiment_predictions(
        self, spec: BaseModel, catalogue: Catalogue, sizes: BaseModel, branch: str | None = None
    ) -> Predictions:
        return self.of(spec).experiment_predictions(spec, catalogue, sizes, branch)

    def solve(self, spec: BaseModel, options: SolverOptions) -> Catalogue:
        return self.of(spec).solve(spec, options)

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
        return self.of(spec).sweep(
            spec, parameter, values, method, options, on_point=on_point, on_step=on_step, stored=stored
        )
