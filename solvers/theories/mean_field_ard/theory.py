"""The ``mean_field_ard`` theory: the engine's wiring of the reduced and particle solvers.

Everything physical lives in modules that know nothing of the engine (``reduced``, ``population``,
``particles``, ``particle_report``); this file only adapts them to :class:`Problem` and
:class:`Theory`:

* reduced solver → one ``Problem`` bound to its :class:`ReducedModel` with ``residual``/``jacobian``/
  ``free_entropy``/``stability`` (kind "saddle"), ``starts`` {symmetric, aligned}, ``label``, ``project``
  and ``report``; ``p`` is the swept field's value (ignored for a single solve). Sweeps run the engine's
  continuation; the alignment onset of plain MF (equal depth of the single-neuron potential's wells, a
  kink the engine's fold/crossing detection cannot see) is an engine event of κ sweeps.
* particle solver → stochastic, not a deterministic residual: ``solve``/``sweep`` run it from both
  starts and return the engine's typed catalogue and sweep (no free entropy, so branches are not ranked).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
from pydantic import BaseModel

from solvers.core.continuation import OnStep
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import Catalogue, Report
from solvers.core.sweep import OnPoint, Sweep
from solvers.theories.base import Example, Predictions, Sizes, Theory
from solvers.theories.mean_field_ard import experiment_sizes, particle_report
from solvers.theories.mean_field_ard.events import onset_event
from solvers.theories.mean_field_ard.quantities import QUANTITIES
from solvers.theories.mean_field_ard.reduced import SWEEPABLE, ReducedModel
from solvers.theories.mean_field_ard.spec import ArraysData, MeanFieldARDSpec, ParityTarget
from solvers.theories.quantities import QuantityTable

if TYPE_CHECKING:
    from solvers.experiments.target import Target

#: Default size limits (an instance may raise or lower each, ``SADDLELAB_LIMIT_<NAME>``).
SIZE_LIMITS: dict[str, float] = {
    "mean_field_d": 4096,
    "mean_field_N": 1_000_000,
    "mean_field_P": 50_000,
    "mean_field_P_test": 50_000,
    "mean_field_array_rows": 20_000,
    "mean_field_particles": 16_384,
    "mean_field_reduced_k": 6,
    "mean_field_particle_steps": 1e10,
    "mean_field_quadrature_nodes": 3e6,
}

#: Memory of a solve besides its arrays: JAX's compilation and buffers (measured peaks in a fresh solve process:
#: 135–139 MiB for the reduced examples, 232 MiB for a small particle solve).
MEMORY_OVERHEAD = 320 * 2**20
#: u-nodes per v-node of the per-unit prior's bulk rule (its sinh-trapezoid: 28–34 for the examples measured).
PER_UNIT_U_NODES = 32
#: Bytes per quadrature node of the reduced rules (node statistics, their pairs and the fused temporaries).
MEMORY_PER_NODE = 8 * 64
#: Bytes per particle and data point (φ, its derivative and the vmapped potential's temporaries, train and test).
MEMORY_PER_PARTICLE_POINT = 8 * 6


def reduced_model(spec: MeanFieldARDSpec, parameter: str | None) -> ReducedModel:
    """The reduced equations of ``spec`` with ``parameter`` as the control (None: the spec's own values)."""
    return ReducedModel(spec, parameter)


def reduced_problem(spec: MeanFieldARDSpec, parameter: str | None) -> Problem:
    model = reduced_model(spec, parameter)

    def at(p: float) -> float | None:
        return p if parameter else None

    def report(x: np.ndarray, p: float) -> Report:
        return Report(model.order_parameters(x, at(p)), model.observables(x, at(p)))

    # one solution at every κ (plain MF, per-unit MF-ARD): the transition is the alignment onset, an event
    events = (onset_event(lambda p: model.onset_indicator(at(p))),) if (
        not model.shared and parameter == "kappa") else ()
    return Problem(
        residual=lambda x, p: model.residual(x, at(p)),
        dim=model.dim,
        starts=lambda p: model.starts(at(p)),
        jacobian=lambda x, p: model.jacobian(x, at(p)),
        free_entropy=lambda x, p: model.free_entropy(x, at(p)),
        stability=lambda x, p: model.stability(x, at(p)),
        kind="saddle",
        label=lambda x, p, start: model.label(x, at(p), start),
        project=model.project,
        names=model.names,
        report=report,
        events=events,
    )


class MeanFieldARDTheory(Theory):
    name: ClassVar[str] = "mean_field_ard"
    start_names: ClassVar[tuple[str, ...]] = ("symmetric", "aligned")
    summary: ClassVar[str] = (
        "Mean-field theory of a two-layer network's posterior (Göring, Mingard, Nam, Louis 2025): single-neuron "
        "law with the readout integrated out, self-consistent residual, plain MF and MF with ARD input feature "
        "selection; reduced population-limit solver (parity, ReLU) with free entropy, spinodals and first-order "
        "transitions, and a BlackJAX particle solver on any data."
    )
    spec_model: ClassVar[Any] = MeanFieldARDSpec
    quantities: ClassVar[QuantityTable] = QUANTITIES
    sweepable: ClassVar[tuple[str, ...]] = ("kappa", "P", "N", "sigma_a2", "sigma_w2", "gamma")
    #: The reduced equations hold N and P as real numbers (N/2 + a in the ARD update, N^{-γ}; P in the
    #: equivalent-kernel closure's effective ridge). Integers only: d (the reported ρ profile has one entry per
    #: input, the per-unit prior is a (d − k)-fold convolution, the finite-P closure counts the Walsh modes
    #: C(k, i) C(d − k, j)), the parity's k, P_test, the seeds and the quadrature and particle counts (array shapes).
    real_integers: ClassVar[tuple[str, ...]] = ("N", "P")
    size_limits: ClassVar[dict[str, float]] = SIZE_LIMITS
    examples: ClassVar[tuple[Example, ...]] = (
        Example({"theory": "mean_field_ard", "model": "mf_ard", "d": 35, "N": 512, "kappa": 0.095,
                 "target": {"kind": "parity", "k": 2}}, "kappa", (0.09, 0.1), "grid"),
        Example({"theory": "mean_field_ard", "model": "mf", "d": 35, "N": 512, "kappa": 0.04,
                 "target": {"kind": "parity", "k": 2}}, "kappa", (0.035, 0.045)),
        # a finite training set: the small network its experiment samples (the theory's default experiment)
        Example({"theory": "mean_field_ard", "model": "mf", "d": 16, "N": 64, "kappa": 0.05, "P": 256,
                 "target": {"kind": "parity", "k": 2}, "data": {"seed": 0, "P_test": 500}}, "kappa",
                (0.045, 0.055), "grid"),
    )
    # ---- the finite network (experiment) ---------------------------------------------------------
    experiment_sizes: ClassVar[Any] = experiment_sizes.ExperimentSizes
    experiment_minibatch: ClassVar[bool] = True
    #: the population-limit examples are sampled on this many training points
    experiment_example: ClassVar[Mapping[str, Any]] = {"P": 200}

    def experiment_example_sizes(self, spec: BaseModel) -> Mapping[str, Any]:
        assert isinstance(spec, MeanFieldARDSpec)
        return self.experiment_example if spec.n_train is None else {}

    def experiment_inits_for(self, spec: BaseModel) -> tuple[str, ...]:
        """``prior``, and for a parity target ``aligned`` (every unit on the parity's relevant coordinates)."""
        assert isinstance(spec, MeanFieldARDSpec)
        return ("prior", "aligned") if isinstance(spec.target, ParityTarget) else ("prior",)

    def check_experiment(self, spec: BaseModel, sizes: BaseModel) -> Sizes:
        return experiment_sizes.check(cast(MeanFieldARDSpec, spec), cast(experiment_sizes.ExperimentSizes, sizes))

    def experiment_estimator_sizes(self, spec: BaseModel, sizes: BaseModel) -> Mapping[str, int]:
        sizes_ = cast(experiment_sizes.ExperimentSizes, sizes)
        return experiment_sizes.estimator_sizes(cast(MeanFieldARDSpec, spec), sizes_)

    def experiment(self, spec: BaseModel, sizes: BaseModel, seed: int = 0) -> Target:
        """The network on the spec's own data (``data.seed``, or its arrays): the data the particle solver of the
        same spec uses, so ``seed`` is not used."""
        from solvers.theories.mean_field_ard.experiment import build_target

        return build_target(cast(MeanFieldARDSpec, spec), cast(experiment_sizes.ExperimentSizes, sizes))

    def experiment_predictions(
        self, spec: BaseModel, catalogue: Catalogue, sizes: BaseModel, branch: str | None = None
    ) -> Predictions:
        from solvers.theories.mean_field_ard.experiment import theory_observables

        assert isinstance(spec, MeanFieldARDSpec)
        return theory_observables(catalogue, branch=branch, ard=spec.model == "mf_ard")

    def sizes(self, spec: BaseModel) -> Sizes:
        assert isinstance(spec, MeanFieldARDSpec)
        out: Sizes = {
            "mean_field_d": (("d",), float(spec.d)),
            "mean_field_N": (("N",), float(spec.N)),
        }
        if spec.P is not None:
            out["mean_field_P"] = (("P",), float(spec.P))
        if isinstance(spec.data, ArraysData):
            out["mean_field_array_rows"] = (("data", "X"), float(len(spec.data.X) + len(spec.data.X_test)))
        else:
            out["mean_field_P_test"] = (("data", "P_test"), float(spec.data.P_test))
        if spec.solver == "particles":
            ps = spec.particles
            out["mean_field_particles"] = (("particles", "n"), float(ps.n))
            # particle-steps of one start: the cost of a solve
            steps = ps.n * (ps.warmup + ps.inner_steps * ps.outer_iterations)
            out["mean_field_particle_steps"] = (("particles",), float(steps))
        elif getattr(spec.target, "k", None) is not None:
            k = spec.target.k  # type: ignore[union-attr]
            out["mean_field_reduced_k"] = (("target", "k"), float(k))
            q = spec.quadrature
            if spec.model == "mf_ard" and spec.ard_settings.precisions == "per_unit":
                nodes = math.comb(q.bulk_per_unit + k - 1, k) * PER_UNIT_U_NODES
            else:
                nodes = math.comb(q.bulk + k - 1, k) * q.bulk_q
            out["mean_field_quadrature_nodes"] = (("quadrature",), float(nodes))
        return out

    def _memory_terms(self, spec: MeanFieldARDSpec) -> dict[tuple[str | int, ...], float]:
        sizes = self.sizes(spec)
        if spec.solver == "particles":
            rows = spec.n_train or 0
            rows += len(spec.data.X_test) if isinstance(spec.data, ArraysData) else spec.data.P_test
            n = spec.particles.n
            return {("particles", "n"): float(MEMORY_PER_PARTICLE_POINT * n * rows + 8 * 8 * n * spec.d),
                    ("d",): float(8 * 4 * rows * spec.d)}
        nodes = sizes.get("mean_field_quadrature_nodes", (("quadrature",), 0.0))[1]
        return {("quadrature",): float(MEMORY_PER_NODE * nodes)}

    def memory_bytes(self, spec: BaseModel) -> int:
        """JAX's overhead plus the particle-by-data arrays (particles) or the quadrature nodes (reduced)."""
        assert isinstance(spec, MeanFieldARDSpec)
        return int(MEMORY_OVERHEAD + sum(self._memory_terms(spec).values()))

    def memory_fields(self, spec: BaseModel) -> tuple[str | int, ...]:
        assert isinstance(spec, MeanFieldARDSpec)
        terms = self._memory_terms(spec)
        return max(terms, key=lambda loc: terms[loc])

    def sweepable_for(self, spec: BaseModel) -> tuple[str, ...]:
        assert isinstance(spec, MeanFieldARDSpec)
        if spec.solver == "reduced":
            return SWEEPABLE + (("P",) if spec.P is not None else ())
        return self.sweepable

    # ---- the reduced solver's problem ---------------------------------------------------------------
    def problem(self, spec: BaseModel, parameter: str | None = None, options: SolverOptions | None = None) -> Problem:
        assert isinstance(spec, MeanFieldARDSpec)
        if spec.solver != "reduced":
            raise ValueError("the particle solver is stochastic: it has no deterministic Problem")
        return reduced_problem(spec, parameter)

    def lines_refusal(self, spec: BaseModel) -> tuple[tuple[str, ...], str] | None:
        assert isinstance(spec, MeanFieldARDSpec)
        if spec.solver != "reduced":
            return ("solver",), "solver 'particles' is stochastic: transition lines need the reduced solver"
        return None

    def two_parameter_problem(
        self, spec: BaseModel, parameters: tuple[str, str], options: SolverOptions | None = None
    ) -> Problem:
        refusal = self.lines_refusal(spec)
        if refusal is not None:
            raise ValueError(refusal[1])
        return super().two_parameter_problem(spec, parameters, options)

    # ---- solve / sweep ------------------------------------------------------------------------------
    @staticmethod
    def reduced_options(options: SolverOptions) -> SolverOptions:
        """``auto`` is Newton for the reduced equations: x + F(x) is no contraction (an ARD precision maps
        to itself with slope ≈ 1, the residual's stiff modes overshoot), so a damped fallback only burns time."""
        return options.model_copy(update={"method": "newton"}) if options.method == "auto" else options

    def solve(self, spec: BaseModel, options: SolverOptions) -> Catalogue:
        assert isinstance(spec, MeanFieldARDSpec)
        if spec.solver == "particles":
            return particle_report.solve(spec, self.control_value(spec, None), options.time_limit)
        return super().solve(spec, self.reduced_options(options))

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
        assert isinstance(spec, MeanFieldARDSpec)
        if spec.solver == "particles":
            return particle_report.sweep(spec, parameter, values, on_point, options.time_limit, stored)
        return super().sweep(spec, parameter, values, method, self.reduced_options(options), on_point=on_point,
                             on_step=on_step, stored=stored)
