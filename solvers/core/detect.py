"""The one place where special points are found and refined: along traced curves and along grids alike.

Both sweep methods describe their solutions as *tracks*: pieces of one named branch, ordered in
the parameter, each point carrying its state, stability margin and free entropy. On a traced
curve a track is a segment between folds and stability changes; on a grid it is a run of
neighbouring values at which a branch of the same name and stability was found. The detector
then looks, in the same way for both, for

- stability losses (a sign change of the margin between two points of a branch),
- free-entropy crossings of two stable tracks (first-order points), on exact differences of
  Newton-polished states at every point of their overlap,
- zeros of the problem's event indicators along every track,

and refines each one. A :class:`Refiner` says how to solve on a track between two of its points:
along the arclength with the continuation's corrector (curves), or by Newton from interpolated
guesses (grids). Folds are found by the continuation itself (the tangent turns) and, on a grid,
bracketed where a branch exists on one side of two neighbours only.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from solvers.core.branch_points import classify_loss
from solvers.core.catalogue import same_solution
from solvers.core.continuation import ProblemSystem, refine_between
from solvers.core.curve import Curve, CurvePoint, interpolations
from solvers.core.errors import or_none
from solvers.core.options import SolverOptions
from solvers.core.problem import Event, Problem
from solvers.core.results import MARGINAL, SolveResult
from solvers.core.roots import bracketed_root
from solvers.core.solve import solve_at
from solvers.core.special_points import SpecialKind, SpecialPoint

#: Relative parameter tolerance of every refined special point.
REFINE_RTOL = 1e-14
#: A fold within this relative distance of a stability loss is one branch point (a pitchfork, say).
BRANCH_POINT_REL = 1e-4


def refinement_precision(options: SolverOptions) -> float:
    return max(REFINE_RTOL, options.tol_abs + options.tol_rel)


class RefinementFailed(Exception):
    """A solve needed to refine a special point did not converge."""


#: Two tracks (with their index among the stable tracks) and the polished states found so far.
_Pair = tuple[tuple[int, "Track"], tuple[int, "Track"], dict[tuple[int, float], tuple[np.ndarray, float]]]


@dataclass(frozen=True)
class Track:
    """A piece of one named branch, in order along the branch."""

    name: str
    points: tuple[CurvePoint, ...]

    @property
    def stable(self) -> bool | None:
        flags = [q.stable for q in self.points if q.stable is not None]
        return None if not flags else bool(np.mean(flags) > 0.5)

    def p_range(self) -> tuple[float, float]:
        ps = [q.p for q in self.points]
        return min(ps), max(ps)

    @cached_property
    def _by_p(self) -> dict[float, CurvePoint]:
        by_p: dict[float, CurvePoint] = {}
        for q in self.points:
            by_p.setdefault(q.p, q)  # the first point at a value, as a scan would find it
        return by_p

    def at(self, p: float) -> CurvePoint | None:
        """The track's own point at exactly ``p``, if it has one."""
        return self._by_p.get(p)

    @cached_property
    def parameters(self) -> np.ndarray:
        """Each point's p."""
        return np.fromiter((q.p for q in self.points), float, len(self.points))

    def interpolations(self, p: float) -> Iterator[np.ndarray]:
        """:func:`~solvers.core.curve.interpolations` along the track."""
        return interpolations(self.points, p, self.parameters)

    def guess(self, p: float) -> np.ndarray | None:
        """Linear interpolation of the state at ``p`` along the track (None outside it)."""
        first = next(self.interpolations(p), None)
        if first is None and len(self.points) == 1 and self.points[0].p == p:
            return self.points[0].x.copy()
        return first


def curve_cuts(curve: Curve) -> list[tuple[int, SpecialKind]]:
    """Where a curve is cut into tracks: after point ``index``, at a fold or a stability change."""
    pts = curve.points
    cuts: list[tuple[int, SpecialKind]] = [(f.index, SpecialKind.FOLD) for f in curve.folds]
    fold_idx = {f.index for f in curve.folds}
    for i in range(len(pts) - 1):
        a, b = pts[i].stable, pts[i + 1].stable
        if a is not None and b is not None and a != b and not ({i - 1, i, i + 1} & fold_idx):
            cuts.append((i, SpecialKind.STABILITY_LOSS))
    return sorted(cuts)


