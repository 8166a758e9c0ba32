"""Sweeps over one parameter: pseudo-arclength continuation (default) or a grid of warm solves.

Continuation finds branches by solving the catalogue at a few seed values (the ends and some
interior points), traces each new branch through the whole range, and then assembles, at every
requested value, all solutions on all traced curves (polished by Newton). Special points:

- ``spinodal``: a fold of a curve (a branch is born or dies), or a sign change of a branch's
  stability margin away from any fold (local stability lost, e.g. at a pitchfork);
- ``first_order``: a free-entropy crossing between two stable branches, refined by Brent's
  method on the free-entropy difference of the Newton-polished branches.

The grid method solves every value independently (warm-started from the previous value) and
reports the same kinds of special point, bracketed by the grid where it cannot refine them.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import brentq

from solvers.core.catalogue import Catalogue, build_catalogue, same_solution, solve_catalogue, stability_margin
from solvers.core.continuation import Curve, CurvePoint, Frame, OnStep, refine_along, trace_curve
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import SolveResult
from solvers.core.solve import solve_at
from solvers.core.transitions import Transition

OnPoint = Callable[[float, Catalogue], None]
MAX_SEEDS = 7


@dataclass
class SweepResult:
    values: list[float]
    catalogues: list[Catalogue]
    transitions: list[Transition] = field(default_factory=list)
    method: str = "grid"
    seconds: float = 0.0
    curves: list[Curve] = field(default_factory=list)

    @property
    def converged(self) -> bool:
        return all(c.converged for c in self.catalogues)

    def diagnostics(self) -> dict[str, Any]:
        res = [c.diagnostics()["residual"] for c in self.catalogues]
        finite = [r for r in res if r is not None]
        return {
            "converged": self.converged,
            "residual": max(finite) if finite else None,
            "iterations": int(sum(c.diagnostics()["iterations"] for c in self.catalogues)),
            "method": self.method,
            "seconds": self.seconds,
            "curves": [{"name": c.name, "points": len(c.points), "message": c.message} for c in self.curves],
        }


@dataclass
class Segment:
    """A piece of a curve between special points: monotone in p, of one stability."""

    name: str
    points: list[CurvePoint]

    @property
    def stable(self) -> bool | None:
        flags = [q.stable for q in self.points if q.stable is not None]
        return None if not flags else bool(np.mean(flags) > 0.5)

    def p_range(self) -> tuple[float, float]:
        ps = [q.p for q in self.points]
        return min(ps), max(ps)

    def guess(self, p: float) -> np.ndarray | None:
        """Linear interpolation of the state at ``p`` along the segment (None outside it)."""
        pts = self.points
        first = next(interpolations(pts, p), None)
        if first is None and len(pts) == 1 and pts[0].p == p:
            return pts[0].x.copy()
        return first


def interpolations(points: list[CurvePoint], p: float) -> Iterator[np.ndarray]:
    """The state at ``p`` interpolated linearly on every piece of a curve whose ends bracket ``p``."""
    for a, b in itertools.pairwise(points):
        lo, hi = sorted((a.p, b.p))
        if lo <= p <= hi:
            w = 0.0 if hi == lo else (p - a.p) / (b.p - a.p)
            yield (1 - w) * a.x + w * b.x


def _newton_options(options: SolverOptions) -> SolverOptions:
    return options.model_copy(update={"method": "newton"})


def polish(problem: Problem, p: float, guess: np.ndarray, options: SolverOptions) -> SolveResult:
    return solve_at(problem, p, guess, _newton_options(options))


# ---------------------------------------------------------------------------------------------
# continuation
# ---------------------------------------------------------------------------------------------


def _on_some_curve(problem: Problem, curves: list[Curve], p: float, x: np.ndarray, options: SolverOptions) -> bool:
    for curve in curves:
        for g in interpolations(curve.points, p):
            if not same_solution(problem, g, x, tol=0.2):
                continue
            res = polish(problem, p, g, options)
            if res.converged and same_solution(problem, res.x, x):
                return True
    return False


def _segments(problem: Problem, curve: Curve) -> tuple[list[Segment], list[tuple[int, str]]]:
    """Split a curve at its folds and stability changes. Returns segments and the cut list."""
    pts = curve.points
    cuts: list[tuple[int, str]] = [(f.index, "fold") for f in curve.folds]
    fold_idx = {f.index for f in curve.folds}
    for i in range(len(pts) - 1):
        a, b = pts[i].stable, pts[i + 1].stable
        if a is not None and b is not None and a != b and not ({i - 1, i, i + 1} & fold_idx):
            cuts.append((i, "stability"))
    cuts.sort()
    pieces: list[list[CurvePoint]] = []
    start = 0
    for idx, _ in cuts:
        pieces.append(pts[start : idx + 1])
        start = idx + 1
    pieces.append(pts[start:])
    pieces = [pc for pc in pieces if pc]
    segs = []
    for k, pc in enumerate(pieces):
        mid = pc[len(pc) // 2]
        default = curve.name if len(pieces) == 1 else f"{curve.name}#{k}"
        segs.append(Segment(problem.name_of(mid.x, mid.p, default), pc))
    return segs, cuts


def _segment_at(segs: list[Segment], index: int) -> tuple[Segment, Segment | None]:
    """Segments on either side of the cut after point ``index``."""
    count = 0
    for k, s in enumerate(segs):
        count += len(s.points)
        if count - 1 >= index:
            return s, segs[k + 1] if k + 1 < len(segs) else None
    return segs[-1], None


def _first_order(
    problem: Problem, segs: list[Segment], options: SolverOptions, width: float
) -> list[Transition]:
    """Free-entropy crossings between pairs of stable segments."""
    if problem.free_entropy is None:
        return []
    stable = [s for s in segs if s.stable and len(s.points) >= 2]
    out: list[Transition] = []
    for i in range(len(stable)):
        for j in range(i + 1, len(stable)):
            A, B = stable[i], stable[j]
            (a_lo, a_hi), (b_lo, b_hi) = A.p_range(), B.p_range()
            lo, hi = max(a_lo, b_lo), min(a_hi, b_hi)
            if hi <= lo:
                continue
            grid = sorted({q.p for q in A.points + B.points if lo <= q.p <= hi} | {lo, hi})

            def delta(p: float, A: Segment = A, B: Segment = B) -> float:
                ga, gb = A.guess(p), B.guess(p)
                if ga is None or gb is None:
                    raise ValueError("outside overlap")
                ra, rb = polish(problem, p, ga, options), polish(problem, p, gb, options)
                if not (ra.converged and rb.converged):
                    raise ValueError("polish failed")
                if same_solution(problem, ra.x, rb.x, tol=1e-5):
                    return 0.0
                return float(problem.free_entropy(ra.x, p) - problem.free_entropy(rb.x, p))  # type: ignore[misc]

            # Exact differences (both branches Newton-polished at the same p) at every curve point
            # of the overlap: interpolated free entropies can put a crossing in the wrong interval.
            vals: list[float | None] = []
            for p in grid:
                try:
                    vals.append(delta(p))
                except (ValueError, RuntimeError):
                    vals.append(None)
            for k in range(len(grid) - 1):
                d0, d1 = vals[k], vals[k + 1]
                if d0 is None or d1 is None or d0 == 0 or d1 == 0 or np.sign(d0) == np.sign(d1):
                    continue
                try:
                    pc = brentq(delta, grid[k], grid[k + 1], xtol=1e-13 * max(width, 1e-300), rtol=1e-14, maxiter=200)
                except (ValueError, RuntimeError):
                    continue
                out.append(
                    Transition(
                        "first_order",
                        float(pc),
                        sorted([A.name, B.name]),
                        detail="free-entropy crossing of two stable branches",
                    )
                )
    return out


def _merge_branch_points(transitions: list[Transition], rel: float = 1e-4) -> list[Transition]:
    """A fold that sits where another branch loses stability is one branch point (e.g. a pitchfork).

    The stability change is located precisely (the margin is smooth there); the fold of the
    branch that splits off is not (the bordered system is singular at a branch point). Report it
    once, as the stability change, naming both branches.
    """
    losses = [t for t in transitions if t.kind == "spinodal" and t.detail.startswith("local stability")]
    out = []
    for t in transitions:
        if t.kind == "spinodal" and t.detail.startswith("fold"):
            near = [u for u in losses if abs(u.parameter - t.parameter) <= rel * max(1.0, abs(u.parameter))]
            if near:
                u = near[0]
                extra = [b for b in t.branches if b not in u.branches]
                if extra:
                    u.branches = [*u.branches, *extra]
                    u.detail += f"; branch point where {', '.join(repr(b) for b in extra)} branches off"
                continue
        out.append(t)
    return out


def _dedupe(transitions: list[Transition]) -> list[Transition]:
    out: list[Transition] = []
    for t in sorted(transitions, key=lambda t: t.parameter):
        if any(
            u.kind == t.kind
            and sorted(u.branches) == sorted(t.branches)
            and abs(u.parameter - t.parameter) <= 1e-7 * max(1.0, abs(t.parameter))
            for u in out
        ):
            continue
        out.append(t)
    return out


def continuation_sweep(
    problem: Problem,
    values: Sequence[float],
    options: SolverOptions,
    *,
    on_point: OnPoint | None = None,
    on_step: OnStep | None = None,
) -> SweepResult:
    t0 = time.perf_counter()
    vals = [float(v) for v in values]
    p_lo, p_hi = min(vals), max(vals)
    if p_hi == p_lo:
        return grid_sweep(problem, values, options, on_point=on_point)
    ordered = sorted(set(vals))
    k = min(MAX_SEEDS, len(ordered))
    seed_values = [ordered[round(i)] for i in np.linspace(0, len(ordered) - 1, k)]
    # Ends first: most branches are seen at one end or the other.
    seed_values = sorted(set(seed_values), key=lambda v: (v not in (p_lo, p_hi), v))
    curves: list[Curve] = []
    for sv in seed_values:
        cat = solve_catalogue(problem, sv, options)
        for b in cat.branches:
            if not b.converged or _on_some_curve(problem, curves, sv, b.x, options):
                continue
            curve = trace_curve(problem, sv, b.x, p_lo, p_hi, options, name=b.name, on_step=on_step)
            # A seed off every curve may still trace a curve already known (e.g. reached through
            # a degenerate point); keep the new curve only if its middle is new too.
            mid = curve.points[len(curve.points) // 2]
            if curves and _on_some_curve(problem, curves, mid.p, mid.x, options):
                continue
            curves.append(curve)

    frame = Frame(problem, p_lo, p_hi, options)
    width = p_hi - p_lo
    all_segs: list[Segment] = []
    transitions: list[Transition] = []
    n = problem.dim
    for curve in curves:
        segs, cuts = _segments(problem, curve)
        all_segs.extend(segs)
        for idx, why in cuts:
            left, right = _segment_at(segs, idx)
            names = sorted({left.name} | ({right.name} if right else set()))
            if why == "fold":
                fold = next(f for f in curve.folds if f.index == idx)
                if not (p_lo - 1e-9 * width <= fold.p <= p_hi + 1e-9 * width):
                    continue
                transitions.append(
                    Transition(
                        "spinodal",
                        fold.p,
                        names,
                        detail="fold: two branches merge and vanish",
                        refined=fold.refined,
                        uncertainty=0.0 if fold.refined else abs(curve.points[idx + 1].p - curve.points[idx].p) / 2,
                    )
                )
            else:
                a, b = curve.points[idx], curve.points[idx + 1]
                if a.margin is None:
                    continue

                def g(z: np.ndarray, tau: np.ndarray) -> float:
                    m = stability_margin(problem, z[:n], frame.p(float(z[n])))
                    return float(m) if m is not None else 0.0

                found = refine_along(frame, a, b, g, a.margin)
                p_star = found[0] if found else 0.5 * (a.p + b.p)
                if not (p_lo - 1e-9 * width <= p_star <= p_hi + 1e-9 * width):
                    continue
                lost = left.name if left.stable else (right.name if right else left.name)
                transitions.append(
                    Transition(
                        "spinodal",
                        float(p_star),
                        [lost],
                        detail=f"local stability of '{lost}' changes (bifurcation)",
                        refined=found is not None,
                        uncertainty=0.0 if found else abs(b.p - a.p) / 2,
                    )
                )
    transitions = _merge_branch_points(transitions)
    transitions.extend(_first_order(problem, all_segs, options, width))

    catalogues: list[Catalogue] = []
    for v in vals:
        tc = time.perf_counter()
        cands: list[tuple[str, SolveResult]] = []
        for seg in all_segs:
            for g in interpolations(seg.points, v):
                cands.append((seg.name, polish(problem, v, g, options)))
        if not cands:
            cat = solve_catalogue(problem, v, options)
        else:
            cat = build_catalogue(problem, v, cands, time.perf_counter() - tc)
        catalogues.append(cat)
        if on_point is not None:
            on_point(v, cat)
    return SweepResult(vals, catalogues, _dedupe(transitions), "continuation", time.perf_counter() - t0, curves)


# ---------------------------------------------------------------------------------------------
# grid
# ---------------------------------------------------------------------------------------------


def grid_sweep(
    problem: Problem,
    values: Sequence[float],
    options: SolverOptions,
    *,
    on_point: OnPoint | None = None,
    warm: dict[str, np.ndarray] | None = None,
) -> SweepResult:
    """Independent solves at each value, warm-started from the previous one."""
    t0 = time.perf_counter()
    vals = [float(v) for v in values]
    cats: list[Catalogue] = []
    prev = dict(warm or {})
    for v in vals:
        cat = solve_catalogue(problem, v, options, extra_starts=prev)
        prev = {b.name: b.x for b in cat.branches if b.converged}
        cats.append(cat)
        if on_point is not None:
            on_point(v, cat)
    return SweepResult(vals, cats, grid_transitions(problem, vals, cats, options), "grid", time.perf_counter() - t0)


def grid_transitions(
    problem: Problem, vals: list[float], cats: list[Catalogue], options: SolverOptions
) -> list[Transition]:
    """Special points between adjacent grid values; first-order points refined, others bracketed."""
    out: list[Transition] = []
    order = np.argsort(vals)
    for i0, i1 in itertools.pairwise(order):
        p0, p1 = vals[i0], vals[i1]
        c0, c1 = cats[i0], cats[i1]
        names0 = {b.name for b in c0.branches if b.converged}
        names1 = {b.name for b in c1.branches if b.converged}
        for nm in sorted(names0 ^ names1):
            out.append(
                Transition(
                    "spinodal",
                    0.5 * (p0 + p1),
                    [nm],
                    detail="branch appears or disappears between grid points",
                    refined=False,
                    uncertainty=abs(p1 - p0) / 2,
                )
            )
        for nm in sorted(names0 & names1):
            b0, b1 = c0.get(nm), c1.get(nm)
            assert b0 is not None and b1 is not None
            if b0.stable is not None and b1.stable is not None and b0.stable != b1.stable:
                out.append(
                    Transition(
                        "spinodal", 0.5 * (p0 + p1), [nm], detail="local stability changes between grid points",
                        refined=False, uncertainty=abs(p1 - p0) / 2,
                    )
                )
        if problem.free_entropy is None:
            continue
        stable = sorted(
            n for n in names0 & names1 if c0.get(n).stable and c1.get(n).stable  # type: ignore[union-attr]
        )
        for a_i in range(len(stable)):
            for b_i in range(a_i + 1, len(stable)):
                A, B = stable[a_i], stable[b_i]
                d0 = c0.get(A).free_entropy - c0.get(B).free_entropy  # type: ignore[operator, union-attr]
                d1 = c1.get(A).free_entropy - c1.get(B).free_entropy  # type: ignore[operator, union-attr]
                if np.sign(d0) == np.sign(d1) or d0 == 0 or d1 == 0:
                    continue
                xa0, xa1 = c0.get(A).x, c1.get(A).x  # type: ignore[union-attr]
                xb0, xb1 = c0.get(B).x, c1.get(B).x  # type: ignore[union-attr]

                def delta(p: float, xa0=xa0, xa1=xa1, xb0=xb0, xb1=xb1, p0=p0, p1=p1) -> float:
                    w = (p - p0) / (p1 - p0)
                    ra = polish(problem, p, (1 - w) * xa0 + w * xa1, options)
                    rb = polish(problem, p, (1 - w) * xb0 + w * xb1, options)
                    if not (ra.converged and rb.converged):
                        raise ValueError("polish failed")
                    return float(problem.free_entropy(ra.x, p) - problem.free_entropy(rb.x, p))  # type: ignore[misc]

                try:
                    pc = brentq(delta, p0, p1, xtol=1e-13 * max(abs(p1 - p0), 1e-300), rtol=1e-14, maxiter=200)
                    out.append(Transition("first_order", float(pc), sorted([A, B]), detail="free-entropy crossing"))
                except (ValueError, RuntimeError):
                    out.append(
                        Transition("first_order", 0.5 * (p0 + p1), sorted([A, B]), detail="free-entropy crossing",
                                   refined=False, uncertainty=abs(p1 - p0) / 2)
                    )
    return _dedupe(out)


def run_sweep(
    problem: Problem,
    values: Sequence[float],
    options: SolverOptions,
    *,
    method: str = "continuation",
    on_point: OnPoint | None = None,
    on_step: OnStep | None = None,
) -> SweepResult:
    """Sweep ``values`` of the problem's control parameter with ``continuation`` or ``grid``."""
    if method == "grid":
        return grid_sweep(problem, values, options, on_point=on_point)
    if method == "continuation":
        return continuation_sweep(problem, values, options, on_point=on_point, on_step=on_step)
    raise ValueError(f"unknown sweep method {method!r}")
