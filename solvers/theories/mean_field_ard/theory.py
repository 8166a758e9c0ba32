"""The ``mean_field_ard`` theory: the engine's wiring of the reduced and particle solvers.

Everything physical lives in modules that know nothing of the engine (``reduced``, ``population``,
``particles``, ``particle_report``); this file only adapts them to :class:`Problem` and
:class:`Theory`:

* reduced solver → one ``Problem`` with ``residual``/``jacobian``/``free_entropy``/``stability``
  (kind "saddle"), ``starts`` {symmetric, aligned}, ``label``, ``project``; ``p`` is the swept
  field's value (ignored for a single solve). Sweeps run the engine's continuation; the
  alignment onset of plain MF (equal depth of the single-neuron potential's wells, a kink the
  engine's fold/crossing detection cannot see) is located on the engine's branches afterwards.
* particle solver → stochastic, not a deterministic residual: ``solve``/``sweep`` call it directly
  from both starts and report the contract's payload (no free entropy, so branches are not ranked).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel

from solvers.core.jsonsafe import json_safe
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.sweep import SweepResult, run_sweep
from solvers.theories.base import OnPoint, Theory
from solvers.theories.mean_field_ard import particle_report
from solvers.theories.mean_field_ard.events import locate_onsets
from solvers.theories.mean_field_ard.memo import Memo
from solvers.theories.mean_field_ard.reduced import SWEEPABLE, ReducedModel
from solvers.theories.mean_field_ard.spec import ArraysData, MeanFieldARDSpec

_MODELS: Memo[ReducedModel] = Memo(16)


def reduced_model(spec: MeanFieldARDSpec, parameter: str | None) -> ReducedModel:
    """One model per (spec, swept field), shared by the problem and the reporting of a solve or sweep."""
    key = (spec.model_dump_json(warnings=False), parameter)
    return _MODELS.get_or_make(key, lambda: ReducedModel(spec, parameter))


class MeanFieldARDTheory(Theory):
    name: ClassVar[str] = "mean_field_ard"
    summary: ClassVar[str] = (
        "Mean-field theory of a two-layer network's posterior (Göring, Mingard, Nam, Louis 2025): single-neuron "
        "law with the readout integrated out, self-consistent residual, plain MF and MF with ARD input feature "
        "selection; reduced population-limit solver (parity, ReLU) with free entropy, spinodals and first-order "
        "transitions, and a BlackJAX particle solver on any data."
    )
    spec_model: ClassVar[Any] = MeanFieldARDSpec
    sweepable: ClassVar[tuple[str, ...]] = ("kappa", "P", "N", "sigma_a2", "sigma_w2", "gamma")
    size_limits: ClassVar[dict[str, float]] = {
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

    def sizes(self, spec: BaseModel) -> dict[str, tuple[tuple[str | int, ...], float]]:
        assert isinstance(spec, MeanFieldARDSpec)
        out: dict[str, tuple[tuple[str | int, ...], float]] = {
            "mean_field_d": (("d",), spec.d),
            "mean_field_N": (("N",), spec.N),
        }
        if spec.P is not None:
            out["mean_field_P"] = (("P",), spec.P)
        if isinstance(spec.data, ArraysData):
            out["mean_field_array_rows"] = (("data", "X"), len(spec.data.X) + len(spec.data.X_test))
        else:
            out["mean_field_P_test"] = (("data", "P_test"), spec.data.P_test)
        if spec.solver == "particles":
            ps = spec.particles
            out["mean_field_particles"] = (("particles", "n"), ps.n)
            # particle-steps of one start: the cost of a solve
            steps = ps.n * (ps.warmup + ps.inner_steps * ps.outer_iterations)
            out["mean_field_particle_steps"] = (("particles",), steps)
        elif getattr(spec.target, "k", None) is not None:
            k = spec.target.k  # type: ignore[union-attr]
            out["mean_field_reduced_k"] = (("target", "k"), k)
            q = spec.quadrature
            out["mean_field_quadrature_nodes"] = (("quadrature",), math.comb(q.bulk + k - 1, k) * q.bulk_q)
        return out

    def sweepable_for(self, spec: BaseModel) -> tuple[str, ...]:
        assert isinstance(spec, MeanFieldARDSpec)
        if spec.solver == "reduced":
            return SWEEPABLE + (("P",) if spec.P is not None else ())
        return self.sweepable

    def with_value(self, spec: BaseModel, parameter: str | None, p: float) -> BaseModel:
        if parameter in ("N", "P") and spec.solver == "particles":  # type: ignore[attr-defined]
            return spec.model_copy(update={parameter: max(1, round(p))})
        # The reduced equations are continuous in N and P: keep the float (reporting uses this spec).
        return super().with_value(spec, parameter, p)

    # ---- the reduced solver's problem ---------------------------------------------------------------
    def problem(self, spec: BaseModel, parameter: str | None, options: SolverOptions) -> Problem:
        assert isinstance(spec, MeanFieldARDSpec)
        if spec.solver != "reduced":
            raise ValueError("the particle solver is stochastic: it has no deterministic Problem")
        model = reduced_model(spec, parameter)

        def at(p: float) -> float | None:
            return p if parameter else None

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
        )

    def order_parameters(self, spec: BaseModel, x: np.ndarray, p: float) -> dict[str, Any]:
        assert isinstance(spec, MeanFieldARDSpec)
        return reduced_model(spec, None).order_parameters(x, None)

    def observables(self, spec: BaseModel, x: np.ndarray, p: float) -> dict[str, Any]:
        assert isinstance(spec, MeanFieldARDSpec)
        return reduced_model(spec, None).observables(x, None)

    # ---- solve / sweep ------------------------------------------------------------------------------
    @staticmethod
    def reduced_options(options: SolverOptions) -> SolverOptions:
        """``auto`` is Newton for the reduced equations: x + F(x) is no contraction (an ARD precision maps
        to itself with slope ≈ 1, the residual's stiff modes overshoot), so a damped fallback only burns time."""
        return options.model_copy(update={"method": "newton"}) if options.method == "auto" else options

    def solve(self, spec: BaseModel, options: SolverOptions) -> dict[str, Any]:
        assert isinstance(spec, MeanFieldARDSpec)
        if spec.solver == "particles":
            return json_safe(particle_report.solve(spec, options.time_limit))
        return super().solve(spec, self.reduced_options(options))

    def sweep(
        self,
        spec: BaseModel,
        parameter: str,
        values: Sequence[float],
        method: str,
        options: SolverOptions,
        on_point: OnPoint | None = None,
    ) -> dict[str, Any]:
        assert isinstance(spec, MeanFieldARDSpec)
        if spec.solver == "particles":
            return json_safe(particle_report.sweep(self, spec, parameter, values, on_point, options.time_limit))
        options = self.reduced_options(options)
        problem = self.problem(spec, parameter, options)
        payloads: list[dict[str, Any]] = []

        def record(p: float, cat: Any) -> None:
            payloads.append(json_safe(self.sweep_point(spec, parameter, p, cat)))
            if on_point is not None:
                on_point(payloads[-1])

        result: SweepResult = run_sweep(problem, values, options, method=method, on_point=record)
        model = reduced_model(spec, parameter)
        onsets = locate_onsets(model, list(values)) if parameter == "kappa" else []
        transitions = sorted([*result.transitions, *onsets], key=lambda t: t.parameter)
        return json_safe({
            "theory": self.name,
            "parameter": parameter,
            "method": method,
            "points": payloads,
            "transitions": [t.payload() for t in transitions],
            "diagnostics": result.diagnostics(),
        })
