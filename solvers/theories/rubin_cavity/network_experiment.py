"""The finite network shared by the modes that describe it: the two-layer erf network on Gaussian inputs with
the H1 + εH3 teacher (``self_consistent`` at D → ∞ and ``finite_sample`` on a sampled training set)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from solvers.core.results import Catalogue
from solvers.theories.base import Predictions, Sizes
from solvers.theories.rubin_cavity import experiment_sizes

if TYPE_CHECKING:
    from solvers.experiments.target import Target


class ErfNetworkExperiment:
    """The experiment half of a rubin_cavity mode's :class:`~solvers.theories.base.Theory` (listed first among
    its bases)."""

    experiment_sizes: ClassVar[Any] = experiment_sizes.ExperimentSizes
    experiment_example: ClassVar[Mapping[str, Any]] = {"P_test": 20}

    def check_experiment(self, spec: BaseModel, sizes: BaseModel) -> Sizes:
        return experiment_sizes.check(spec, sizes)  # type: ignore[arg-type]

    def experiment_estimator_sizes(self, spec: BaseModel, sizes: BaseModel) -> Mapping[str, int]:
        return experiment_sizes.estimator_sizes(spec, sizes)  # type: ignore[arg-type]

    def experiment(self, spec: BaseModel, sizes: BaseModel, seed: int = 0) -> Target:
        from solvers.theories.rubin_cavity.experiment import build_target

        return build_target(spec, sizes, seed)  # type: ignore[arg-type]

    def experiment_predictions(
        self, spec: BaseModel, catalogue: Catalogue, sizes: BaseModel, branch: str | None = None
    ) -> Predictions:
        from solvers.theories.rubin_cavity.experiment import theory_observables

        return theory_observables(catalogue, branch=branch)
