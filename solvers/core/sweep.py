"""Sweeps over one parameter: pseudo-arclength continuation (default) or a grid of warm solves.

Continuation finds branches by solving the catalogue at a few seed values (the ends and some
interior points), traces each new branch through the whole range, and then assembles, at every
requested value, all solutions on all traced curves (polished by Newton). At every bifurcation it
finds (a stability loss at a simple branch point, typed from the normal form) it starts the
branches that split off and traces them too, so a branch that bifurcates from a symmetric one is
found whatever the named starts (:func:`_switch_branches`). The grid method solves
every value independently, warm-started from the previous one. Both hand their solutions to the
one detector (:mod:`solvers.core.detect`) as tracks, so special points are found and refined the
same way whatever the method.

A sweep can resume from stored points (``stored``: index -> catalogue of an earlier, interrupted
run): those values are not solved again and are not reported through ``on_point``; a grid
continues warm from the last stored value, and the special points are found on all points,
stored and new.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from solvers.core.branch_points import bifurcating_starts, bifurcating_tangents, inside_domain
from solvers.core.catalogue import build_catalogue, solve_catalogue
from solvers.core.continuation import OnStep, ProblemSystem, trace_curve
from solvers.core.curve import Curve, CurvePoint
from solvers.core.curve_membership import on_some_curve
from solvers.core.curve_results import Sweep
from solvers.core.curve_tables import curve_tables
from solvers.core.deflated_continuation import deflate_along
from solvers.core.detect import (
    CurveRefiner,
    Detector,
    Refiner,
    Track,
    curve_cuts,
    curve_tracks,
    merge_branch_points,
    polish,
    refinement_precision,
    same_branch_point,
    with_branches,
)
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.report_blocks import ReportBlocks
from solvers.core.results import Catalogue, Origin, SolveResult
from solvers.core.solve import solve_at
from solvers.core.special_points import SpecialKind, SpecialPoint, dedupe

#: Called once per requested value, in the order of the values, with (index, catalogue).
OnPoint = Callable[[int, Catalogue], None]
MAX_SEEDS = 7
#: Rounds of branch switching (branches found by switching may have bifurcations of their own), and a cap
#: on the curves of one sweep.
SWITCH_ROUNDS = 3
MAX_CURVES = 24
METHODS = ("continuation", "grid", "deflated", "diagram")


def run_sweep(
    problem: Problem,
    values: Sequence[float],
    options: SolverOptions,
    *,
    method: str = "continuation",
    on_point: OnPoint | None = None,
    on_step: OnStep | None = None,
    stored: Mapping[int, Catalogue] | None = None,
) -> Sweep:
    """Sweep ``values`` of the problem's control parameter with ``continuation`` or ``grid``."""
    if method not in METHODS:
        raise ValueError(f"unknown sweep method {method!r}")
    vals = [float(v) for v in values]
    stored = {int(i): c for i, c in (stored or {}).items() if 0 <= int(i) < len(vals)}
    t0 = time.perf_counter()
    traced = method != "grid" and max(vals) != min(vals)
    if traced:
        sweep = _continuation(problem, vals, options, on_point, on_step, stored, method)
    else:
        sweep = _grid(problem, vals, options, on_point, stored)
    # a point found by an event indicator (typed first_order when the theory says so) is looked for as an event
    special = tuple(sp for sp in sweep.special_points
                    if problem.looks_for(SpecialKind.EVENT if sp.event is not None else sp.kind))
    tables = None
    if traced:
        tables = curve_tables(problem, sweep.curves, special, min(vals), max(vals), options,
                              catalogues=sweep.catalogues)
    sweep = Sweep(
        method=method,
        values=tuple(vals),
        catalogues=sweep.catalogues,
        special_points=special,
        curves=sweep.curves,
        seconds=time.perf_counter() - t0,
        reused=tuple(sorted(stored)),
        tables=tables,
    )
    if problem.sweep_notes is not None:
        sweep = Sweep(**{**sweep.__dict__, "notes": problem.sweep_notes(sweep)})
    return sweep


# ---------------------------------------------------------------------------------------------
# grid
# ---------------------------------------------------------------------------------------------


