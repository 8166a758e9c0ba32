"""The ``kernel_renormalization`` theory: Pacelli et al. 2023 with the Corti et al. 2025 signatures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, cast

from pydantic import BaseModel

from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import Catalogue
from solvers.theories.base import Example, Predictions, Sizes, Theory
from solvers.theories.kernel_renormalization import experiment_sizes
from solvers.theories.kernel_renormalization.model import SWEEPABLE, Model
from solvers.theories.kernel_renormalization.problem import KernelRenormalizationProblem
from solvers.theories.kernel_renormalization.quantities import QUANTITIES
from solvers.theories.kernel_renormalization.spec import ArraysData, KernelRenormalizationSpec, TeacherData
from solvers.theories.quantities import QuantityTable

if TYPE_CHECKING:
    from solvers.experiments.target import Target

#: Default size limits (an instance may raise or lower each, ``SADDLELAB_LIMIT_<NAME>``): the solver
#: diagonalises a P×P kernel, stores a P_test×P cross kernel and P×N0 inputs, and maps one layer per
#: hidden layer.
SIZE_LIMITS: dict[str, float] = {"kernel_p": 5000, "kernel_p_test": 10000, "kernel_n0": 20000, "kernel_depth": 20}

#: Doubles allocated at the peak of a solve, per unit of each size product (upper fits to the peak resident
#: memory measured in fresh processes over P ≤ 3000, P_test ≤ 10000, N0 ≤ 8000, depth ≤ 3, which needed about
#: 5.2 P² + 0.8 P·P_test + 1.8 (P + P_test)·N0; the nested deep kernel keeps two more P×P blocks per layer).
MEMORY_PER_P2, MEMORY_PER_P_PTEST, MEMORY_PER_INPUT = 6.0, 3.0, 3.0
#: Libraries' working buffers (LAPACK workspaces, the BLAS threads' buffers) on top of the arrays.
MEMORY_OVERHEAD = 64 * 2**20


def _spec(spec: BaseModel) -> KernelRenormalizationSpec:
    return cast(KernelRenormalizationSpec, spec)


class KernelRenormalizationTheory(Theory):
    name: ClassVar[str] = "kernel_renormalization"
    start_names: ClassVar[tuple[str, ...]] = ("nngp", "vanilla")
    summary: ClassVar[str] = (
        "Finite-width Bayesian fully connected networks in the proportional limit: GP regression with the "
        "NNGP kernel renormalised by one order parameter Q̄ per layer (Pacelli et al. 2023), the "
        "class-manifold distance and first-layer weight correlations (Corti et al. 2025)."
    )
    spec_model: ClassVar[Any] = KernelRenormalizationSpec
    quantities: ClassVar[QuantityTable] = QUANTITIES
    sweepable: ClassVar[tuple[str, ...]] = SWEEPABLE
    #: N1 enters the action as a real number (φ/N1, α = P/N1). Integers only: the depth L (the number of layers of
    #: the kernel recursion) and the data's P, P_test and N0 (the shapes of the inputs and of the kernel).
    real_integers: ClassVar[tuple[str, ...]] = ("N1",)
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

    def _memory_terms(self, spec: BaseModel) -> dict[tuple[str | int, ...], float]:
        """Bytes of each term of the estimate, by the field that drives it."""
        s = _spec(spec)
        sizes = self.sizes(s)
        P, Pt = sizes["kernel_p"][1], sizes["kernel_p_test"][1]
        N0 = sizes["kernel_n0"][1] if "kernel_n0" in sizes else 64.0  # the digits are 8 x 8 images
        p2 = MEMORY_PER_P2 + (2.0 * (s.depth - 1) if s.deep_kernel == "nested" else 0.0)
        input_loc = sizes["kernel_n0"][0] if "kernel_n0" in sizes else sizes["kernel_p"][0]
        return {
            sizes["kernel_p"][0]: 8.0 * p2 * P * P,
            sizes["kernel_p_test"][0]: 8.0 * MEMORY_PER_P_PTEST * P * Pt,
            input_loc: 8.0 * MEMORY_PER_INPUT * (P + Pt) * N0,
        }

    def memory_bytes(self, spec: BaseModel) -> int:
        """The P×P kernel and its eigendecomposition, the P_test×P cross kernel, the P×N0 and P_test×N0 inputs."""
        return int(MEMORY_OVERHEAD + sum(self._memory_terms(spec).values()))

    def memory_fields(self, spec: BaseModel) -> tuple[str | int, ...]:
        terms = self._memory_terms(spec)
        return max(terms, key=lambda loc: terms[loc])

    def result_numbers(self, spec: BaseModel) -> tuple[tuple[str | int, ...], float]:
        """The predictor's mean and variance at every test point (``test_mean``, ``test_variance``)."""
        loc, p_test = self.sizes(_spec(spec))["kernel_p_test"]
        return loc, 2.0 * p_test

    def problem(self, spec: BaseModel, parameter: str | None = None, options: SolverOptions | None = None) -> Problem:
        return KernelRenormalizationProblem(Model(_spec(spec)), parameter).build()

    # ---- the finite network ---------------------------------------------------------------------
    experiment_sizes: ClassVar[Any] = experiment_sizes.ExperimentSizes

    def check_experiment(self, spec: BaseModel, sizes: BaseModel) -> Sizes:
        return experiment_sizes.check(_spec(spec), cast(experiment_sizes.ExperimentSizes, sizes))

    def experiment_estimator_sizes(self, spec: BaseModel, sizes: BaseModel) -> Mapping[str, int]:
        sizes_ = cast(experiment_sizes.ExperimentSizes, sizes)
        return experiment_sizes.estimator_sizes(_spec(spec), sizes_)

    def experiment(self, spec: BaseModel, sizes: BaseModel, seed: int = 0) -> Target:
        from solvers.theories.kernel_renormalization.experiment import build_target

        return build_target(_spec(spec), cast(experiment_sizes.ExperimentSizes, sizes), seed)

    def experiment_predictions(
        self, spec: BaseModel, catalogue: Catalogue, sizes: BaseModel, branch: str | None = None
    ) -> Predictions:
        from solvers.theories.kernel_renormalization.experiment import theory_observables

        return theory_observables(catalogue, sizes=cast(experiment_sizes.ExperimentSizes, sizes), branch=branch)
