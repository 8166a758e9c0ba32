"""What a theory supplies to SaddleLab, and the default way its specs are solved and swept.

A theory is a spec (Pydantic, ``theory: Literal[...]``) and a :class:`~solvers.core.problem.Problem`
bound to that spec: the saddle-point system plus ``report(x, p)``, which names the order
parameters and observables of a solution. It never writes its own iteration loop:
:meth:`Theory.solve` and :meth:`Theory.sweep` run the engine's catalogue and continuation and
return its typed results (:class:`~solvers.core.results.Catalogue`, :class:`~solvers.core.sweep.Sweep`).
Nothing here is JSON; the service makes the HTTP contract from these objects in one place.

A theory declares the sizes that set its cost (``sizes``), with default limits (``size_limits``);
the service checks them against the instance's settings, so an instance can raise or lower every
limit. Specs validate physics only (ranges, shapes), never sizes. A theory whose memory grows with
its spec declares an upper estimate of what one solve allocates (``memory_bytes``), which the
service checks against the instance's memory limit before anything is allocated.

Theories keep no mutable module state: whatever a solve learns (eigendecompositions, warm
starts) lives on its bound problem; caches that pay across requests are keyed by immutable
inputs and safe under threads.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel

from solvers.core.catalogue import solve_catalogue
from solvers.core.continuation import OnStep
from solvers.core.lines.problem import TwoParameterProblem
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import Catalogue
from solvers.core.sweep import OnPoint, Sweep, run_sweep

#: limit name -> (location of the field in the spec, value)
Sizes = dict[str, tuple[tuple[str | int, ...], float]]

#: Memory of one solve of a theory that declares no estimate of its own: state vectors, Jacobians and
#: quadrature tables of a few thousand points, plus the numerical libraries' working buffers (measured:
#: at most 15 MiB for every such theory's examples, tests/service/test_memory_estimates.py).
DEFAULT_MEMORY_BYTES = 256 * 2**20


@dataclass(frozen=True)
class Example:
    """A small spec of the theory and a short sweep of it: what the contract tests run for every theory."""

    spec: Mapping[str, Any]
    parameter: str
    values: tuple[float, ...]
    method: str = "continuation"


class Theory(ABC):
    """One theory family (or one mode of a family). Instances are stateless and shared by every request."""

    name: ClassVar[str]
    summary: ClassVar[str]
    #: Pydantic model (or Annotated union of models) validating a spec of this theory.
    spec_model: ClassVar[Any]
    #: Spec fields a sweep may vary continuously.
    sweepable: ClassVar[tuple[str, ...]] = ()
    #: Default maximum problem sizes, by limit name; an instance may override each
    #: (environment ``SADDLELAB_LIMIT_<NAME>``). See :meth:`sizes`.
    size_limits: ClassVar[dict[str, float]] = {}
    #: Cheap specs and sweeps that exercise the theory (run by the contract tests and shown in the docs).
    examples: ClassVar[tuple[Example, ...]] = ()

    @abstractmethod
    def problem(self, spec: BaseModel, parameter: str | None = None, options: SolverOptions | None = None) -> Problem:
        """The saddle-point system bound to ``spec``; ``p`` stands for ``spec.<parameter>`` (unused when None)."""

    def two_parameter_problem(
        self, spec: BaseModel, parameters: tuple[str, str], options: SolverOptions | None = None
    ) -> TwoParameterProblem:
        """The saddle-point system of ``spec`` in two of its fields λ = (p1, p2), for the line tracers.

        The default re-binds the spec at every λ1 and takes its bound problem in λ2, keeping the
        last few in a memo on the returned problem (:func:`solvers.theories.two_parameter.rebound`).
        A theory overrides it where one bound object can serve the whole plane more cheaply.
        """
        from solvers.theories.two_parameter import rebound

        return rebound(self, spec, self.check_pair(spec, parameters), options)

    def lines_refusal(self, spec: BaseModel) -> tuple[tuple[str, ...], str] | None:
        """Why ``spec`` has no transition lines to trace — (location of the field that rules them out,
        reason) — or None. A boundary job on such a spec is refused when it is submitted."""
        return None

    def check_pair(self, spec: BaseModel, parameters: tuple[str, str]) -> tuple[str, str]:
        """Two distinct sweepable fields of ``spec``; ValueError naming the others."""
        p1, p2 = parameters
        allowed = self.sweepable_for(spec)
        bad = [p for p in (p1, p2) if p not in allowed]
        if bad:
            raise ValueError(f"{bad} cannot be swept for this spec; sweepable: {sorted(allowed)}")
        if p1 == p2:
            raise ValueError("a two-parameter problem needs two distinct fields")
        return p1, p2

    # ---- what a spec costs and what it may sweep ------------------------------------------------
    def sizes(self, spec: BaseModel) -> Sizes:
        """The size-like quantities of a spec: limit name -> (location of the field in the spec, value).

        The service refuses a spec (422 naming the field and the limit) when a value exceeds the
        instance's limit of that name.
        """
        return {}

    def memory_bytes(self, spec: BaseModel) -> int:
        """An upper estimate, in bytes, of the memory one solve of ``spec`` (or one point of a sweep of it)
        allocates beyond the loaded libraries. The service refuses a spec above the instance's
        ``max_solve_memory_bytes`` with a 422 naming :meth:`memory_fields` before computing anything."""
        return DEFAULT_MEMORY_BYTES

    def memory_fields(self, spec: BaseModel) -> tuple[str | int, ...]:
        """Location in the spec of the field the memory estimate grows with (empty: the spec as a whole)."""
        return ()

    def sweepable_for(self, spec: BaseModel) -> tuple[str, ...]:
        """Fields of this particular spec that a sweep may vary."""
        return self.sweepable

    def control_value(self, spec: BaseModel, parameter: str | None) -> float:
        """The value of ``p`` that stands for the spec itself (0 for a single solve)."""
        return float(getattr(spec, parameter)) if parameter else 0.0

    # ---- solve and sweep ---------------------------------------------------------------------------
    def solve(self, spec: BaseModel, options: SolverOptions) -> Catalogue:
        """Solve from every named start; every branch reported, the equilibrium chosen."""
        problem = self.problem(spec, None, options)
        return solve_catalogue(problem, self.control_value(spec, None), options, report=True)

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
        """Trace every branch over ``values``; locate spinodals, first-order points and events."""
        problem = self.problem(spec, parameter, options)
        return run_sweep(problem, values, options, method=method, on_point=on_point, on_step=on_step, stored=stored)