def _grid(
    problem: Problem, vals: list[float], options: SolverOptions, on_point: OnPoint | None,
    stored: Mapping[int, Catalogue],
) -> Sweep:
    """Independent solves at each value, warm-started from the previous one."""
    cats: list[Catalogue] = []
    prev: dict[str, np.ndarray] = {}
    blocks = ReportBlocks(problem, on_point)
    for i, v in enumerate(vals):
        cat = stored.get(i)
        if cat is None:
            cat = solve_catalogue(problem, v, options, extra_starts=prev, report=blocks.each)
            blocks.add(i, cat)
        prev = {b.name: b.x for b in cat.branches if b.converged}
        cats.append(cat)
    reported = blocks.catalogues(cats)
    return Sweep("grid", tuple(vals), reported, tuple(grid_special_points(problem, vals, reported, options)))


def _grid_point(cat: Catalogue, name: str) -> CurvePoint | None:
    b = cat.get(name)
    if b is None or not b.converged:
        return None
    return CurvePoint((cat.parameter,), np.asarray(b.x), None, b.stability_margin, b.free_entropy)


def grid_tracks(vals: list[float], cats: Sequence[Catalogue]) -> list[Track]:
    """Runs of neighbouring values (in value order) holding a converged branch of one name and stability."""
    order = sorted(range(len(vals)), key=lambda i: vals[i])
    names = sorted({b.name for c in cats for b in c.branches if b.converged})
    tracks: list[Track] = []
    for name in names:
        run: list[CurvePoint] = []
        for i in order:
            q = _grid_point(cats[i], name)
            if q is not None and run and q.p == run[-1].p:
                continue  # a repeated value adds nothing to the track
            if run and (q is None or q.stable != run[-1].stable):
                tracks.append(Track(name, tuple(run)))
                run = []
            if q is not None:
                run.append(q)
        if run:
            tracks.append(Track(name, tuple(run)))
    return tracks


def grid_special_points(
    problem: Problem, vals: list[float], cats: Sequence[Catalogue], options: SolverOptions
) -> tuple[SpecialPoint, ...]:
    """Special points between neighbouring grid values: folds bracketed, everything else refined."""
    if not vals:
        return ()
    detector = Detector(problem, options, Refiner(problem, options), min(vals), max(vals))
    out: list[SpecialPoint] = []
    order = sorted(range(len(vals)), key=lambda i: vals[i])
    for i0, i1 in itertools.pairwise(order):
        p0, p1 = vals[i0], vals[i1]
        if p0 == p1:
            continue
        c0, c1 = cats[i0], cats[i1]
        names0 = {b.name for b in c0.branches if b.converged}
        names1 = {b.name for b in c1.branches if b.converged}
        # Branches born together between two grid values are one fold (the aligned well and its barrier), as are
        # branches that vanish together: listed once, with both names, not once per branch.
        for names in (sorted(names1 - names0), sorted(names0 - names1)):
            if names:
                out.append(
                    SpecialPoint(
                        SpecialKind.FOLD, 0.5 * (p0 + p1), tuple(names), refined_to=None,
                        uncertainty=abs(p1 - p0) / 2,
                        detail=("branches appear or disappear together" if len(names) > 1
                                else "branch appears or disappears") + " between grid points",
                    )
                )
        for nm in sorted(names0 & names1):
            a, b = _grid_point(c0, nm), _grid_point(c1, nm)
            assert a is not None and b is not None
            if a.stable is not None and b.stable is not None and a.stable != b.stable:
                sp = detector.stability_loss(a, b, nm)
                if sp is not None:
                    out.append(sp)
    tracks = grid_tracks(vals, cats)
    out.extend(detector.first_order(tracks))
    for tr in tracks:
        out.extend(detector.events(tr))
    return dedupe(merge_branch_points(out, problem))


# ---------------------------------------------------------------------------------------------
# continuation
# ---------------------------------------------------------------------------------------------


