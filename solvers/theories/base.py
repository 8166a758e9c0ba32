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

Beside its equations a theory may state the finite network it describes (its *experiment*): a model of
the finite sizes the network needs beyond the spec (``experiment_sizes``), a cheap check of a spec and
sizes that returns their size-like quantities (``check_experiment``, no JAX), the sampler
:class:`~solvers.experiments.target.Target` (``experiment``) and the theory's values of the network's
estimators on each branch of a solve (``experiment_predictions``). A theory without one refuses with
:class:`ExperimentRefused` naming ``model.theory``.

Theories keep no mutable module state: whatever a solve learns (eigendecompositions, warm
starts) lives on its bound problem; caches that pay across requests are keyed by immutable
inputs and safe under threads.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from pydantic import BaseModel

from solvers.core.catalogue import solve_catalogue
from solvers.core.continuation import OnStep
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import Catalogue
from solvers.core.sweep import OnPoint, Sweep, run_sweep
from solvers.theories.quantities import QuantityTable
from solvers.theories.two_parameter import field_bounds

if TYPE_CHECKING:
    from solvers.experiments.target import Target

#: limit name -> (location of the field in the spec, value)
Sizes = dict[str, tuple[tuple[str | int, ...], float]]
#: estimator name -> the theory's value (a float, or an array of the estimator's shape)
Predictions = dict[str, float | np.ndarray]
#: Default limits of an experiment's size-like quantities (an instance may override each, ``SADDLELAB_LIMIT_<NAME>``):
#: sampled parameters, numbers held by the network's data (training and test inputs), and the numbers each kept draw
#: of a chain stores (every component of every estimator: what Redis and the assembling worker hold, per draw).
EXPERIMENT_SIZE_LIMITS: dict[str, float] = {
    "experiment_parameters": 5_000_000,
    "experiment_data": 50_000_000,
    "experiment_draw_values": 200_000,
}


