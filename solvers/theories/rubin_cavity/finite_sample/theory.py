"""``mode: "finite_sample"``: the self-consistency loop of the cavity derivation on an actual training set."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel

from solvers.core.continuation import OnStep
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import Catalogue
from solvers.core.sweep import OnPoint, Sweep, run_sweep
from solvers.theories.base import Example, Sizes, Theory, swept
from solvers.theories.rubin_cavity.common.network import network_of
from solvers.theories.rubin_cavity.common.solving import auto_means_newton
from solvers.theories.rubin_cavity.finite_sample.evaluator import LAW_NODES
from solvers.theories.rubin_cavity.finite_sample.kernel import MAX_ORDER
from solvers.theories.rubin_cavity.finite_sample.problem import finite_sample_problem
from solvers.theories.rubin_cavity.network_experiment import ErfNetworkExperiment
from solvers.theories.rubin_cavity.specs import FiniteSampleSpec

#: Doubles allocated at the peak of a solve per unit of each size product: the P×P kernel, its Cholesky
#: factor and derivatives (measured: about 4 P²), the P_test×P test kernel and its Gram matrix (about 3 P·P_test),
#: the inputs, and the Hermite features of every sample at every order and node (two copies), bounded by
#: the largest series order. Upper fits to peaks measured in fresh processes (P ≤ 3000, P_test ≤ 4000, D ≤ 1000).
MEMORY_PER_P2, MEMORY_PER_P_PTEST, MEMORY_PER_INPUT = 6.0, 5.0, 2.0
MEMORY_PER_SAMPLE = 2.0 * (MAX_ORDER + 1) * LAW_NODES
#: The tree level keeps the training coordinates ⊥ e and solves (K + T I) against them: three P × D arrays.
MEMORY_PER_PERP = 3.0
#: Libraries' working buffers on top of the arrays.
MEMORY_OVERHEAD = 64 * 2**20
#: The unreduced tree level: the closure's n × n Jacobian and the bordered matrix of a continuation step with its
#: factorisation (about 4 n²), the particles' features on the training and test inputs (n × (P + P_test)), and every
#: post-burn-in state of the sampler (nodes × chains × samples × thin × D, the node weights' Bennett ratios).
MEMORY_PER_PARTICLE2 = 4.0
#: The particle count a single instance solves on by default at most (the closure is dense in the particles).
MAX_PARTICLES = 6000


class FiniteSampleTheory(ErfNetworkExperiment, Theory):
    name: ClassVar[str] = "rubin_cavity"
    start_names: ClassVar[tuple[str, ...]] = ("population", "pilot", "uninformative", "mean_field", "nngp")
    summary: ClassVar[str] = (
        "The cavity self-consistency loop on P seeded Gaussian inputs: the adaptive kernel on the data, kernel "
        "regression, and (b, c) from the least-squares projection of the mean residual."
    )
    spec_model: ClassVar[Any] = FiniteSampleSpec
    sweepable: ClassVar[tuple[str, ...]] = ("T", "N", "s_a2", "epsilon", "sigma_w2")
    #: None: D, P and P_test fix the shapes of the seeded inputs and of the P × P kernel (N is a real field already).
    real_integers: ClassVar[tuple[str, ...]] = ()
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
        Example(
            {
                "theory": "rubin_cavity",
                "mode": "finite_sample",
                "treatment": "tree_level_unreduced",
                "P": 20,
                "D": 4,
                "N": 20.0,
                "s_a2": 1 / 20,
                "T": 0.5,
                "P_test": 20,
                "particles": {"nodes": 9, "chains": 4, "samples": 4, "burn_in": 40, "thin": 2, "rho_max": 2.5},
            },
            "T",
            (0.4, 0.5),
            "grid",
        ),
        Example(
            {
                "theory": "rubin_cavity",
                "mode": "finite_sample",
                "treatment": "tree_level",
                "P": 60,
                "D": 10,
                "N": 60.0,
                "s_a2": 8 / 60**2,
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
        "finite_sample_particles": MAX_PARTICLES,
    }

    def sizes(self, spec: BaseModel) -> Sizes:
        out: Sizes = {
            "finite_sample_p": (("P",), float(spec.P)),  # type: ignore[attr-defined]
            "finite_sample_p_test": (("P_test",), float(spec.P_test)),  # type: ignore[attr-defined]
            "finite_sample_d": (("D",), float(spec.D)),  # type: ignore[attr-defined]
        }
        if spec.treatment == "tree_level_unreduced":  # type: ignore[attr-defined]
            out["finite_sample_particles"] = (("particles",), float(spec.particle_settings.count))  # type: ignore[attr-defined]
        return out

    def sweepable_for(self, spec: BaseModel) -> tuple[str, ...]:
        """The unreduced tree level's particles are drawn under the prior of w, so σ_w² is not swept there."""
        if spec.treatment == "tree_level_unreduced":  # type: ignore[attr-defined]
            return tuple(p for p in self.sweepable if p != "sigma_w2")
        return self.sweepable

    def _memory_terms(self, spec: BaseModel) -> dict[tuple[str | int, ...], float]:
        P, Pt, D = float(spec.P), float(spec.P_test), float(spec.D)  # type: ignore[attr-defined]
        tree_level = spec.treatment.startswith("tree_level")  # type: ignore[attr-defined]
        terms = {
            ("P",): 8.0 * (MEMORY_PER_P2 * P * P + MEMORY_PER_SAMPLE * P),
            ("P_test",): 8.0 * (MEMORY_PER_P_PTEST * P * Pt + MEMORY_PER_SAMPLE * Pt),
            ("D",): 8.0 * (MEMORY_PER_INPUT * (P + Pt) * D + (MEMORY_PER_PERP * P * D if tree_level else 0.0)),
        }
        if spec.treatment == "tree_level_unreduced":  # type: ignore[attr-defined]
            ps = spec.particle_settings  # type: ignore[attr-defined]
            n = float(ps.count)
            states = float(ps.nodes * ps.chains * ps.samples * ps.thin)
            terms[("particles",)] = 8.0 * (MEMORY_PER_PARTICLE2 * n * n + n * (P + Pt) + states * D)
        return terms

    def memory_bytes(self, spec: BaseModel) -> int:
        """P×P and P_test×P kernels, P×D and P_test×D inputs, Hermite features per sample, order and node."""
        return int(MEMORY_OVERHEAD + sum(self._memory_terms(spec).values()))

    def memory_fields(self, spec: BaseModel) -> tuple[str | int, ...]:
        terms = self._memory_terms(spec)
        return max(terms, key=lambda loc: terms[loc])

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
        """Newton for ``auto`` (a damped step costs a P x P solve). The unreduced tree level draws its particles once
        for the whole sweep: tempered from the smallest T of a sweep in T, else at the middle of the range (geometric
        for a positive parameter), and solves every value on them."""
        options = auto_means_newton(options)
        pilot = None
        if spec.treatment == "tree_level_unreduced" and values:  # type: ignore[attr-defined]
            lo, hi = min(values), max(values)
            middle = lo if parameter == "T" else (math.sqrt(lo * hi) if lo > 0 else 0.5 * (lo + hi))
            pilot = (middle, network_of(spec, parameter, middle).T)
        problem = swept(finite_sample_problem(spec, parameter, options, pilot), spec, parameter)  # type: ignore[arg-type]
        return run_sweep(problem, values, options, method=method, on_point=on_point, on_step=on_step, stored=stored)
