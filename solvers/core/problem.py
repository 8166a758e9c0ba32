"""The one object a theory hands to the engine: a parametrised system F(x; p) = 0, bound to its model.

The engine knows no physics. A theory describes its saddle-point equations as a residual on a
flat vector of order parameters ``x`` at a control parameter ``p``: a scalar (the value of the
swept field; for a single solve, the spec's own value), or, for the line tracers
(:mod:`solvers.core.lines`), a pair λ = (λ1, λ2) of named parameters, plus optional structure the engine can
exploit: a fixed-point map for Picard/Anderson, an analytic Jacobian for Newton, a free entropy
to rank branches, a stability margin, names for the solutions, an exhaustive root search where
the theory can afford one (e.g. a 1-D scan), event indicators whose zeros are special points, and
``report``, which names the order parameters and observables of a solution. A problem is built
once per solve or sweep from a validated spec (``Theory.problem``) and carries everything it
needs; it never rebuilds its model from the length of ``x``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from solvers.core.newton import fd_jacobian
from solvers.core.results import Notes, Report
from solvers.core.special_points import SpecialKind, Transition

if TYPE_CHECKING:
    from solvers.core.curve_results import Sweep
    from solvers.core.results import Catalogue

Vector = np.ndarray
#: A parameter value: a float in one parameter, an ndarray of shape (2,) in two.
Param = float | np.ndarray
Residual = Callable[[Vector, Param], Vector]
Scalar = Callable[[Vector, Param], float]
Bounds = tuple[tuple[float, float], ...]

#: Every kind of special point the engine looks for by default.
ALL_KINDS = frozenset(SpecialKind)


def no_starts(p: Param) -> Mapping[str, Vector]:
    """The starts of a problem that is only continued from given points."""
    return {}


@dataclass(frozen=True)
class Event:
    """A named scalar function of the state whose sign change along a branch is a special point.

    Attributes:
        name: identifies the event in results.
        indicator: g(x, p); its zero is the event. Non-finite values are ignored.
        transition: how the theory classifies the event ("first_order" for a phase boundary, "spinodal").
        branches: the names the event is reported with (e.g. the two phases it separates); default:
            the branch on which it occurs.
        detail: one sentence for the user.
        smooth: the indicator is continuous across its zero (refined by Brent's method); False for a
            sign-only indicator (refined by bisection).
    """

    name: str
    indicator: Scalar
    transition: Transition = "spinodal"
    branches: tuple[str, ...] | None = None
    detail: str = ""
    smooth: bool = True


@dataclass(frozen=True)
class Problem:
    """F(x; p) = 0 with the structure the engine may use, continued in one or two named parameters.

    Every hook that takes the parameter gets ``p`` as a float in one parameter and as an ndarray
    λ = (λ1, λ2) of shape (2,) in two; :meth:`restrict` and :meth:`swapped` derive the one-parameter
    problems of a two-parameter one.

    Attributes:
        residual: F(x, p). A zero is a solution. For a fixed-point theory G, set
            ``residual = G(x) - x`` (or leave it None and give ``fixed_point``).
        dim: length of x.
        starts: p -> named starting points ("uninformative", "informative", ...); none for a problem that is
            only continued from given points.
        fixed_point: G(x, p), enables ``picard``/``anderson``; its residual is G(x) - x.
        jacobian: dF/dx (dim x dim); finite differences are used when absent.
        free_entropy: larger is preferred; the equilibrium is the stable branch maximising it.
            Theories with an action S give ``-S``.
        stability: a margin, > 0 stable, < 0 unstable, smooth in p so that a sign change can be
            bisected. When absent the engine derives one from ``kind``.
        kind: "gradient" when F is the gradient of an action to be minimised (stable = positive
            definite Jacobian); "fixed_point" when stability means a contracting map;
            "saddle" when the theory must supply ``stability`` itself (else: unknown).
        label: names a solution (e.g. "center", "aligned"); default: the start it came from.
        enumerate: p -> list of (name, x) of *all* solutions, for theories that can afford an
            exhaustive search; the engine then uses it in addition to the starts.
        exhaustive: ``enumerate`` provably finds every solution (e.g. it brackets every sign change of a
            1-D reduced residual): when it returns roots, the named and warm starts are not solved (they
            could only reach the same solutions again); when it returns none, they are.
        project: maps an iterate back into the domain (e.g. clips a variance to > 0).
        canonical: maps a solution to the representative of its symmetry class (e.g. rho -> |rho|
            for an even potential); used to merge mirror images and to report solutions.
        scale: typical magnitude of each component, for duplicate merging.
        names: names of the components of x (for diagnostics).
        report: (x, p) -> the named order parameters and observables of a solution.
        report_many: [(x, p), ...] -> the reports of many solutions at once, each equal to ``report``'s up to
            rounding; where a theory gives it, a sweep reports its points in blocks
            (:mod:`solvers.core.report_blocks`), and ``notes`` sees a catalogue before its reports are attached.
        events: event indicators located along every branch of a sweep.
        detect: the kinds of special point the engine looks for along a sweep (default: all).
        notes: catalogue -> what the theory adds about the whole catalogue (not one branch).
        sweep_notes: sweep -> what the theory adds about a whole sweep.
        point_state: (x, p) -> what to report about the state at a refined special point.
        edge: (x, p) -> True where x lies on a singular edge of the theory's domain, where its equations
            degenerate (an unknown diverges, e.g. noiseless perfect recovery). No curve is traced there: a
            traced curve ends before it. A stable solution on the edge (the limit itself) is still a branch,
            found at each point of a sweep from the theory's starts; an unstable one is round-off along a
            branch running into the singular point and is not reported. The singular point is the theory's
            to name (an event).
        domain: (x, p) -> the name of the quantity that has left its domain at (x, p) (e.g. "a variance
            q <= 0"), None inside it. Used to say why a traced curve ends where the residual cannot be
            evaluated; without it the engine reports the numerical error it met.
        parameters: the names of the one or two parameters p stands for (for messages and results).
        bounds: the domain of each parameter, ``((lo, hi), ...)``; unbounded when not given. Lines stop at its edge.
    """

    residual: Residual | None
    dim: int
    starts: Callable[[Param], Mapping[str, Vector]] = no_starts
    fixed_point: Residual | None = None
    jacobian: Callable[[Vector, Param], np.ndarray] | None = None
    free_entropy: Scalar | None = None
    stability: Scalar | None = None
    kind: Literal["gradient", "fixed_point", "saddle"] = "fixed_point"
    label: Callable[[Vector, Param, str], str] | None = None
    enumerate: Callable[[Param], Sequence[tuple[str, Vector]]] | None = None
    exhaustive: bool = False
    project: Callable[[Vector], Vector] | None = None
    canonical: Callable[[Vector], Vector] | None = None
    scale: Vector | None = None
    names: Sequence[str] = field(default_factory=tuple)
    report: Callable[[Vector, Param], Report] | None = None
    report_many: Callable[[Sequence[tuple[Vector, Param]]], Sequence[Report]] | None = None
    events: tuple[Event, ...] = ()
    detect: frozenset[SpecialKind] = ALL_KINDS
    notes: Callable[[Catalogue], Notes] | None = None
    sweep_notes: Callable[[Sweep], Notes] | None = None
    point_state: Callable[[Vector, Param], Mapping[str, object]] | None = None
    edge: Callable[[Vector, Param], bool] | None = None
    domain: Callable[[Vector, Param], str | None] | None = None
    parameters: tuple[str, ...] = ("p",)
    bounds: Bounds | None = None

    def __post_init__(self) -> None:
        if self.residual is None and self.fixed_point is None:
            raise ValueError("Problem needs a residual or a fixed_point map")
        if len(self.parameters) not in (1, 2):
            raise ValueError("a problem is continued in one or two parameters")
        if self.dim < 1:
            raise ValueError("dim must be at least 1")
        if self.scale is not None and np.shape(self.scale) != (self.dim,):
            raise ValueError(f"scale must have shape ({self.dim},)")
        bounds = ((-math.inf, math.inf),) * len(self.parameters) if self.bounds is None else self.bounds
        if len(bounds) != len(self.parameters) or not all(lo < hi for lo, hi in bounds):
            raise ValueError("need one bound lo < hi per parameter")
        object.__setattr__(self, "bounds", tuple((float(lo), float(hi)) for lo, hi in bounds))

    def F(self, x: Vector, p: float) -> Vector:
        """The residual, derived from the fixed-point map when only that was given."""
        if self.residual is not None:
            return np.asarray(self.residual(x, p), dtype=float)
        assert self.fixed_point is not None
        return np.asarray(self.fixed_point(x, p), dtype=float) - x

    def indicator(self, name: str) -> Scalar:
        """The indicator of the event called ``name``."""
        return next(e.indicator for e in self.events if e.name == name)

    def name_of(self, x: Vector, p: float, start: str) -> str:
        return self.label(x, p, start) if self.label is not None else start

    def on_edge(self, x: Vector, p: float) -> bool:
        return self.edge is not None and bool(self.edge(x, p))

    def looks_for(self, kind: SpecialKind) -> bool:
        return kind in self.detect

    def x_scale(self) -> np.ndarray:
        """The typical magnitude of each component (ones when the theory gives none)."""
        return np.ones(self.dim) if self.scale is None else np.asarray(self.scale, dtype=float)

    @property
    def has_margin(self) -> bool:
        """The engine can tell stability: the theory's margin, or one derived from ``kind``."""
        return self.stability is not None or self.kind == "gradient" or (
            self.kind == "fixed_point" and self.fixed_point is not None)

    def margin(self, x: Vector, p: float) -> float | None:
        """The stability margin at (x, p): > 0 stable, < 0 unstable; None when the theory gives no way to tell.

        The theory's own ``stability``; else, for a gradient problem, the least eigenvalue of the symmetrised
        Jacobian (an action's Hessian); else, for a fixed-point map G, 1 − the spectral radius of G's Jacobian.
        """
        if self.stability is not None:
            return float(self.stability(x, p))
        if self.kind == "gradient":
            J = self.jacobian(x, p) if self.jacobian is not None else fd_jacobian(lambda y: self.F(y, p), x)
            H = 0.5 * (np.asarray(J) + np.asarray(J).T)
            return float(np.linalg.eigvalsh(H)[0])
        if self.kind == "fixed_point" and self.fixed_point is not None:
            G = self.fixed_point
            Jg = fd_jacobian(lambda y: np.asarray(G(y, p), dtype=float), x)
            return float(1.0 - np.max(np.abs(np.linalg.eigvals(Jg))))
        return None

    def restrict(self, lam1: float) -> Problem:
        """The problem along λ2 at fixed λ1 (p = λ2), of a problem in two parameters."""
        assert len(self.parameters) == 2, "only a problem in two parameters is restricted"
        return self._reparametrised(lambda p: np.array([lam1, p], dtype=float), self.parameters[1:], self.bounds[1:])

    def swapped(self) -> Problem:
        """The same problem with λ1 and λ2 exchanged: its ``restrict(λ2)`` is the problem along λ1 at fixed λ2
        (the scans of a box's λ2 edges)."""
        assert len(self.parameters) == 2, "only a problem in two parameters is swapped"
        return self._reparametrised(lambda lam: np.asarray(lam, dtype=float)[::-1].copy(), self.parameters[::-1],
                                    self.bounds[::-1])

    def _reparametrised(self, at: Callable[[Param], Param], parameters: tuple[str, ...], bounds: Bounds) -> Problem:
        """This problem in a new parameter q: every hook that takes a parameter value sees ``at(q)``."""

        def xp(fn: Callable[..., object] | None) -> Callable[..., object] | None:
            return None if fn is None else (lambda x, q, *rest: fn(x, at(q), *rest))

        starts, enumerate_, report_many = self.starts, self.enumerate, self.report_many
        return dataclasses.replace(
            self,
            residual=xp(self.residual), fixed_point=xp(self.fixed_point), jacobian=xp(self.jacobian),
            free_entropy=xp(self.free_entropy), stability=xp(self.stability), label=xp(self.label),
            report=xp(self.report), point_state=xp(self.point_state), edge=xp(self.edge), domain=xp(self.domain),
            starts=starts if starts is no_starts else (lambda q: starts(at(q))),
            enumerate=None if enumerate_ is None else (lambda q: enumerate_(at(q))),
            report_many=None if report_many is None else (
                lambda points: report_many([(x, at(q)) for x, q in points])),
            events=tuple(dataclasses.replace(e, indicator=xp(e.indicator)) for e in self.events),
            parameters=tuple(parameters), bounds=bounds,
        )