def curve_tracks(problem: Problem, curve: Curve, cuts: list[tuple[int, SpecialKind]]) -> list[tuple[int, Track]]:
    """The curve's pieces between cuts, named by the theory at their middle; with their first point's index."""
    pieces: list[tuple[int, tuple[CurvePoint, ...]]] = []
    start = 0
    for idx, _ in cuts:
        pieces.append((start, curve.points[start : idx + 1]))
        start = idx + 1
    pieces.append((start, curve.points[start:]))
    pieces = [(s, pc) for s, pc in pieces if pc]
    names = []
    for k, (_, pc) in enumerate(pieces):
        mid = pc[len(pc) // 2]
        names.append(problem.name_of(mid.x, mid.p, curve.name if len(pieces) == 1 else f"{curve.name}#{k}"))
    last = curve.ends[1]
    if len(pieces) > 1 and last is not None and last.kind == "closed":
        # A closed curve ends on its first point: its last piece and its first are one branch, named at its middle.
        joined = (*pieces[-1][1], *pieces[0][1])
        mid = joined[len(joined) // 2]
        names[0] = names[-1] = problem.name_of(mid.x, mid.p, f"{curve.name}#0")
    return [(s, Track(name, pc)) for (s, pc), name in zip(pieces, names, strict=True)]


def newton_options(options: SolverOptions) -> SolverOptions:
    return options.model_copy(update={"method": "newton"})


def polish(problem: Problem, p: float, guess: np.ndarray, options: SolverOptions) -> SolveResult:
    return solve_at(problem, p, guess, newton_options(options))


def _marginal_end(a: CurvePoint, b: CurvePoint) -> tuple[float, np.ndarray, float] | None:
    """(p, x, uncertainty) of a stability change whose bracket ends on a marginal point (|margin| ≤ ``MARGINAL``,
    which counts as stable whatever its sign, so the margin need not change sign between the two): the change is
    at that point, to within its margin over the margin's slope between the two. A curve's step that lands on a
    branch point to round-off gives one, and no corrector converges onto the branch point itself."""
    for q, other in ((a, b), (b, a)):
        if q.margin is None or other.margin is None or abs(q.margin) > MARGINAL or other.p == q.p:
            continue
        slope = abs(other.margin - q.margin) / abs(other.p - q.p)
        if slope > 0:
            return q.p, np.array(q.x, dtype=float), abs(q.margin) / slope
    return None


def _sign_change(a: float | None, b: float | None) -> bool:
    if a is None or b is None or not (np.isfinite(a) and np.isfinite(b)) or a == 0 or b == 0:
        return False
    return bool(np.sign(a) != np.sign(b))


class Refiner:
    """Solves on a track between two of its points by Newton from interpolated guesses (grids)."""

    def __init__(self, problem: Problem, options: SolverOptions):
        self.problem = problem
        self.options = options

    def solve(self, p: float, guesses: Sequence[np.ndarray]) -> np.ndarray:
        """The solution at ``p`` from the first guess that converges (then the problem's starts)."""
        for x0 in [*guesses, *self.problem.starts(p).values()]:
            res = polish(self.problem, p, np.asarray(x0, dtype=float), self.options)
            if res.converged:
                return res.x
        raise RefinementFailed(f"no solve converged at p = {p!r}")

    def between(self, a: CurvePoint, b: CurvePoint, p: float) -> np.ndarray:
        w = (p - a.p) / (b.p - a.p) if b.p != a.p else 0.0
        return self.solve(p, [(1 - w) * a.x + w * b.x, a.x, b.x])

    def root(
        self, a: CurvePoint, b: CurvePoint, g: Callable[[np.ndarray, float], float], smooth: bool = True
    ) -> tuple[float, np.ndarray, float] | None:
        """Zero of g(x(p), p) for the solution x(p) between ``a`` and ``b``, with the state there and the
        root finder's final bracket (its half of greater width); None when it cannot be refined."""
        found: dict[float, np.ndarray] = {}

        def value(p: float) -> float:
            x = self.between(a, b, p)
            found[p] = x
            v = float(g(x, p))
            if not np.isfinite(v):
                raise RefinementFailed("non-finite indicator")
            return v

        lo, hi = sorted((a.p, b.p))
        xtol = 1e-13 * max(abs(lo), abs(hi), 1e-300)
        try:
            root = bracketed_root(value, lo, hi, smooth=smooth, xtol=xtol, rtol=REFINE_RTOL,
                                  failures=(RefinementFailed,))
            x = found.get(root.x)
            return root.x, (x if x is not None else self.between(a, b, root.x)), root.uncertainty
        except (RefinementFailed, RuntimeError, ValueError):
            # ValueError: brentq/bisect found no sign change at the solved end points.
            return None


class CurveRefiner(Refiner):
    """On a traced curve, stability changes are refined along the arclength with the corrector."""

    def __init__(self, problem: Problem, options: SolverOptions, system: ProblemSystem):
        super().__init__(problem, options)
        self.system = system

    def margin_root(self, a: CurvePoint, b: CurvePoint) -> tuple[float, np.ndarray, float] | None:
        n = a.x.size

        def g(z: np.ndarray, tau: np.ndarray) -> float:
            m = self.problem.margin(z[:n], float(z[n]))
            return float(m) if m is not None else 0.0

        assert a.margin is not None
        return refine_between(self.system, self.options, a, b, g, a.margin)


class Detector:
    """Stability losses, free-entropy crossings and events of one problem, refined, within [p_lo, p_hi]."""

    def __init__(self, problem: Problem, options: SolverOptions, refiner: Refiner, p_lo: float, p_hi: float):
        self.problem = problem
        self.options = options
        self.refiner = refiner
        self.p_lo, self.p_hi = p_lo, p_hi
        self.width = (p_hi - p_lo) or 1.0
        #: What a refined location is good to: the root finder's tolerance, or the solves' residual tolerance
        #: when that is coarser (each evaluation is a solve converged to it).
        self.precision = refinement_precision(options)
        #: The branch points classified so far (typed bifurcations).
        self._branch_points: list[SpecialPoint] = []

    def inside(self, p: float) -> bool:
        return self.p_lo - 1e-9 * self.width <= p <= self.p_hi + 1e-9 * self.width

    def state(self, x: np.ndarray | None, p: float) -> dict[str, object]:
        if x is None or self.problem.point_state is None:
            return {}
        return dict(self.problem.point_state(x, p))

    # ---- stability -----------------------------------------------------------------------------
    def stability_loss(self, a: CurvePoint, b: CurvePoint, lost: str) -> SpecialPoint | None:
        """The sign change of the margin between points ``a`` and ``b`` of branch ``lost``."""
        if not self.problem.looks_for(SpecialKind.STABILITY_LOSS) or a.margin is None:
            return None
        if isinstance(self.refiner, CurveRefiner):
            found = self.refiner.margin_root(a, b)
        else:
            found = self.refiner.root(a, b, lambda x, p: float(self.problem.margin(x, p) or 0.0))
        found = found or _marginal_end(a, b)
        p_star = found[0] if found else 0.5 * (a.p + b.p)
        if not self.inside(p_star):
            return None
        sp = SpecialPoint(
            SpecialKind.STABILITY_LOSS,
            float(p_star),
            (lost,),
            refined_to=self.precision if found else None,
            uncertainty=found[2] if found else abs(b.p - a.p) / 2,
            detail=f"local stability of '{lost}' changes",
            x=found[1] if found else None,
        )
        # A branch point (pitchfork, transcritical) is reported as a bifurcation with its type; one met again
        # from another branch (the branch that splits off loses stability there too) is not classified twice.
        known = next((k for k in self._branch_points if sp.x is not None and same_branch_point(self.problem, k, sp)),
                     None)
        if known is not None:
            lost = ", ".join(repr(n) for n in sp.branches)
            return sp.replace(kind=SpecialKind.BIFURCATION, bifurcation=known.bifurcation,
                              detail=f"{known.bifurcation.describe()}: {lost} loses stability at this branch point")  # type: ignore[union-attr]
        sp = classify_loss(self.problem, sp, [(a.p, a.x), (b.p, b.x)], self.width, self.options)
        if sp.bifurcation is not None:
            self._branch_points.append(sp)
        return sp

    # ---- events --------------------------------------------------------------------------------
    def events(self, track: Track) -> list[SpecialPoint]:
        if not self.problem.events or not self.problem.looks_for(SpecialKind.EVENT):
            return []
        out: list[SpecialPoint] = []
        pts = sorted(track.points, key=lambda q: q.p)
        for ev in self.problem.events:
            vals = [self._indicator(ev, q.x, q.p) for q in pts]
            for (a, fa), (b, fb) in itertools.pairwise(zip(pts, vals, strict=True)):
                if not _sign_change(fa, fb):
                    continue
                found = self.refiner.root(a, b, ev.indicator, smooth=ev.smooth)
                p_star = found[0] if found else 0.5 * (a.p + b.p)
                if not self.inside(p_star):
                    continue
                x = found[1] if found else None
                # An event the theory classifies as a first-order transition is one, located by its indicator.
                kind = SpecialKind.FIRST_ORDER if ev.transition == "first_order" else SpecialKind.EVENT
                out.append(
                    SpecialPoint(
                        kind,
                        float(p_star),
                        tuple(ev.branches) if ev.branches is not None else (track.name,),
                        refined_to=self.precision if found else None,
                        uncertainty=found[2] if found else abs(b.p - a.p) / 2,
                        detail=ev.detail,
                        event=ev.name,
                        event_transition=ev.transition,
                        x=x,
                        state=self.state(x, p_star),
                    )
                )
        return out

    @staticmethod
    def _indicator(ev: Event, x: np.ndarray, p: float) -> float | None:
        v = or_none(ev.indicator, x, p)
        if v is None:
            return None
        v = float(v)
        return v if np.isfinite(v) else None

    # ---- first-order points ----------------------------------------------------------------------
    def first_order(self, tracks: Sequence[Track]) -> list[SpecialPoint]:
        """Free-entropy crossings between every pair of stable tracks that overlap in the parameter."""
        if self.problem.free_entropy is None or not self.problem.looks_for(SpecialKind.FIRST_ORDER):
            return []
        stable = [t for t in tracks if t.stable and len(t.points) >= 2]
        # Polished states per (track, value), shared by every pair and root bracket that needs them.
        states: dict[tuple[int, float], tuple[np.ndarray, float]] = {}
        out: list[SpecialPoint] = []
        for (ia, A), (ib, B) in itertools.combinations(enumerate(stable), 2):
            if A.name == B.name:
                continue
            (a_lo, a_hi), (b_lo, b_hi) = A.p_range(), B.p_range()
            lo, hi = max(a_lo, b_lo), min(a_hi, b_hi)
            if hi <= lo:
                continue
            grid = sorted({q.p for q in A.points + B.points if lo <= q.p <= hi} | {lo, hi})
            # Exact differences at every point of the overlap: interpolated free entropies can put a
            # crossing in the wrong interval.
            pair = ((ia, A), (ib, B), states)
            vals = [self._delta_or_none(pair, p) for p in grid]
            for k in range(len(grid) - 1):
                if not _sign_change(vals[k], vals[k + 1]):
                    continue
                p0, p1 = grid[k], grid[k + 1]
                try:
                    root = bracketed_root(functools.partial(self._delta, pair=pair), p0, p1,
                                          xtol=1e-13 * max(self.width, 1e-300), rtol=REFINE_RTOL,
                                          failures=(RefinementFailed,))
                    pc, refined, uncertainty = root.x, True, root.uncertainty
                except (RefinementFailed, RuntimeError, ValueError):
                    pc, refined, uncertainty = 0.5 * (p0 + p1), False, abs(p1 - p0) / 2
                out.append(
                    SpecialPoint(
                        SpecialKind.FIRST_ORDER,
                        float(pc),
                        tuple(sorted([A.name, B.name])),
                        refined_to=self.precision if refined else None,
                        uncertainty=uncertainty,
                        detail="free-entropy crossing of two stable branches",
                    )
                )
        return out

    def _delta_or_none(self, pair: _Pair, p: float) -> float | None:
        try:
            return self._delta(p, pair)
        except RefinementFailed:
            return None

    def _delta(self, p: float, pair: _Pair) -> float:
        (ia, A), (ib, B), states = pair
        xa, fa = self._state_on(A, ia, p, states)
        xb, fb = self._state_on(B, ib, p, states)
        if same_solution(self.problem, xa, xb, tol=1e-5):
            return 0.0
        return float(fa - fb)

    def _state_on(
        self, track: Track, index: int, p: float, states: dict[tuple[int, float], tuple[np.ndarray, float]]
    ) -> tuple[np.ndarray, float]:
        """(state, free entropy) of ``track`` at ``p``: its own point there, else Newton-polished (remembered)."""
        q = track.at(p)
        if q is not None and q.free_entropy is not None:
            return q.x, q.free_entropy
        key = (index, p)
        known = states.get(key)
        if known is not None:
            return known
        guess = track.guess(p)
        if guess is None:
            raise RefinementFailed("outside the overlap")
        res = polish(self.problem, p, guess, self.options)
        if not res.converged:
            raise RefinementFailed("polish failed")
        fe = self.problem.free_entropy
        assert fe is not None
        states[key] = (res.x, float(fe(res.x, p)))
        return states[key]


def same_branch_point(problem: Problem, a: SpecialPoint, b: SpecialPoint) -> bool:
    """Two special points at one location: the same parameter (to BRANCH_POINT_REL) and the same state."""
    if abs(a.parameter - b.parameter) > BRANCH_POINT_REL * max(1.0, abs(b.parameter)):
        return False
    if a.x is None or b.x is None:
        return True
    return same_solution(problem, np.asarray(a.x), np.asarray(b.x), tol=1e-4)


def merge_branch_points(points: list[SpecialPoint], problem: Problem | None = None) -> list[SpecialPoint]:
    """One record per branch point, naming every branch through it.

    Two bifurcations at one point (the same branch point met on two curves) are one record. A fold
    that sits where another branch loses stability is that branch point seen from the branch that
    splits off (its turning point is located poorly: the bordered system is singular at a branch
    point); it is reported once, as the bifurcation at the stability change, naming both branches.
    A fold next to a loss that could not be classified still marks a branch point: it is reported
    as a bifurcation whose type is unknown.
    """

    def near(a: SpecialPoint, b: SpecialPoint) -> bool:
        return abs(a.parameter - b.parameter) <= BRANCH_POINT_REL * max(1.0, abs(b.parameter))

    def same(a: SpecialPoint, b: SpecialPoint) -> bool:
        return same_branch_point(problem, a, b) if problem is not None else near(a, b)

    out: list[SpecialPoint] = []
    for t in points:
        k = None
        if t.kind is SpecialKind.BIFURCATION:
            k = next((i for i, u in enumerate(out) if u.kind is SpecialKind.BIFURCATION and same(t, u)), None)
        if k is None:
            out.append(t)
        else:
            out[k] = with_branches(out[k], t.branches, "through the same point")
    hubs = [i for i, u in enumerate(out) if u.kind in (SpecialKind.STABILITY_LOSS, SpecialKind.BIFURCATION)]
    folded: set[int] = set()
    for j, t in enumerate(out):
        if t.kind is not SpecialKind.FOLD:
            continue
        i = next((i for i in hubs if near(t, out[i])), None)
        if i is None:
            continue
        hub = out[i]
        if hub.kind is SpecialKind.STABILITY_LOSS:
            hub = hub.replace(kind=SpecialKind.BIFURCATION, detail=hub.detail + "; branch point (type not determined)")
        out[i] = with_branches(hub, t.branches, "branches off")
        folded.add(j)
    return [t for j, t in enumerate(out) if j not in folded]


def with_branches(sp: SpecialPoint, names: Sequence[str], how: str) -> SpecialPoint:
    extra = tuple(b for b in names if b not in sp.branches)
    if not extra:
        return sp
    return sp.replace(branches=(*sp.branches, *extra), detail=f"{sp.detail}; {', '.join(map(repr, extra))} {how}")
