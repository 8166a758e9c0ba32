"""The ``rubin_cavity`` theory: one ``Theory`` dispatching on the spec's ``mode``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel

from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.theories.base import OnPoint, Theory
from solvers.theories.rubin_cavity import finite_sample_mode, potential_mode, self_consistent_mode
from solvers.theories.rubin_cavity.specs import LIMITS, SWEEPABLE, FiniteSampleSpec, PotentialSpec, RubinCavitySpec


class RubinCavityTheory(Theory):
    name: ClassVar[str] = "rubin_cavity"
    summary: ClassVar[str] = (
        "Cavity / adaptive-kernel theory of a two-layer erf network learning H1 + ε H3 (Rubin, Seroussi & Ringel "
        "2024; Rubin et al. 2025): overlap potential and its wells, self-consistent residual (b, c), GFL / GMFL "
        "phases, first-order transition and spinodals, learning curves, and the same loop on a finite training set."
    )
    spec_model: ClassVar[Any] = RubinCavitySpec
    sweepable: ClassVar[tuple[str, ...]] = tuple(dict.fromkeys(f for fs in SWEEPABLE.values() for f in fs))
    size_limits: ClassVar[dict[str, float]] = {
        "finite_sample_p": LIMITS.max_P,
        "finite_sample_p_test": LIMITS.max_P_test,
        "finite_sample_d": LIMITS.max_D,
    }

    def sizes(self, spec: BaseModel) -> dict[str, tuple[tuple[str | int, ...], float]]:
        """finite_sample builds P x P (and P_test x P) kernels from P x D inputs; the other modes have no sizes."""
        if not isinstance(spec, FiniteSampleSpec):
            return {}
        return {
            "finite_sample_p": (("P",), float(spec.P)),
            "finite_sample_p_test": (("P_test",), float(spec.P_test)),
            "finite_sample_d": (("D",), float(spec.D)),
        }

    def sweepable_for(self, spec: BaseModel) -> tuple[str, ...]:
        """Fields a sweep may vary for this spec's mode (``u`` of self_consistent moves T; a potential's D
        only when it is given)."""
        fields = SWEEPABLE[spec.mode]  # type: ignore[attr-defined]
        if isinstance(spec, PotentialSpec) and spec.D is None:
            fields = tuple(f for f in fields if f != "D")
        return fields

    # ---- the swept value ----------------------------------------------------------------------
    def control_value(self, spec: BaseModel, parameter: str | None) -> float:
        if parameter == "u" and spec.mode == "self_consistent":  # type: ignore[attr-defined]
            return self_consistent_mode.u_of(spec)  # type: ignore[arg-type]
        return super().control_value(spec, parameter)

    def with_value(self, spec: BaseModel, parameter: str | None, p: float) -> BaseModel:
        if parameter == "u" and spec.mode == "self_consistent":  # type: ignore[attr-defined]
            return spec.model_copy(update={"T": self_consistent_mode.T_for_u(spec, p)})  # type: ignore[arg-type]
        if parameter and isinstance(getattr(spec, parameter, None), int) and not isinstance(p, int):
            return spec.model_copy(update={parameter: round(p)})
        return super().with_value(spec, parameter, p)

    # ---- the three modes -------------------------------------------------------------------------
    def problem(self, spec: BaseModel, parameter: str | None, options: SolverOptions) -> Problem:
        if isinstance(spec, PotentialSpec):
            return potential_mode.potential_problem(spec, parameter)
        if isinstance(spec, FiniteSampleSpec):
            return finite_sample_mode.problem(spec, parameter, options)
        return self_consistent_mode.problem(spec, parameter)  # type: ignore[arg-type]

    def order_parameters(self, spec: BaseModel, x: np.ndarray, p: float) -> dict[str, Any]:
        if isinstance(spec, PotentialSpec):
            return potential_mode.order_parameters(spec, x)
        if isinstance(spec, FiniteSampleSpec):
            return finite_sample_mode.order_parameters(spec, x)
        return self_consistent_mode.order_parameters(spec, x)  # type: ignore[arg-type]

    def observables(self, spec: BaseModel, x: np.ndarray, p: float) -> dict[str, Any]:
        if isinstance(spec, PotentialSpec):
            return potential_mode.observables(spec, x)
        if isinstance(spec, FiniteSampleSpec):
            return finite_sample_mode.observables(spec, x)
        return self_consistent_mode.observables(spec, x)  # type: ignore[arg-type]

    def solve(self, spec: BaseModel, options: SolverOptions) -> dict[str, Any]:
        if spec.mode == "self_consistent":  # type: ignore[attr-defined]
            return self_consistent_mode.solve(self, spec, options)  # type: ignore[arg-type]
        if spec.mode == "finite_sample":  # type: ignore[attr-defined]
            return finite_sample_mode.solve(self, spec, options)  # type: ignore[arg-type]
        return super().solve(spec, options)

    def sweep(
        self,
        spec: BaseModel,
        parameter: str,
        values: Sequence[float],
        method: str,
        options: SolverOptions,
        on_point: OnPoint | None = None,
    ) -> dict[str, Any]:
        if spec.mode == "self_consistent":  # type: ignore[attr-defined]
            return self_consistent_mode.sweep(self, spec, parameter, values, method, options, on_point)  # type: ignore[arg-type]
        if spec.mode == "finite_sample":  # type: ignore[attr-defined]
            # One branch and no transitions to locate, and every step costs a P x P kernel and factorisation:
            # warm-started grid solves are the cheapest honest sweep.
            options = finite_sample_mode.newton_options(options)
            return super().sweep(spec, parameter, values, "grid", options, on_point)
        return super().sweep(spec, parameter, values, method, options, on_point)
