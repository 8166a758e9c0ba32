"""What a theory supplies to SaddleLab, and the default way its specs are solved and swept.

A theory is a spec (Pydantic, ``theory: Literal[...]``), a :class:`~solvers.core.problem.Problem`
built from a spec, and functions that turn a solution vector into named order parameters and
observables. It never writes its own iteration loop: :meth:`Theory.solve` and
:meth:`Theory.sweep` run the engine's catalogue and continuation. A theory may override them to
add quantities that need the whole catalogue (e.g. finite-size mixtures over several wells), but
still solves through the engine.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel

from solvers.core.catalogue import Catalogue, solve_catalogue
from solvers.core.jsonsafe import json_safe
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.sweep import SweepResult, run_sweep

OnPoint = Callable[[dict[str, Any]], None]


class Theory(ABC):
    """One theory family. Subclasses are stateless; caches live in module-level LRU maps."""

    name: ClassVar[str]
    summary: ClassVar[str]
    #: Pydantic model (or Annotated union of models) validating a spec of this theory.
    spec_model: ClassVar[Any]
    #: Spec fields a sweep may vary continuously.
    sweepable: ClassVar[tuple[str, ...]] = ()
    #: Default maximum problem sizes, by limit name; an instance may override each
    #: (environment ``SADDLELAB_LIMIT_<NAME>``). See :meth:`sizes`.
    size_limits: ClassVar[dict[str, float]] = {}

    # ---- what every theory provides -------------------------------------------------------
    @abstractmethod
    def problem(self, spec: BaseModel, parameter: str | None, options: SolverOptions) -> Problem:
        """The saddle-point system; ``p`` stands for ``spec.<parameter>`` (or is unused when None)."""

    @abstractmethod
    def order_parameters(self, spec: BaseModel, x: np.ndarray, p: float) -> dict[str, Any]:
        """Named order parameters of the solution ``x`` at control value ``p``."""

    @abstractmethod
    def observables(self, spec: BaseModel, x: np.ndarray, p: float) -> dict[str, Any]:
        """Named observables of the solution ``x`` at control value ``p``."""

    # ---- helpers --------------------------------------------------------------------------
    def sweepable_for(self, spec: BaseModel) -> tuple[str, ...]:
        """Fields of this particular spec that a sweep may vary (per mode where a theory has modes)."""
        return self.sweepable

    def sizes(self, spec: BaseModel) -> dict[str, tuple[tuple[str | int, ...], float]]:
        """The size-like quantities of a spec: limit name -> (location of the field in the spec, value).

        The service refuses a spec (422 naming the field and the limit) when a value exceeds the
        instance's limit of that name.
        """
        return {}

    def control_value(self, spec: BaseModel, parameter: str | None) -> float:
        return float(getattr(spec, parameter)) if parameter else 0.0

    def with_value(self, spec: BaseModel, parameter: str | None, p: float) -> BaseModel:
        """The spec with ``parameter`` set to ``p`` (integers rounded only where the theory needs it)."""
        if not parameter:
            return spec
        return spec.model_copy(update={parameter: p})

    def branch_payload(self, spec: BaseModel, catalogue: Catalogue, p: float) -> list[dict[str, Any]]:
        out = []
        for b in catalogue.branches:
            out.append(
                {
                    "name": b.name,
                    "converged": b.converged,
                    "stable": b.stable,
                    "free_entropy": b.free_entropy,
                    "order_parameters": self.order_parameters(spec, b.x, p),
                    "observables": self.observables(spec, b.x, p),
                    "diagnostics": b.diagnostics(),
                }
            )
        return out

    # ---- default solve / sweep ------------------------------------------------------------
    def solve(self, spec: BaseModel, options: SolverOptions) -> dict[str, Any]:
        """Solve from every named start; report all branches and the equilibrium."""
        problem = self.problem(spec, None, options)
        cat = solve_catalogue(problem, 0.0, options)
        return json_safe(self.catalogue_result(spec, cat, 0.0))

    def catalogue_result(self, spec: BaseModel, cat: Catalogue, p: float) -> dict[str, Any]:
        branches = self.branch_payload(spec, cat, p)
        eq = next((b for b in branches if b["name"] == cat.equilibrium), None)
        return {
            "theory": self.name,
            "converged": cat.converged,
            "order_parameters": eq["order_parameters"] if eq else {},
            "observables": eq["observables"] if eq else {},
            "branches": branches,
            "equilibrium": cat.equilibrium,
            "diagnostics": cat.diagnostics(),
        }

    def sweep_point(self, spec: BaseModel, parameter: str, p: float, cat: Catalogue) -> dict[str, Any]:
        """One point of a sweep in the contract's shape: the catalogue at ``parameter = p``."""
        res = self.catalogue_result(self.with_value(spec, parameter, p), cat, p)
        keys = ("converged", "equilibrium", "branches", "order_parameters", "observables")
        return {"parameter": p, **{k: res[k] for k in keys}}

    def sweep(
        self,
        spec: BaseModel,
        parameter: str,
        values: Sequence[float],
        method: str,
        options: SolverOptions,
        on_point: OnPoint | None = None,
    ) -> dict[str, Any]:
        """Trace every branch over ``values``; locate spinodals and first-order transitions."""
        problem = self.problem(spec, parameter, options)

        def point_payload(p: float, cat: Catalogue) -> dict[str, Any]:
            return json_safe(self.sweep_point(spec, parameter, p, cat))

        payloads: list[dict[str, Any]] = []

        def record(p: float, cat: Catalogue) -> None:
            payloads.append(point_payload(p, cat))  # built once, shared by the callback and the result
            if on_point is not None:
                on_point(payloads[-1])

        # The engine calls back once per value, in order, so the payloads are the sweep's points.
        result: SweepResult = run_sweep(problem, values, options, method=method, on_point=record)
        return json_safe(
            {
                "theory": self.name,
                "parameter": parameter,
                "method": method,
                "points": payloads,
                "transitions": [t.payload() for t in result.transitions],
                "diagnostics": result.diagnostics(),
            }
        )