class ExperimentRefused(ValueError):
    """A spec (or finite sizes) whose network cannot be sampled; ``loc`` names the field in the request.

    ``loc`` starts with ``"model"`` (a field of the spec) or ``"sizes"`` (a field of the experiment sizes).
    """

    def __init__(self, loc: tuple[str | int, ...], reason: str):
        super().__init__(f"{'.'.join(map(str, loc[1:] or loc))}: {reason}")
        self.loc = tuple(loc)
        self.reason = reason

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
    #: Every quantity the theory reports and every field it is swept in: dotted name, symbol, description
    #: (``solvers/theories/<name>/quantities.py``; the one source of plot labels and schema symbols).
    quantities: ClassVar[QuantityTable] = QuantityTable(())
    #: Every name a named start of this theory can have, over its specs and parameter values (what
    #: ``solver.search.starts`` may name); empty: not declared, and requested names are not checked before solving.
    start_names: ClassVar[tuple[str, ...]] = ()
    #: The integer fields of the spec whose equations are defined at real values too (a width N that enters as a
    #: real number, 1/N, N/2, …): a transition line passes through real values of them, and so does a continuation
    #: sweep. Declared by each theory, never inferred from a field's type: every other integer field (a depth L, the
    #: size of a data set or a dimension that fixes array shapes) takes integer values only.
    real_integers: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def problem(self, spec: BaseModel, parameter: str | None = None, options: SolverOptions | None = None) -> Problem:
        """The saddle-point system bound to ``spec``; ``p`` stands for ``spec.<parameter>`` (unused when None)."""

    def two_parameter_problem(
        self, spec: BaseModel, parameters: tuple[str, str], options: SolverOptions | None = None
    ) -> Problem:
        """The saddle-point system of ``spec`` in two of its fields λ = (p1, p2), for the line tracers.

        The default re-binds the spec at every λ1 and takes its bound problem in λ2, keeping the
        last few in a memo on the returned problem (:func:`solvers.theories.two_parameter.rebound`).
        A theory overrides it where one bound object can serve the whole plane more cheaply.
        """
        from solvers.theories.two_parameter import rebound

        return rebound(self, spec, self.check_pair(spec, parameters), options, self.real_integers_for(spec))

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

    def result_numbers(self, spec: BaseModel) -> tuple[tuple[str | int, ...], float]:
        """How many numbers one solve's result carries per branch beyond its scalars (vectors over test points,
        matrices), at most, and the location in the spec of the field they grow with. The service estimates from
        it what a sweep of the spec stores, and refuses one above the instance's ``job_stored_bytes`` before
        computing anything. ``((), 0.0)``: scalars only (a few kilobytes a point)."""
        return (), 0.0

    def sweepable_for(self, spec: BaseModel) -> tuple[str, ...]:
        """Fields of this particular spec that a sweep may vary."""
        return self.sweepable

    def start_names_for(self, spec: BaseModel) -> tuple[str, ...]:
        """The names this spec's named starts can have (:attr:`start_names`)."""
        return self.start_names

    def real_integers_for(self, spec: BaseModel) -> tuple[str, ...]:
        """The integer fields of this spec that may take real values (:attr:`real_integers`)."""
        return self.real_integers

    def control_value(self, spec: BaseModel, parameter: str | None) -> float:
        """The value of ``p`` that stands for the spec itself (0 for a single solve)."""
        return float(getattr(spec, parameter)) if parameter else 0.0

    # ---- the finite network (experiment) ---------------------------------------------------------
    #: The finite sizes of the network beyond the spec (a pydantic model), None when the theory states no network.
    experiment_sizes: ClassVar[type[BaseModel] | None] = None
    #: Default limits of the experiment's size-like quantities, by limit name (see :meth:`check_experiment`).
    experiment_size_limits: ClassVar[dict[str, float]] = EXPERIMENT_SIZE_LIMITS
    #: Named initialisations of the network's chains (``SamplerOptions.init``).
    experiment_inits: ClassVar[tuple[str, ...]] = ("prior",)
    #: The network has a minibatch likelihood (SGLD).
    experiment_minibatch: ClassVar[bool] = False
    #: Small sizes for the theory's examples (what the contract tests sample, with the examples' specs).
    experiment_example: ClassVar[Mapping[str, Any]] = {}

    def experiment_sizes_for(self, spec: BaseModel) -> type[BaseModel]:
        """The sizes model of this spec's network; raises :class:`ExperimentRefused` when there is none."""
        if self.experiment_sizes is None:
            raise ExperimentRefused(("model", "theory"), f"{self.name} states no finite network to sample")
        return self.experiment_sizes

    def experiment_inits_for(self, spec: BaseModel) -> tuple[str, ...]:
        return self.experiment_inits

    def experiment_minibatch_for(self, spec: BaseModel) -> bool:
        return self.experiment_minibatch

    def experiment_example_sizes(self, spec: BaseModel) -> Mapping[str, Any]:
        """Small experiment sizes for an example spec of this theory."""
        return self.experiment_example

    def check_experiment(self, spec: BaseModel, sizes: BaseModel) -> Sizes:
        """Refuse (:class:`ExperimentRefused`) a network that cannot be sampled; else its size-like quantities.

        Cheap and free of JAX, so the service checks a request before queueing it: limit name -> (location in
        the request, value), among them ``experiment_parameters`` (the sampled dimension) and
        ``experiment_draw_values`` (the components of the estimators of one draw, which sizes what is stored).
        """
        self.experiment_sizes_for(spec)
        return {}

    def experiment_estimator_sizes(self, spec: BaseModel, sizes: BaseModel) -> Mapping[str, int]:
        """Components of each per-draw estimator of the network (what one kept draw stores), without JAX; their
        sum is ``check_experiment``'s ``experiment_draw_values``."""
        self.experiment_sizes_for(spec)
        return {}

    def experiment(self, spec: BaseModel, sizes: BaseModel, seed: int = 0) -> Target:
        """The posterior of the spec's finite network as a sampler Target (``seed``: teacher and data where the
        spec does not fix them)."""
        self.experiment_sizes_for(spec)
        raise NotImplementedError(f"{self.name} declares experiment sizes but builds no network")

    def experiment_predictions(
        self, spec: BaseModel, catalogue: Catalogue, sizes: BaseModel, branch: str | None = None
    ) -> Predictions:
        """The theory's value of every estimator of the network it has one for, on ``branch`` of a solve of the
        same spec (default: the equilibrium)."""
        self.experiment_sizes_for(spec)
        return {}

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
        problem = swept(self.problem(spec, parameter, options), spec, parameter)
        return run_sweep(problem, values, options, method=method, on_point=on_point, on_step=on_step, stored=stored)


def swept(problem: Problem, spec: BaseModel, parameter: str) -> Problem:
    """The problem of a sweep in the spec's field ``parameter``: named after it and bounded by the values the field
    admits (its gt/ge/lt/le constraints), so that a curve that runs out of them says which quantity left its domain
    (the engine's ``Problem.domain`` names it where the theory does not). A problem that names its own parameter
    or bounds, or a parameter that is not a field of the spec, is left as it is."""
    unbounded = all(lo == -math.inf and hi == math.inf for lo, hi in problem.bounds)  # type: ignore[union-attr]
    if parameter not in type(spec).model_fields or problem.parameters != ("p",) or not unbounded:
        return problem
    lo, hi = field_bounds(spec, parameter)
    if not lo < hi:
        return problem
    return replace(problem, parameters=(parameter,), bounds=((lo, hi),))
