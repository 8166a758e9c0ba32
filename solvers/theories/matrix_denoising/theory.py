"""The ``matrix_denoising`` theory: mmse(λ), overlap 1 − mmse and the I-MMSE integral ι(λ) of extensive-rank denoising.

Two shapes: ``symmetric`` (the default: S̃ = WᵀD_vW/√(kd) through GOE noise, 4ι' = mmse) and ``rectangular``
(X = AB/√k of shape (ηd) × d through iid Gaussian noise, 2ι' = mmse; tables per (γ, η)).

There is one branch (the Bayes-optimal estimator is unique). It still goes through the engine: the
Problem's unknown is the overlap x = m_S and its residual is x − m_S(λ), so that the result has the
common shape (branches, equilibrium, diagnostics). m_S(λ) comes from the cached table for (γ, readout)
(or (γ, η)) when the swept or solved parameter is the SNR; when a ratio (γ, or η) is swept, building a
table per value would be wasteful, so m_S is computed directly at that one λ (ι then needs ∫_0^λ mmse,
done by Gauss–Legendre quadrature of direct evaluations).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
from pydantic import BaseModel

from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import Catalogue, Report
from solvers.theories.base import Example, Predictions, Sizes, Theory
from solvers.theories.matrix_denoising import experiment_sizes
from solvers.theories.matrix_denoising.quantities import QUANTITIES
from solvers.theories.matrix_denoising.spec import MatrixDenoisingSpec
from solvers.theories.matrix_denoising.values import DenoisingValues, rectangular_values_at, values_at
from solvers.theories.quantities import QuantityTable

if TYPE_CHECKING:
    from solvers.experiments.target import Target

BRANCH = "bayes_optimal"


class MatrixDenoisingTheory(Theory):
    name: ClassVar[str] = "matrix_denoising"
    start_names: ClassVar[tuple[str, ...]] = (BRANCH,)
    summary: ClassVar[str] = (
        "Extensive-rank symmetric matrix denoising Y = √λ S̃ + Z with S̃ = WᵀD_vW/√(kd): MMSE, overlap "
        "m_S = 1 − mmse and the I-MMSE integral ι(λ) = (1/d²) I(S̃; Y) (the matrix channel of the HCIZ theory); "
        "rectangular shape: X = AB/√k of shape (ηd) × d through iid Gaussian noise (Troiani et al.'s "
        "rotation-invariant estimator), the product-matrix channel of two-hidden-layer networks."
    )
    spec_model: ClassVar[Any] = MatrixDenoisingSpec
    quantities: ClassVar[QuantityTable] = QUANTITIES
    sweepable: ClassVar[tuple[str, ...]] = ("snr", "gamma", "eta")
    examples: ClassVar[tuple[Example, ...]] = (
        Example({"theory": "matrix_denoising", "gamma": 0.5, "readout": "ones", "snr": 2.0}, "snr", (0.5, 1.0, 4.0)),
        Example({"theory": "matrix_denoising", "shape": "rectangular", "gamma": 0.5, "eta": 2.0, "snr": 2.0},
                "snr", (0.5, 1.0, 4.0)),
    )

    def sweepable_for(self, spec: BaseModel) -> tuple[str, ...]:
        """η exists only for the rectangular shape."""
        return self.sweepable if spec.shape == "rectangular" else ("snr", "gamma")  # type: ignore[attr-defined]

    def problem(self, spec: BaseModel, parameter: str | None = None, options: SolverOptions | None = None) -> Problem:
        if parameter not in (None, *self.sweepable_for(spec)):
            raise ValueError(f"{parameter!r} is not sweepable for this spec")
        gamma0, snr0, readout = float(spec.gamma), float(spec.snr), spec.readout  # type: ignore[attr-defined]
        rectangular = spec.shape == "rectangular"  # type: ignore[attr-defined]
        eta0 = float(spec.eta) if rectangular else 0.0  # type: ignore[attr-defined]
        # A sweep of a ratio (γ, or η) computes m_S directly at each point (a table per value would be
        # wasteful); the report reads the same source as the residual.
        use_table = parameter not in ("gamma", "eta")

        def at(p: float) -> DenoisingValues:
            gamma = p if parameter == "gamma" else gamma0
            snr = p if parameter == "snr" else snr0
            if rectangular:
                eta = p if parameter == "eta" else eta0
                return rectangular_values_at(float(gamma), float(eta), float(snr), use_table=use_table)
            return values_at(float(gamma), readout, float(snr), use_table=use_table)

        def residual(x: np.ndarray, p: float) -> np.ndarray:
            return np.array([x[0] - at(p).overlap])

        def report(x: np.ndarray, p: float) -> Report:
            return Report({"overlap": float(x[0])}, at(p).as_observables())

        return Problem(
            residual=residual,
            dim=1,
            starts=lambda p: {BRANCH: np.array([0.0])},
            jacobian=lambda x, p: np.array([[1.0]]),
            stability=lambda x, p: 1.0,  # a unique minimiser: nothing to be unstable against
            kind="saddle",
            label=lambda x, p, start: BRANCH,
            project=lambda x: np.clip(x, 0.0, 1.0),
            scale=np.array([1.0]),
            names=("overlap",),
            report=report,
        )

    # ---- the finite problem -----------------------------------------------------------------------
    experiment_sizes: ClassVar[Any] = experiment_sizes.ExperimentSizes
    experiment_inits: ClassVar[tuple[str, ...]] = ("prior", "teacher")
    experiment_example: ClassVar[Mapping[str, Any]] = {"d": 8}

    def check_experiment(self, spec: BaseModel, sizes: BaseModel) -> Sizes:
        return experiment_sizes.check(cast(MatrixDenoisingSpec, spec), cast(experiment_sizes.ExperimentSizes, sizes))

    def experiment_estimator_sizes(self, spec: BaseModel, sizes: BaseModel) -> Mapping[str, int]:
        sizes_ = cast(experiment_sizes.ExperimentSizes, sizes)
        return experiment_sizes.estimator_sizes(cast(MatrixDenoisingSpec, spec), sizes_)

    def experiment(self, spec: BaseModel, sizes: BaseModel, seed: int = 0) -> Target:
        from solvers.theories.matrix_denoising.experiment import build_target

        return build_target(cast(MatrixDenoisingSpec, spec), cast(experiment_sizes.ExperimentSizes, sizes), seed)

    def experiment_predictions(
        self, spec: BaseModel, catalogue: Catalogue, sizes: BaseModel, branch: str | None = None
    ) -> Predictions:
        from solvers.theories.matrix_denoising.experiment import theory_observables

        return theory_observables(catalogue, branch=branch)
