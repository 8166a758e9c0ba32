"""The ``matrix_denoising`` theory: mmse(λ), overlap 1 − mmse and the I-MMSE integral ι(λ) of extensive-rank denoising.

Two shapes: ``symmetric`` (the default: S̃ = WᵀD_vW/√(kd) through GOE noise, 4ι' = mmse) and ``rectangular``
(X = AB/√k of shape (ηd) × d through iid Gaussian noise, 2ι' = mmse; tables per (γ, η)).

There is one branch (the Bayes-optimal estimator is unique). It still goes through the engine: the
Problem's unknown is the overlap x = m_S and its residual is x − m_S(λ), so that the result has the
common shape (branches, equilibrium, diagnostics). m_S(λ) comes from the cached table for (γ, readout)
when the swept or solved parameter is the SNR; when γ itself is swept, building a table per γ would be
wasteful, so m_S is computed directly at that one λ (ι then needs ∫_0^λ mmse, done by Gauss–Legendre
quadrature of direct evaluations).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel

from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.theories.base import Theory
from solvers.theories.matrix_denoising.rectangular_table import cached_rectangular_table
from solvers.theories.matrix_denoising.spec import MatrixDenoisingSpec
from solvers.theories.matrix_denoising.table import cached_table
from solvers.theories.matrix_denoising.values import (
    DenoisingValues,
    direct_rectangular_values_cached,
    direct_values_cached,
    rectangular_values_at,
    values_at,
)

BRANCH = "bayes_optimal"


class MatrixDenoisingTheory(Theory):
    name: ClassVar[str] = "matrix_denoising"
    summary: ClassVar[str] = (
        "Extensive-rank symmetric matrix denoising Y = √λ S̃ + Z with S̃ = WᵀD_vW/√(kd): MMSE, overlap "
        "m_S = 1 − mmse and the I-MMSE integral ι(λ) = (1/d²) I(S̃; Y) (the matrix channel of the HCIZ theory); "
        "rectangular shape: X = AB/√k of shape (ηd) × d through iid Gaussian noise (Troiani et al.'s "
        "rotation-invariant estimator), the product-matrix channel of two-hidden-layer networks."
    )
    spec_model: ClassVar[Any] = MatrixDenoisingSpec
    sweepable: ClassVar[tuple[str, ...]] = ("snr", "gamma", "eta")

    def sweepable_for(self, spec: BaseModel) -> tuple[str, ...]:
        return self.sweepable if spec.shape == "rectangular" else ("snr", "gamma")  # type: ignore[attr-defined]

    def _at(self, spec: BaseModel, parameter: str | None, p: float) -> DenoisingValues:
        gamma = p if parameter == "gamma" else spec.gamma  # type: ignore[attr-defined]
        snr = p if parameter == "snr" else spec.snr  # type: ignore[attr-defined]
        if spec.shape == "rectangular":  # type: ignore[attr-defined]
            eta = p if parameter == "eta" else spec.eta  # type: ignore[attr-defined]
            direct = parameter in ("gamma", "eta")  # a table per swept ratio would be wasteful
            return rectangular_values_at(float(gamma), float(eta), float(snr), use_table=not direct)
        return values_at(float(gamma), spec.readout, float(snr), use_table=parameter != "gamma")  # type: ignore[attr-defined]

    def problem(self, spec: BaseModel, parameter: str | None, options: SolverOptions) -> Problem:
        def target(p: float) -> float:
            return self._at(spec, parameter, p).overlap

        def residual(x: np.ndarray, p: float) -> np.ndarray:
            return np.array([x[0] - target(p)])

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
        )

    def order_parameters(self, spec: BaseModel, x: np.ndarray, p: float) -> dict[str, Any]:
        return {"overlap": float(x[0])}

    def observables(self, spec: BaseModel, x: np.ndarray, p: float) -> dict[str, Any]:
        # The spec handed over already carries the swept value (Theory.with_value). The residual has been
        # evaluated at this point, so the same source is reused: the table when it exists, else the direct
        # values cached by the residual (a γ sweep).
        gamma, readout, snr = float(spec.gamma), spec.readout, float(spec.snr)  # type: ignore[attr-defined]
        if spec.shape == "rectangular":  # type: ignore[attr-defined]
            eta = float(spec.eta)  # type: ignore[attr-defined]
            use = cached_rectangular_table(gamma, eta) is not None or not direct_rectangular_values_cached(
                gamma, eta, snr)
            return rectangular_values_at(gamma, eta, snr, use_table=use).as_observables()
        use_table = cached_table(gamma, readout) is not None or not direct_values_cached(gamma, readout, snr)
        return values_at(gamma, readout, snr, use_table=use_table).as_observables()
