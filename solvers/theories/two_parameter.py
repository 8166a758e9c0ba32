"""A theory's spec as a two-parameter problem F(x, λ1, λ2) = 0 for the line tracers (``solvers.core.lines``).

``lift`` turns a family of the engine's bound problems into a
two-parameter :class:`~solvers.core.problem.Problem`: ``problem_at(λ)`` gives the bound problem that
holds at λ and the value of its own control parameter there. Everything the engine uses along a
sweep carries over: the residual and its Jacobian, the free entropy, the stability margin the sweep
judges stability by, the events, the named starts together with the roots of an exhaustive search,
the branch labels, the symmetry (``canonical``) and the scale.

The generic way (:func:`rebound`) re-binds the spec at each λ1 (``Theory.problem`` of the spec
with λ1 set, swept in λ2), keeping the last few bound problems in a small memo that belongs to the
returned problem (no module state). A value of λ1 the spec refuses lies outside the theory's
domain: the residual is NaN there, so every corrector refuses the step, and the parameter box is
cut to the field's own bounds (:func:`field_bounds`).

An integer field (a width N) is continued as a real number only where the theory declares its
equations defined at real values (``Theory.real_integers``); the caller passes those fields.
"""

from __future__ import annotations

import math
import threading
import typing
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Protocol

import annotated_types
import numpy as np
from pydantic import BaseModel, ValidationError

from solvers.core.errors import MAYBE_NUMERICAL, is_numerical
from solvers.core.options import SolverOptions
from solvers.core.problem import Bounds, Event, Problem

#: Bound problems remembered per two-parameter problem (one per recent λ1).
MEMO_SIZE = 8

ProblemAt = Callable[[np.ndarray], tuple[Problem | None, Any]]


class BindsProblems(Protocol):
    """What :func:`rebound` needs of a theory: its bound problem of a spec in one of the spec's fields."""

    def problem(self, spec: Any, parameter: str | None = None, options: SolverOptions | None = None) -> Problem: ...


def field_bounds(spec: BaseModel | type[BaseModel], name: str) -> tuple[float, float]:
    """The closed hull of the values the spec's field ``name`` admits (its gt/ge/lt/le constraints)."""
    cls = spec if isinstance(spec, type) else type(spec)
    lo, hi = -math.inf, math.inf
    for m in cls.model_fields[name].metadata:
        if isinstance(m, (annotated_types.Gt, annotated_types.Ge)):
            lo = max(lo, float(m.gt if isinstance(m, annotated_types.Gt) else m.ge))  # type: ignore[arg-type]
        if isinstance(m, (annotated_types.Lt, annotated_types.Le)):
            hi = min(hi, float(m.lt if isinstance(m, annotated_types.Lt) else m.le))  # type: ignore[arg-type]
    return lo, hi


def integer_field(spec: BaseModel, name: str) -> bool:
    """The spec's field ``name`` admits integers only (``int`` or ``int | None``): a width, a sample count."""
    field = type(spec).model_fields.get(name)
    if field is None:
        return False
    args = typing.get_args(field.annotation) or (field.annotation,)
    return int in args and float not in args


def _guard(fn: Callable[..., Any], bad: Any) -> Callable[..., Any]:
    """``fn`` with a numerical failure of the equations at an iterate as the value ``bad`` (NaN)."""

    def wrapped(*args: Any) -> Any:
        try:
            return fn(*args)
        except MAYBE_NUMERICAL as exc:
            if not is_numerical(exc):
                raise
            return bad() if callable(bad) else bad

    return wrapped


def lift(problem_at: ProblemAt, reference: Problem, names: tuple[str, str], bounds: Bounds) -> Problem:
    """A two-parameter problem from ``problem_at(λ) -> (bound problem, its control value)``.

    ``reference`` (the problem at the spec itself) says which structure exists: a Jacobian, a free
    entropy, a stability margin, events. ``problem_at`` gives None where the spec is invalid.
    """
    dim = reference.dim
    nan_vector = lambda: np.full(dim, np.nan)  # noqa: E731

    def at(lam: np.ndarray) -> tuple[Problem, Any] | None:
        pr, p = problem_at(np.asarray(lam, dtype=float))
        return None if pr is None else (pr, p)

    def F(x: np.ndarray, lam: np.ndarray) -> np.ndarray:
        hit = at(lam)
        return nan_vector() if hit is None else hit[0].F(x, hit[1])

    def jacobian(x: np.ndarray, lam: np.ndarray) -> np.ndarray:
        hit = at(lam)
        if hit is None or hit[0].jacobian is None:
            return np.full((dim, dim), np.nan)
        return np.asarray(hit[0].jacobian(x, hit[1]), dtype=float)

    def free_entropy(x: np.ndarray, lam: np.ndarray) -> float:
        hit = at(lam)
        if hit is None or hit[0].free_entropy is None:
            return math.nan
        return float(hit[0].free_entropy(x, hit[1]))

    def stability(x: np.ndarray, lam: np.ndarray) -> float:
        hit = at(lam)
        m = None if hit is None else hit[0].margin(x, hit[1])
        return math.nan if m is None else float(m)

    def event(name: str) -> Callable[[np.ndarray, np.ndarray], float]:
        def g(x: np.ndarray, lam: np.ndarray) -> float:
            hit = at(lam)
            ev = None if hit is None else next((e for e in hit[0].events if e.name == name), None)
            return math.nan if ev is None else float(ev.indicator(x, hit[1]))  # type: ignore[index]

        return _guard(g, math.nan)

    def starts(lam: np.ndarray) -> Mapping[str, np.ndarray]:
        hit = at(lam)
        if hit is None:
            return {}
        pr, p = hit
        out = {name: np.asarray(x0, dtype=float) for name, x0 in pr.starts(p).items()}
        if pr.enumerate is not None:  # every root of an exhaustive search is a start of its own
            for k, (name, x0) in enumerate(_guard(pr.enumerate, list)(p)):
                out[f"{name}#{k}" if name in out else name] = np.asarray(x0, dtype=float)
        return out

    def label(x: np.ndarray, lam: np.ndarray, start: str) -> str:
        hit = at(lam)
        return start if hit is None else hit[0].name_of(x, hit[1], start)

    return Problem(
        residual=_guard(F, nan_vector),
        dim=dim,
        jacobian=_guard(jacobian, lambda: np.full((dim, dim), np.nan)) if reference.jacobian is not None else None,
        free_entropy=_guard(free_entropy, math.nan) if reference.free_entropy is not None else None,
        stability=_guard(stability, math.nan) if reference.has_margin else None,
        events=tuple(Event(ev.name, event(ev.name)) for ev in reference.events),
        starts=starts,
        label=label,
        canonical=reference.canonical,
        scale=None if reference.scale is None else np.asarray(reference.scale, dtype=float),
        bounds=bounds,
        parameters=names,
    )


