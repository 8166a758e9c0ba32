"""``mode: "finite_sample"``: the self-consistency loop of the cavity derivation on an actual training set."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel

from solvers.core.continuation import OnStep
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import Catalogue
from solvers.core.sweep import OnPoint, Sweep
from solvers.theories.base import Example, Sizes, Theory
from solvers.theories.rubin_cavity.common.solving import auto_means_newton
from solvers.theories.rubin_cavity.finite_sample.problem import finite_sample_problem
from solvers.theories.rubin_cavity.specs import FiniteSampleSpec


class FiniteSampleTheory(Theory):
    name: ClassVar[str] = "rubin_cavity"
    summary: ClassVar[str] = (
        "The cavity self-consistency loop on P seeded Gaussian inputs: the adaptive kernel on the data, kernel "
        "regression, and (b, c) from the least-squares projection of the mean residual."
    )
    spec_model: ClassVar[Any] = FiniteSampleSpec
    sweepable: ClassVar[tuple[str, ...]] = ("T", "N", "s_a2", "epsilon", "sigma_w2")
    examples: ClassVar[tuple[Example, ...]] = (
        Example(
            {
                "theory": "rubin_cavity",
                "mode": "finite_sample",
                "P": 100,
                "D": 20,
                "N": 100.0,
                "s_a2": 8 / 100**2,
                "T": 0.3,
                "P_test": 20,
            },
            "T",
            (0.25, 0.3),
            "grid",
        ),
    )
    #: P x P kernels and factorisations from P x D inputs, and a P_test x P test kernel.
    size_limits: ClassVar[dict[str, float]] = {
        "finite_sample_p": 5000,
        "finite_sample_p_test": 20000,
        "finite_sample_d": 20000,
    }

    def sizes(self, spec: BaseModel) -> Sizes:
        return {
            "finite_sample_p": (("P",), float(spec.P)),  # type: ignore[attr-defined]
            "finite_sample_p_test": (("P_test",), float(spec.P_test)),  # type: ignore[attr-defined]
            "finite_sample_d": (("D",), float(spec.D)),  # type: ignore[attr-defined]
        }

    def problem(self, spec: BaseModel, parameter: str | None = None, options: SolverOptions | None = None) -> Problem:
        return finite_sample_problem(spec, parameter, options or SolverOptions())  # type: ignore[arg-type]

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
        """Always a warm-started grid with Newton: one branch and no special points to trace, and every
        continuation step would cost a P x P kernel and factorisation."""
        return super().sweep(
            spec,
            parameter,
            values,
            "grid",
            auto_means_newton(options),
            on_point=on_point,
            on_step=on_step,
            stored=stored,
        )
