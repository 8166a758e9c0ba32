"""The problem the line tracers accept in two parameters: F(x, λ) = 0 with λ = (λ1, λ2).

A residual on a flat state vector ``x`` with optional structure; derivatives that are not given are taken by
finite differences (see ``derivatives``). In one parameter the tracers take the engine's own
:class:`~solvers.core.problem.Problem`; :meth:`TwoParameterProblem.restrict` is that problem along λ2 at a fixed
λ1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from solvers.core.problem import Event, Problem, no_starts

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

    def restrict(self, lam1: float) -> Problem:
        """The problem along λ2 at fixed λ1 (p = λ2), as the engine's one-parameter problem (its stability the
        problem's own margin, none when it has none)."""

        def lam(p: float) -> np.ndarray:
            return np.array([lam1, p], dtype=float)

        def opt(fn: Callable[..., Any] | None) -> Callable[..., Any] | None:
            return None if fn is None else (lambda x, p: fn(x, lam(p)))

        starts = self.starts
        label = self.label
        return Problem(
            residual=lambda x, p: self.F(x, lam(p)),
            dim=self.dim,
            starts=no_starts if starts is None else (lambda p: starts(lam(p))),
            jacobian=opt(self.jacobian),
            free_entropy=opt(self.free_entropy),
            stability=opt(self.stability),
            kind="saddle",
            label=None if label is None else (lambda x, p, s: label(x, lam(p), s)),
            canonical=self.canonical,
            scale=self.scale,
            events=tuple(Event(name, opt(g)) for name, g in self.events.items()),  # type: ignore[arg-type]
        )