def spec_with_real(cls: type[BaseModel], base: dict[str, Any], name: str, value: float) -> BaseModel:
    """The spec ``base`` with its integer field ``name`` at the real ``value``: validated at the nearest admitted
    integer (the spec's own rules, across fields too), then holding ``value`` itself (ValidationError outside the
    field's bounds). Only for a field the theory declares real (``Theory.real_integers``)."""
    lo, hi = field_bounds(cls, name)
    if not lo <= value <= hi:  # outside the field's own bounds: the spec names the violation at the integer beyond
        cls.model_validate({**base, name: math.floor(value) if value < lo else math.ceil(value)}, strict=False)
    near = round(value)
    near = max(near, math.ceil(lo)) if near < lo else min(near, math.floor(hi)) if near > hi else near
    return cls.model_validate({**base, name: near}, strict=False).model_copy(update={name: float(value)})


class Rebound:
    """The theory's bound problem of the spec with λ1 set, in λ2: a small LRU memo, one per two-parameter problem.

    ``real``: λ1 is an integer field the theory declares real; the spec holds its real value (:func:`spec_with_real`).
    """

    def __init__(
        self, theory: BindsProblems, spec: BaseModel, parameters: tuple[str, str], options: SolverOptions | None,
        real: bool = False,
    ):
        self.theory = theory
        self.cls = type(spec)
        self.base = spec.model_dump()
        self.p1, self.p2 = parameters
        self.options = options
        self.real = real
        self._memo: OrderedDict[float, Problem | None] = OrderedDict()
        self._lock = threading.Lock()
        self.reference = theory.problem(spec, self.p2, options)
        self._memo[float(getattr(spec, self.p1))] = self.reference

    def __call__(self, lam: np.ndarray) -> tuple[Problem | None, float]:
        key = float(lam[0])
        with self._lock:
            hit = self._memo.get(key, self)
            if hit is not self:
                self._memo.move_to_end(key)
        if hit is self:
            try:
                spec = (spec_with_real(self.cls, self.base, self.p1, key) if self.real
                        else self.cls.model_validate({**self.base, self.p1: key}, strict=False))
            except ValidationError:
                hit = None  # outside the spec's domain
            else:
                hit = self.theory.problem(spec, self.p2, self.options)
            with self._lock:
                self._memo[key] = hit  # type: ignore[assignment]
                while len(self._memo) > MEMO_SIZE:
                    self._memo.popitem(last=False)
        return hit, float(lam[1])  # type: ignore[return-value]


def integers_only(spec: BaseModel, parameters: Sequence[str], real: Collection[str]) -> list[str]:
    """The parameters that are integer fields of ``spec`` the theory does not declare real (``real``)."""
    return [p for p in parameters if integer_field(spec, p) and p not in real]


def rebound(
    theory: BindsProblems, spec: BaseModel, parameters: tuple[str, str], options: SolverOptions | None = None,
    real: Collection[str] = (),
) -> Problem:
    """The generic two-parameter problem of a theory: its spec re-bound at every λ1, swept in λ2.

    A line passes through real values of both parameters. An integer field is continued as a real number only
    where the theory's equations are defined at real values (``real``, the theory's ``real_integers``; any other
    is a ``ValueError`` naming it). The bound problem's own control parameter is real (as along a continuation
    sweep): so when λ1 is such a field and λ2 is not, the spec is re-bound at every λ2 instead and λ1 is the bound
    problem's control. When both are, λ2 is the control and the spec is re-bound at every real λ1
    (:func:`spec_with_real`).
    """
    p1, p2 = parameters
    whole = integers_only(spec, parameters, real)
    if whole:
        raise ValueError(f"{whole} take integer values only: {type(theory).__name__}'s equations are not defined "
                         "between them, and lines are continued in real parameters")
    bounds = (field_bounds(spec, p1), field_bounds(spec, p2))
    if integer_field(spec, p1):
        if not integer_field(spec, p2):
            memo = Rebound(theory, spec, (p2, p1), options)
            return lift(lambda lam: memo(np.asarray(lam, dtype=float)[::-1]), memo.reference, parameters, bounds)
        memo = Rebound(theory, spec, parameters, options, real=True)
        return lift(memo, memo.reference, parameters, bounds)
    memo = Rebound(theory, spec, parameters, options)
    return lift(memo, memo.reference, parameters, bounds)