def _trace_all(
    problem: Problem, vals: list[float], options: SolverOptions, on_step: OnStep | None
) -> list[Curve]:
    p_lo, p_hi = min(vals), max(vals)
    ordered = sorted(set(vals))
    k = min(MAX_SEEDS, len(ordered))
    seed_values = [ordered[round(i)] for i in np.linspace(0, len(ordered) - 1, k)]
    # Ends first: most branches are seen at one end or the other.
    seed_values = sorted(set(seed_values), key=lambda v: (v not in (p_lo, p_hi), v))
    curves: list[Curve] = []
    for sv in seed_values:
        cat = solve_catalogue(problem, sv, options)
        for b in cat.branches:
            if not b.converged or problem.on_edge(b.x, sv) or on_some_curve(problem, curves, sv, b.x, options):
                continue
            curve = trace_curve(problem, sv, b.x, p_lo, p_hi, options, name=b.name, on_step=on_step)
            # A seed off every curve may still trace a curve already known (e.g. reached through
            # a degenerate point); keep the new curve only if its middle is new too.
            mid = curve.points[len(curve.points) // 2]
            if curves and on_some_curve(problem, curves, mid.p, mid.x, options):
                continue
            curves.append(curve)
    return curves


def _track_at(tracks: list[tuple[int, Track]], index: int) -> tuple[Track, Track | None]:
    """Tracks on either side of the cut after point ``index``."""
    for k, (s, tr) in enumerate(tracks):
        if s + len(tr.points) - 1 >= index:
            return tr, tracks[k + 1][1] if k + 1 < len(tracks) else None
    return tracks[-1][1], None


def _curve_points(
    problem: Problem, curve: Curve, detector: Detector, options: SolverOptions
) -> tuple[list[Track], list[SpecialPoint]]:
    """The tracks of one curve and its own special points: folds and stability losses (typed bifurcations)."""
    cuts = curve_cuts(curve)
    tracks = curve_tracks(problem, curve, cuts)
    out: list[SpecialPoint] = []
    for idx, why in cuts:
        left, right = _track_at(tracks, idx)
        if why is SpecialKind.FOLD:
            fold = next(f for f in curve.folds if f.index == idx)
            if not detector.inside(fold.p):
                continue
            names = tuple(sorted({left.name} | ({right.name} if right else set())))
            out.append(
                SpecialPoint(
                    SpecialKind.FOLD,
                    fold.p,
                    names,
                    refined_to=refinement_precision(options) if fold.refined else None,
                    uncertainty=fold.uncertainty,
                    detail="fold: two branches merge and vanish",
                    x=np.asarray(fold.x) if fold.refined else None,
                )
            )
        else:
            lost = left.name if left.stable else (right.name if right else left.name)
            sp = detector.stability_loss(curve.points[idx], curve.points[idx + 1], lost)
            if sp is not None:
                out.append(sp)
    return [tr for _, tr in tracks], out


def _switch_branches(
    problem: Problem,
    curves: list[Curve],
    found: list[tuple[list[Track], list[SpecialPoint]]],
    detector: Detector,
    options: SolverOptions,
    on_step: OnStep | None,
    rounds: int = SWITCH_ROUNDS,
) -> None:
    """Trace every branch that splits off at a bifurcation and is on no curve yet (in place, ``rounds`` rounds).

    At each typed bifurcation the normal form gives a first point on every bifurcating branch
    (:func:`solvers.core.branch_points.bifurcating_starts`); a point off every traced curve starts
    a new curve over the whole range, whose own bifurcations are switched in the next round: round d
    switches at the branch points of the curves of depth d − 1 (depth 0: the curves traced from the
    starts), so ``rounds`` is the depth of the branch diagram. A branch is traced once: a start on a
    known curve, or a new curve whose point away from the branch point is on a known curve, is dropped,
    and a branch point met from several curves is switched once.
    """
    done: list[SpecialPoint] = []
    named: list[tuple[SpecialPoint, str]] = []
    for depth in range(1, rounds + 1):
        todo = [sp for _, pts in found for sp in pts if sp.kind is SpecialKind.BIFURCATION and sp.bifurcation
                is not None]
        added = 0
        for sp in todo:
            if any(same_branch_point(problem, sp, d) for d in done):
                continue  # one branch point met from several branches is switched once
            done.append(sp)
            if _leaves_along_curves(problem, curves, sp, detector.width, options):
                continue  # every branch that splits off here is traced already
            for p, x in bifurcating_starts(problem, sp, options, detector.width):
                if len(curves) >= MAX_CURVES or not detector.inside(p):
                    continue
                if on_some_curve(problem, curves, p, x, options):
                    continue
                curve = trace_curve(problem, p, x, detector.p_lo, detector.p_hi, options,
                                    name=f"{sp.branches[0]}/{sp.bifurcation.type}", on_step=on_step)  # type: ignore[union-attr]
                # A start next to the branch point can fall between the points of a curve that passes
                # through it: the new curve is new only if it is on no curve away from the point either.
                away = _away_from(curve, (p, x), sp, detector.width)
                if on_some_curve(problem, curves, away.p, away.x, options):
                    continue
                curve = replace(curve, message=
                              f"started by branch switching at the {sp.bifurcation.describe()} at "  # type: ignore[union-attr]
                              f"p = {sp.parameter:.10g} (depth {depth}); {curve.message}")
                curves.append(curve)
                found.append(_curve_points(problem, curve, detector, options))
                named.append((sp, problem.name_of(away.x, away.p, curve.name)))
                added += 1
        if not added:
            break
    # The bifurcation names the branches that split off there.
    for _, pts in found:
        for i, sp in enumerate(pts):
            names = [name for origin, name in named if origin is sp]
            if names:
                pts[i] = with_branches(sp, names, "branches off")


def _leaves_along_curves(
    problem: Problem, curves: list[Curve], sp: SpecialPoint, width: float, options: SolverOptions
) -> bool:
    """Every bifurcating direction at ``sp`` (both ways, within the domain) is followed by a traced curve.

    A curve follows a direction when it has a point within two of its largest steps of the branch
    point, in that direction (cosine above 0.9, in the curves' own coordinates (x, p / width)) and
    closer to it than to any other branch through the point: in a narrow range the branches of a
    transcritical point are nearly parallel in those coordinates (x = p and x = 0 over |p| ≤ 0.05 meet at 6°).
    """
    bp = sp.bifurcation
    assert bp is not None
    n = bp.x.size

    def scaled(v: np.ndarray) -> np.ndarray:
        u = np.concatenate([v[:n], [v[n] / width]])
        return u / np.linalg.norm(u)

    zb = np.concatenate([bp.x, [bp.parameter / width]])
    reach = 2 * options.continuation.ds_max
    offsets = [np.array([np.concatenate([q.x, [q.p / width]]) for q in c.points]) - zb for c in curves if c.points]
    for tangent in bifurcating_tangents(bp):
        t = scaled(tangent)
        others = [u for u in map(scaled, bp.tangents) if abs(float(u @ t)) < 1 - 1e-12]
        for d in (t, -t):
            if not inside_domain(problem, bp.x + 1e-6 * d[:n]):
                continue
            followed = False
            for off in offsets:
                dist = np.linalg.norm(off, axis=1)
                near = (dist > 0) & (dist <= reach)
                along = off[near] @ d
                closest = np.all([along > np.abs(off[near] @ u) for u in others], axis=0) if others else True
                if np.any((along > 0.9 * dist[near]) & closest):
                    followed = True
                    break
            if not followed:
                return False
    return True


def _away_from(curve: Curve, start: tuple[float, np.ndarray], origin: SpecialPoint, width: float) -> CurvePoint:
    """The middle of the part of ``curve`` that leads from its start away from the branch point ``origin``."""

    def z(x: np.ndarray, p: float) -> np.ndarray:
        return np.concatenate([np.asarray(x, dtype=float), [p / width]])

    zs = np.array([z(q.x, q.p) for q in curve.points])
    k0 = int(np.argmin(np.linalg.norm(zs - z(start[1], start[0]), axis=1)))
    zb = z(origin.x if origin.x is not None else start[1], origin.parameter)
    fwd, back = curve.points[k0:], curve.points[k0::-1]

    def leaves(half: tuple[CurvePoint, ...]) -> float:
        return float(np.linalg.norm(z(half[-1].x, half[-1].p) - zb)) if len(half) > 1 else -1.0

    half = fwd if leaves(fwd) >= leaves(back) else back
    return half[len(half) // 2]


def curve_special_points(
    problem: Problem, curves: list[Curve], options: SolverOptions, p_lo: float, p_hi: float,
    *, switch: bool = True, on_step: OnStep | None = None, rounds: int = SWITCH_ROUNDS,
) -> tuple[list[Track], tuple[SpecialPoint, ...]]:
    """Tracks and special points of traced curves; ``switch``: first trace the branches that split off
    at their bifurcations (appended to ``curves``), ``rounds`` levels deep."""
    system = ProblemSystem(problem, p_lo, p_hi)
    detector = Detector(problem, options, CurveRefiner(problem, options, system), p_lo, p_hi)
    found = [_curve_points(problem, curve, detector, options) for curve in curves]
    if switch:
        _switch_branches(problem, curves, found, detector, options, on_step, rounds)
    all_tracks = [tr for tracks, _ in found for tr in tracks]
    out = merge_branch_points([sp for _, pts in found for sp in pts], problem)
    out.extend(detector.first_order(all_tracks))
    for tr in all_tracks:
        out.extend(detector.events(tr))
    return all_tracks, dedupe(out)


def _continuation(
    problem: Problem,
    vals: list[float],
    options: SolverOptions,
    on_point: OnPoint | None,
    on_step: OnStep | None,
    stored: Mapping[int, Catalogue],
    method: str = "continuation",
) -> Sweep:
    """Curves from the starts; ``deflated``: then deflated continuation finds the branches no curve reaches
    (:mod:`solvers.core.deflated_continuation`); ``diagram``: branch switching ``options.search.depth`` levels
    deep instead of the default few rounds."""
    p_lo, p_hi = min(vals), max(vals)
    curves = _trace_all(problem, vals, options, on_step)
    if method == "deflated":
        deflate_along(problem, vals, options, curves, on_step, max_curves=MAX_CURVES)
    rounds = options.search.depth if method == "diagram" else SWITCH_ROUNDS
    tracks, special = curve_special_points(problem, curves, options, p_lo, p_hi, on_step=on_step, rounds=rounds)
    tracks = [*tracks, *_bridges(problem, curves)]
    cats: list[Catalogue] = []
    by_value: dict[float, Catalogue] = {}
    blocks = ReportBlocks(problem, on_point)
    for i, v in enumerate(vals):
        cat = stored.get(i)
        if cat is None:
            cat = by_value.get(v)
            if cat is None:
                cat = _assemble(problem, v, tracks, options, report=blocks.each)
                by_value[v] = cat
            blocks.add(i, cat)
        cats.append(cat)
    return Sweep(method, tuple(vals), blocks.catalogues(cats), special, tuple(curves))


#: A guess points at a root of an exhaustive search when it is this close to it (relative, in the theory's scale)
#: and every other root is at least ROOT_MARGIN times as far.
ROOT_NEAR, ROOT_MARGIN = 0.1, 4.0


def _root_near(problem: Problem, roots: Sequence[np.ndarray], guess: np.ndarray) -> np.ndarray:
    """The root of an exhaustive search that an interpolated guess unambiguously points at, else the guess.

    Newton from such a root converges at once, from the guess in a few iterations to the same solution; near a fold,
    where two roots are close, the guess is polished as it is (the curve's own point decides the branch).
    """
    if not roots:
        return guess
    scale = problem.scale if problem.scale is not None else np.maximum(1.0, np.abs(guess))
    dist = sorted((float(np.max(np.abs(r - guess) / scale)), k) for k, r in enumerate(roots))
    near, k = dist[0]
    if near <= ROOT_NEAR and all(d >= ROOT_MARGIN * near for d, _ in dist[1:]):
        return roots[k]
    return guess


def _bridges(problem: Problem, curves: list[Curve]) -> list[Track]:
    """The curves' steps across their cuts, as two-point tracks: a value between the last point of one track and
    the first of the next (e.g. just past a stability loss) is on the curve, but on neither track."""
    out = []
    for curve in curves:
        for idx, _ in curve_cuts(curve):
            a, b = curve.points[idx], curve.points[idx + 1]
            mid = a if abs(a.margin or 0.0) >= abs(b.margin or 0.0) else b
            out.append(Track(problem.name_of(mid.x, mid.p, curve.name), (a, b)))
    return out


def _assemble(problem: Problem, v: float, tracks: list[Track], options: SolverOptions, report: bool = True
              ) -> Catalogue:
    """The catalogue at ``v``: every traced solution there, Newton-polished (``report``: with the theory's report)."""
    tc = time.perf_counter()
    roots = [np.asarray(x, dtype=float) for _, x in problem.enumerate(v)] if problem.exhaustive and \
        problem.enumerate is not None else []
    cands: list[tuple[str, SolveResult]] = []
    origins: list[Origin] = []
    for tr in tracks:
        for g in tr.interpolations(v):
            cands.append((tr.name, polish(problem, v, _root_near(problem, roots, g), options)))
            origins.append(Origin("continuation"))
    if problem.edge is not None:
        # No curve is traced on a singular edge; its stable solutions are found here, from the theory's starts.
        for name, x0 in problem.starts(v).items():
            res = solve_at(problem, v, np.asarray(x0, dtype=float), options)
            if res.converged and problem.on_edge(res.x, v):
                cands.append((name, res))
                origins.append(Origin("start", name))
    if not cands:
        return solve_catalogue(problem, v, options, report=report)
    return build_catalogue(problem, v, cands, time.perf_counter() - tc, report=report, origins=origins)
