"""Typed, frozen results of the engine: one solve, one branch, one catalogue (scipy's vocabulary, typed).

Nothing here is JSON: the service turns these objects into the HTTP contract in one place. The
state vectors are read-only copies, so a result can be shared between threads and cached.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers.core.status import Status

EMPTY: Mapping[str, Any] = {}
#: A stability margin above -MARGINAL counts as stable.
MARGINAL = 1e-9


def frozen_vector(x: Any) -> np.ndarray:
    """A read-only float copy of ``x`` (``x`` itself when it is one already: a vector made here, passed on by
    ``replace``, owns its data and nobody writes to it)."""
    if isinstance(x, np.ndarray) and x.base is None and not x.flags.writeable and x.dtype == float and x.ndim == 1:
        return x
    v = np.array(np.ravel(x), dtype=float, copy=True)
    v.setflags(write=False)
    return v


def is_stable(margin: float | None) -> bool | None:
    # A marginal solution (margin ~ 0, e.g. exactly at a critical point) counts as stable.
    # math.isfinite: called for every traced point and curve row, where np.isfinite's ufunc overhead showed
    return None if margin is None or not math.isfinite(margin) else bool(margin > -MARGINAL)


@dataclass(frozen=True)
class SolveResult:
    """Outcome of one fixed-point / root solve from one start."""

    x: np.ndarray
    status: Status
    residual: float
    iterations: int
    method: str
    seconds: float
    nfev: int = 0
    history: tuple[float, ...] = ()
    #: What went wrong, in words, when the status alone does not say it (e.g. the numerical error).
    detail: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", frozen_vector(self.x))
        object.__setattr__(self, "status", Status(self.status))

    @property
    def converged(self) -> bool:
        return self.status.converged

    @property
    def message(self) -> str:
        return f"{self.status.message} {self.detail}".strip() if self.detail else self.status.message

    def replace(self, **changes: Any) -> SolveResult:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Report:
    """What a theory says about one solution: named order parameters and observables (plain values)."""

    order_parameters: Mapping[str, Any] = field(default_factory=dict)
    observables: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Notes:
    """What a theory adds about a whole catalogue or sweep (not about one branch).

    ``observables`` and ``diagnostics`` are merged into the top-level blocks of the same name;
    ``fields`` become top-level fields of their own (e.g. a sweep's sample complexity).
    """

    observables: Mapping[str, Any] = field(default_factory=dict)
    diagnostics: Mapping[str, Any] = field(default_factory=dict)
    fields: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Origin:
    """How a branch was first found: ``method`` is ``start`` (a named start), ``warm`` (a solution of a neighbouring
    value), ``root_scan`` (the theory's exhaustive root scan), ``deflation`` or ``continuation`` (a point of a curve
    a continuation sweep traced); ``start`` names the start."""

    method: str
    start: str | None = None


@dataclass(frozen=True)
class Search:
    """How a catalogue looked for its branches.

    ``method``: ``exhaustive`` (a complete root scan: every solution is among its roots), ``deflated`` (named
    starts, then deflated solves until ``budget`` of them in a row found nothing new) or ``starts-only``.
    ``deflated_solves`` counts the deflated solves, ``fruitless`` those that found nothing new, ``found`` the
    solutions they added; ``stopped`` says why deflation ended (``budget``, ``max_solutions``, ``time_limit``).
    ``root_scan``: the theory's root scan (exhaustive or not) contributed starts. ``unknown_starts``: requested
    start names the theory does not have (nothing was solved from them).
    """

    method: str
    starts: tuple[str, ...] = ()
    root_scan: bool = False
    budget: int | None = None
    deflated_solves: int = 0
    fruitless: int = 0
    found: int = 0
    stopped: str | None = None
    unknown_starts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Branch:
    """One solution at one parameter value: a point of a named branch."""

    name: str
    x: np.ndarray
    result: SolveResult
    stable: bool | None
    stability_margin: float | None
    free_entropy: float | None
    starts: tuple[str, ...] = ()
    report: Report | None = None
    origin: Origin | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", frozen_vector(self.x))

    @property
    def converged(self) -> bool:
        return self.result.converged

    def replace(self, **changes: Any) -> Branch:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Attempt:
    """One start of a catalogue and how its solve ended."""

    start: str
    status: Status
    residual: float
    iterations: int


@dataclass(frozen=True)
class Catalogue:
    """Every branch found at one parameter value, the equilibrium among them, and whether the search finished.

    ``complete`` is True when every start ran to a verdict of its own; a catalogue cut short by the
    time limit may be missing branches (and so the true equilibrium), and is never cached.
    """

    parameter: float
    branches: tuple[Branch, ...]
    equilibrium: str | None
    attempts: tuple[Attempt, ...] = ()
    seconds: float = 0.0
    complete: bool = True
    notes: Notes | None = None
    search: Search | None = None

    def get(self, name: str | None) -> Branch | None:
        return next((b for b in self.branches if b.name == name), None)

    @property
    def equilibrium_branch(self) -> Branch | None:
        return self.get(self.equilibrium)

    @property
    def converged(self) -> bool:
        """A converged equilibrium, from a search that finished."""
        eq = self.equilibrium_branch
        return self.complete and eq is not None and eq.converged

    @property
    def reference(self) -> Branch | None:
        """The branch whose solve describes the catalogue: the equilibrium, else the best attempt."""
        eq = self.equilibrium_branch
        if eq is not None:
            return eq
        return min(self.branches, key=lambda b: b.result.residual) if self.branches else None

    @property
    def status(self) -> Status:
        interrupted = next((a.status for a in self.attempts if a.status.interrupted), None)
        if not self.complete:
            return interrupted or Status.TIME_LIMIT
        ref = self.reference
        return ref.result.status if ref is not None else Status.NO_SOLUTION

    @property
    def message(self) -> str:
        if not self.complete:
            return f"{self.status.message} Not every start finished: the catalogue may be missing branches."
        ref = self.reference
        return ref.result.message if ref is not None else Status.NO_SOLUTION.message

    @property
    def cacheable(self) -> bool:
        """Complete, and every outcome a property of the equations (no time limit, no failed evaluation)."""
        return self.complete and not any(a.status.interrupted for a in self.attempts) and not any(
            b.result.status.interrupted for b in self.branches
        )

    @property
    def iterations(self) -> int:
        return int(sum(b.result.iterations for b in self.branches))

    def replace(self, **changes: Any) -> Catalogue:
        return dataclasses.replace(self, **changes)
