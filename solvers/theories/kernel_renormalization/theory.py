"""The ``kernel_renormalization`` theory: Pacelli et al. 2023 with the Corti et al. 2025 signatures."""

from __future__ import annotations

from typing import Any, ClassVar, cast

from pydantic import BaseModel

from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.theories.base import Example, Sizes, Theory
from solvers.theories.kernel_renormalization.model import SWEEPABLE, Model
from solvers.theories.kernel_renormalization.problem import KernelRenormalizationProblem
from solvers.theories.kernel_renormalization.spec import ArraysData, KernelRenormalizationSpec, TeacherData

#: Default size limits (an instance may raise or lower each, ``SADDLELAB_LIMIT_<NAME>``): the solver
#: diagonalises a P×P kernel, stores a P_test×P cross kernel and P×N0 inputs, and maps one layer per
#: hidden layer.
SIZE_LIMITS: dict[str, float] = {"kernel_p": 5000, "kernel_p_test": 10000, "kernel_n0": 20000, "kernel_depth": 20}


def _spec(spec: BaseModel) -> KernelRenormalizationSpec:
    return cast(KernelRenormalizationSpec, spec)


class KernelRenormalizationTheory(Theory):
    name: ClassVar[str] = "kernel_renormalization"
    summary: ClassVar[str] = (
        "Finite-width Bayesian fully connected networks in the proportional limit: GP regression with the "
        "NNGP kernel renormalised by one order parameter Q̄ per layer (Pacelli et al. 2023), the "
        "class-manifold distance and first-layer weight correlations (Corti et al. 2025)."
    )
    spec_model: ClassVar[Any] = KernelRenormalizationSpec
    sweepable: ClassVar[tuple[str, ...]] = SWEEPABLE
    size_limits: ClassVar[dict[str, float]] = SIZE_LIMITS
    examples: ClassVar[tuple[Example, ...]] = (
        Example({"theory": "kernel_renormalization", "activation": "erf", "N1": 20, "T": 0.1,
                 "data": {"kind": "teacher", "P": 30, "P_test": 10, "N0": 8, "seed": 0}}, "T", (0.01, 0.1, 1.0)),
    )

    def sizes(self, spec: BaseModel) -> Sizes:
        """P×P eigendecomposition, P_test×P cross kernel, P×N0 inputs, one layer map per hidden layer."""
        s = _spec(spec)
        data = s.data
        out: Sizes = {"kernel_depth": (("depth",), float(s.depth))}
        if isinstance(data, ArraysData):
            out["kernel_p"] = (("data", "arrays", "X"), float(len(data.X)))
            out["kernel_p_test"] = (("data", "arrays", "X_test"), float(len(data.X_test)))
            out["kernel_n0"] = (("data", "arrays", "X"), float(len(data.X[0])))
        else:
            out["kernel_p"] = (("data", data.kind, "P"), float(data.P))
            out["kernel_p_test"] = (("data", data.kind, "P_test"), float(data.P_test))
            if isinstance(data, TeacherData):
                out["kernel_n0"] = (("data", "teacher", "N0"), float(data.N0))
        return out

    def problem(self, spec: BaseModel, parameter: str | None = None, options: SolverOptions | None = None) -> Problem:
        return KernelRenormalizationProblem(Model(_spec(spec)), parameter).build()
