"""The problems the line tracers accept: F(x, λ) = 0 in two parameters, and F(x, p) = 0 in one.

Both are small explicit contracts, independent of the engine's ``Problem``: a residual on a flat
state vector ``x`` with optional structure. Derivatives that are not given are taken by finite
differences (see ``derivatives``). ``from_problem`` adapts any object that has the engine's
one-parameter attributes (``F``, ``dim``, optional ``jacobian``, ``stability``, ``free_entropy``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

Vector = np.ndarray
Params = np.ndarray  # shape (2,): (λ1, λ2)
Bounds = tuple[tuple[float, float], tuple[float, float]]

UNBOUNDED: Bounds = ((-math.inf, math.inf), (-math.inf, math.inf))


def _no_events() -> Mapping[str, Callable[[Vector, Params], float]]:
    return MappingProxyType({})


def _reversed(lam: Params) -> Params:
    return np.asarray(lam, dtype=float)[::-1].copy()


@dataclass(frozen=True)
class TwoParameterProblem:
    """F(x, λ) = 0 with λ = (λ1, λ2).

    Attributes:
        F: the residual, ``F(x, lam) -> ndarray`` of shape ``(dim,)``; ``lam`` is an ndarray of shape (2,).
        dim: length of x.
        jacobian: dF/dx, ``(dim, dim)``; fourth-order central differences when absent.
        free_entropy: Φ(x, λ), larger is preferred; needed for first-order lines.
        stability: a margin, > 0 stable, smooth in (x, λ); needed for stability-loss lines and to
            tell which branches may coexist at a first-order line.
        events: named indicators g(x, λ) whose zeros are special points (event lines).
        starts: λ -> named starting points for the one-parameter scans of ``trace_boundaries``.
        label: (x, λ, start) -> branch name; default: the start's name.
        canonical: maps a state to the representative of its symmetry class (e.g. ρ -> |ρ|),
            used only to recognise one solution in two mirror images.
        scale: typical magnitude of each component of x (arclength and duplicate tests use it).
        bounds: the domain of (λ1, λ2); lines stop at its edge.
        names: names of (λ1, λ2), for messages.
    """

    F: Callable[[Vector, Params], Vector]
    dim: int
    jacobian: Callable[[Vector, Params], np.ndarray] | None = None
    free_entropy: Callable[[Vector, Params], float] | None = None
    stability: Callable[[Vector, Params], float] | None = None
    events: Mapping[str, Callable[[Vector, Params], float]] = field(default_factory=_no_events)
    starts: Callable[[Params], Mapping[str, Vector]] | None = None
    label: Callable[[Vector, Params, str], str] | None = None
    canonical: Callable[[Vector], Vector] | None = None
    scale: Vector | None = None
    bounds: Bounds = UNBOUNDED
    names: tuple[str, str] = ("lambda1", "lambda2")

    def __post_init__(self) -> None:
        if self.dim < 1:
            raise ValueError("dim must be at least 1")
        if self.scale is not None and np.shape(self.scale) != (self.dim,):
            raise ValueError(f"scale must have shape ({self.dim},)")
        for lo, hi in self.bounds:
            if not lo < hi:
                raise ValueError("each parameter bound needs lo < hi")

    def x_scale(self) -> np.ndarray:
        return np.ones(self.dim) if self.scale is None else np.asarray(self.scale, dtype=float)

    def swapped(self) -> TwoParameterProblem:
        """The same problem with λ1 and λ2 exchanged: its ``restrict(λ2)`` is the problem along λ1 at fixed λ2
        (the scans of a box's λ2 edges)."""

        def swap(fn: Callable[..., Any] | None) -> Callable[..., Any] | None:
            return None if fn is None else (lambda x, lam, *rest: fn(x, _reversed(lam), *rest))

        starts = self.starts
        return TwoParameterProblem(
            F=swap(self.F),  # type: ignore[arg-type]
            dim=self.dim,
            jacobian=swap(self.jacobian),
            free_entropy=swap(self.free_entropy),
            stability=swap(self.stability),
            events=MappingProxyType({k: swap(g) for k, g in self.events.items()}),
            starts=None if starts is None else (lambda lam: starts(_reversed(lam))),
            label=swap(self.label),
            canonical=self.canonical,
            scale=self.scale,
            bounds=(self.bounds[1], self.bounds[0]),
            names=(self.names[1], self.names[0]),
        )

    def restrict(self, lam1: float) -> OneParameterProblem:
        """The problem along λ2 at fixed λ1 (p = λ2)."""

        def lam(p: float) -> np.ndarray:
            return np.array([lam1, p], dtype=float)

        def opt(fn: Callable[..., Any] | None) -> Callable[..., Any] | None:
            return None if fn is None else (lambda x, p: fn(x, lam(p)))

        starts = self.starts
        label = self.label
        return OneParameterProblem(
            F=lambda x, p: self.F(x, lam(p)),
            dim=self.dim,
            jacobian=opt(self.jacobian),
            free_entropy=opt(self.free_entropy),
            stability=opt(self.stability),
            events=MappingProxyType({k: opt(g) for k, g in self.events.items()}),
            starts=None if starts is None else (lambda p: starts(lam(p))),
            label=None if label is None else (lambda x, p, s: label(x, lam(p), s)),
            canonical=self.canonical,
            scale=self.scale,
        )


@dataclass(frozen=True)
class OneParameterProblem:
    """F(x, p) = 0 with a scalar parameter p; the same optional structure as ``TwoParameterProblem``."""

    F: Callable[[Vector, float], Vector]
    dim: int
    jacobian: Callable[[Vector, float], np.ndarray] | None = None
    free_entropy: Callable[[Vector, float], float] | None = None
    stability: Callable[[Vector, float], float] | None = None
    events: Mapping[str, Callable[[Vector, float], float]] = field(default_factory=_no_events)
    starts: Callable[[float], Mapping[str, Vector]] | None = None
    label: Callable[[Vector, float, str], str] | None = None
    canonical: Callable[[Vector], Vector] | None = None
    scale: Vector | None = None

    def __post_init__(self) -> None:
        if self.dim < 1:
            raise ValueError("dim must be at least 1")

    def x_scale(self) -> np.ndarray:
        return np.ones(self.dim) if self.scale is None else np.asarray(self.scale, dtype=float)


def from_problem(problem: Any) -> OneParameterProblem:
    """A ``OneParameterProblem`` from an engine problem (anything with ``F(x, p)`` and ``dim``)."""
    starts = getattr(problem, "starts", None)
    return OneParameterProblem(
        F=problem.F,
        dim=int(problem.dim),
        jacobian=getattr(problem, "jacobian", None),
        free_entropy=getattr(problem, "free_entropy", None),
        stability=getattr(problem, "stability", None),
        starts=starts,
        canonical=getattr(problem, "canonical", None),
        scale=getattr(problem, "scale", None),
    )
