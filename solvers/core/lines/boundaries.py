"""Every transition line of a two-parameter problem in a parameter box, traced from its seeds.

``trace_boundaries`` scans the box's four edges and a few interior rows (``LineOptions.seeds``
values of λ1) for special points (``box_scan``), and traces a line from every special point that
no line traced so far passes through: folds (``fold``), first-order points (``coexistence``),
branch points (``branch_point_line``), regular stability losses and events (``zero_lines``).
A fold line that ends at a cusp also seeds the partner fold beyond it. Whether a seed lies on a
traced line is decided by solving that line's own system at the seed's λ1 (or λ2, where the
line runs along λ1) from the nearest traced point, not by distance alone. A crossing that no line
explains even after tracing from it (its line could not be continued) is named in the result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.core.arclength import Box
from solvers.core.curve import Curve
from solvers.core.errors import MAYBE_NUMERICAL, is_numerical
from solvers.core.lines.box_scan import Crossing, scan_box, unseen_crossings
from solvers.core.lines.branch_point_line import trace_branch_points
from solvers.core.lines.coexistence import trace_coexistence
from solvers.core.lines.fold import trace_fold
from solvers.core.lines.results import BoundaryResult, CriticalPoint, Unexplained
from solvers.core.lines.scan import ScanPoint, _same_states
from solvers.core.lines.tracing import Traced, parameter_box, solve_on
from solvers.core.lines.zero_lines import trace_zero
from solvers.core.options import LineOptions
from solvers.core.problem import Problem
from solvers.core.special_points import SpecialKind


@dataclass
class _Traced:
    family: str
    line: Curve
    system: object


def _family(point: ScanPoint) -> str:
    if point.branch_point:
        return "branch_point"
    if point.kind == "event":
        return f"event:{point.name}"
    return point.kind


def _z_of(states: np.ndarray, lam: np.ndarray, family: str) -> np.ndarray:
    if family == "first_order":
        return np.concatenate([states[0], states[1], lam])
    if family == "branch_point":
        return np.concatenate([states[0], lam, [0.0]])
    return np.concatenate([states[0], lam])


def _canonical_z(problem: Problem, states: np.ndarray, lam: np.ndarray, family: str) -> np.ndarray:
    """z with every state replaced by its symmetry representative (for distances between lines)."""
    if problem.canonical is not None:
        states = np.array([np.asarray(problem.canonical(s), dtype=float) for s in states])
    return _z_of(states, lam, family)


def _closest_on_polyline(zs: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, float]:
    """The point of the polyline through the rows of ``zs`` closest to ``q``, and its distance."""
    if len(zs) == 1:
        return zs[0], float(np.linalg.norm(zs[0] - q))
    a, b = zs[:-1], zs[1:]
    d = b - a
    t = np.clip(np.einsum("ij,ij->i", q - a, d) / np.maximum(np.einsum("ij,ij->i", d, d), 1e-300), 0.0, 1.0)
    p = a + t[:, None] * d
    dist = np.linalg.norm(p - q, axis=1)
    k = int(np.argmin(dist))
    return p[k], float(dist[k])


def _covers(problem: Problem, traced: _Traced, point: ScanPoint, box: Box, opts: LineOptions) -> bool:
    """Does the traced line pass through the seed (its two states in either order, for first-order lines)?"""
    if traced.family == "first_order":
        swapped = ScanPoint(point.kind, point.lam, point.states[::-1], point.branches)
        return _covers_as_is(problem, traced, point, box, opts) or _covers_as_is(problem, traced, swapped, box, opts)
    return _covers_as_is(problem, traced, point, box, opts)


def _covers_as_is(
    problem: Problem, traced: _Traced, point: ScanPoint, box: Box, opts: LineOptions
) -> bool:
    """Does the traced line pass through the seed?

    The guess is the point of the traced polyline closest to the seed in the line's own scaled
    coordinates (states included, so mirror-image and nearby lines are told apart); the line's
    system is then solved at the seed's λ1 (λ2 where the line runs along λ1) from it.
    """
    system = traced.system
    S = np.asarray(system.scale)  # type: ignore[attr-defined]
    family = traced.family
    seed = _canonical_z(problem, point.states, np.asarray(point.lam, dtype=float), family)
    zs = np.array([_canonical_z(problem, s, np.asarray(p, dtype=float), family)
                   for p, s in zip(traced.line.coordinates, traced.line.states, strict=True)]) / S
    if seed.size != zs.shape[1]:
        return False
    guess, dist = _closest_on_polyline(zs, seed / S)
    if dist > 4 * opts.ds_max:
        return False
    guess = guess * S
    lam_index = system.lam_index  # type: ignore[attr-defined]
    near = np.argsort(np.linalg.norm(zs - seed / S, axis=1))[:2]
    tangent_like = (zs[near[1]] - zs[near[0]]) * S if len(near) == 2 else np.ones(seed.size)
    width = box.hi - box.lo
    axis = 0 if abs(tangent_like[lam_index[0]]) / width[0] >= abs(tangent_like[lam_index[1]]) / width[1] else 1
    if hasattr(system, "reset"):
        system.reset(guess)  # type: ignore[attr-defined]
    z = solve_on(system, guess, axis, float(point.lam[axis]), opts)  # type: ignore[arg-type]
    if z is None:
        return False
    other = 1 - axis
    if abs(float(z[lam_index[other]]) - point.lam[other]) > 1e-6 * width[other]:
        return False
    states = system.states(z)  # type: ignore[attr-defined]
    return _same_states(problem.restrict(point.lam[0]), np.atleast_2d(states), point.states)


def _trace(problem: Problem, point: ScanPoint, family: str, box: Box, opts: LineOptions) -> Traced:
    if family == "fold":
        return trace_fold(problem, point.states[0], point.lam, box, opts, point.branches)
    if family == "first_order":
        return trace_coexistence(problem, point.states[0], point.states[1], point.lam, box, opts, point.branches)
    if family == "branch_point":
        return trace_branch_points(problem, point.states[0], point.lam, box, opts, point.branches, kind=point.kind,
                                   bifurcation=point.bifurcation)
    if point.kind == "stability_loss":
        assert problem.stability is not None
        return trace_zero(problem, SpecialKind.STABILITY_LOSS, problem.stability, point.states[0], point.lam, box,
                          opts, point.branches)
    return trace_zero(problem, SpecialKind.EVENT, problem.indicator(point.name), point.states[0], point.lam, box,
                      opts, point.branches, name=point.name)


def _same_end(a: tuple[float, float], b: tuple[float, float], box: Box) -> bool:
    return bool(np.all(np.abs((np.asarray(a) - np.asarray(b)) / (box.hi - box.lo)) <= 1e-6))


def _critical_points(lines: list[Curve], box: Box) -> tuple[CriticalPoint, ...]:
    width = box.hi - box.lo
    found: list[CriticalPoint] = []
    for k, line in enumerate(lines):
        for end in line.traced_ends:
            if end.kind != "critical":
                continue
            q = np.asarray(end.point)
            for m, cp in enumerate(found):
                slack = 1e-5 + (cp.precision + end.precision) / width
                if np.all(np.abs((np.asarray(cp.point) - q) / width) <= slack):
                    better = end.precision < cp.precision
                    point = end.point if better else cp.point
                    state = end.states[0] if better else cp.state
                    lines_ = tuple(sorted({*cp.lines, k}))
                    found[m] = CriticalPoint(point, state, lines_, min(cp.precision, end.precision))
                    break
            else:
                found.append(CriticalPoint(end.point, end.states[0], (k,), end.precision))
    return tuple(found)


#: Scaled distance (fraction of the box) within which a line passes a crossing it explains.
NEAR = 1e-3


def _passes_near(line: Curve, lam: tuple[float, float], box: Box) -> bool:
    width = box.hi - box.lo
    pts = line.array() / width
    return _closest_on_polyline(pts, np.asarray(lam, dtype=float) / width)[1] <= NEAR


def _inside_ends(line: Curve, box: Box, names: tuple[str, str]) -> list[str]:
    """Warnings for the ends of a line that stop inside the box for no reason of the problem's (``lost``,
    ``max_points``): beyond them the line was not followed."""
    out = []
    for end in line.traced_ends:
        if end.kind not in ("lost", "max_points"):
            continue
        inside = np.all((np.asarray(end.point) > box.lo) & (np.asarray(end.point) < box.hi))
        if inside and len(line.points) > 1:
            out.append(f"the {line.kind.value} line of {', '.join(line.branches) or 'its branch'} ends {end.kind} at "
                       f"{names[0]} = {end.point[0]:.6g}, {names[1]} = {end.point[1]:.6g} inside the box "
                       f"({end.detail or 'the corrector failed'}): it was not followed beyond")
    return out


def _describe(point: ScanPoint, names: tuple[str, str]) -> str:
    return f"{names[0]} = {point.lam[0]:.6g}, {names[1]} = {point.lam[1]:.6g}"


def trace_boundaries(
    problem: Problem,
    lam1_range: tuple[float, float],
    lam2_bracket: tuple[float, float],
    options: LineOptions | None = None,
) -> BoundaryResult:
    """Trace every transition line of ``problem`` in the box lam1_range × lam2_bracket.

    Parameters
    ----------
    problem : Problem
        In two parameters (λ1, λ2). Needs ``starts``; first-order lines need ``free_entropy`` and ``stability``.
    lam1_range, lam2_bracket : (lo, hi)
        The parameter box. Special points are looked for along λ2 at ``options.seeds`` values of
        λ1 and the two λ1 edges, and along λ1 on the two λ2 edges (``box_scan``); lines are traced
        through the whole box from them.
    options : LineOptions

    Returns
    -------
    BoundaryResult
        ``lines`` (each with its ends), the ``critical_points`` where lines end, a ``reason`` when no
        line was found, and the crossings no line explains (``unexplained``, ``warnings``).
    """
    opts = options or LineOptions()
    box = parameter_box(problem, lam1_range, lam2_bracket)
    names = problem.parameters
    scans = scan_box(problem, box, opts)
    queue: list[Crossing] = list(scans.crossings)
    traced: list[_Traced] = []
    untraced: list[str] = []
    unexplained: list[Unexplained] = []
    while queue:
        crossing = queue.pop(0)
        point = crossing.point
        if point.kind not in opts.kinds:
            continue
        family = _family(point)
        if any(t.family == family and _covers(problem, t, point, box, opts) for t in traced):
            continue
        try:
            traced_line = _trace(problem, point, family, box, opts)
        except MAYBE_NUMERICAL as exc:
            if not is_numerical(exc):
                raise
            # e.g. a residual undefined off the scanned λ1 (NaN in the seed's Jacobian): a line not traced is a
            # finding of the job, the others still are traced
            note = f"the {point.kind.value} at {_describe(point, names)} could not be traced ({exc})"
            if note not in untraced:
                untraced.append(note)
            unexplained.append(Unexplained(point.kind, point.lam, point.branches, crossing.scan,
                                           f"could not be traced ({exc})"))
            continue
        line, system, beyond = traced_line.line, traced_line.system, traced_line.beyond
        if len(line.points) < 2:
            # a seed whose line did not leave it: the crossing stays unexplained (the line keeps its message)
            unexplained.append(Unexplained(point.kind, point.lam, point.branches, crossing.scan,
                                           f"its line could not be continued ({line.message})"))
        earlier = [t.line for t in traced if t.family == "fold"]
        traced.append(_Traced(family, line, system))
        n = problem.dim
        cusps = [e for e in line.traced_ends if e.kind == "critical"]
        for z, cusp in zip(beyond, cusps, strict=False):
            # The partner fold is already traced when another fold line ends at the same cusp.
            ends = [e for other in earlier for e in other.traced_ends if e.kind == "critical"]
            if any(_same_end(cusp.point, e.point, box) for e in ends):
                continue
            beyond_point = ScanPoint(SpecialKind.FOLD, (float(z[n]), float(z[n + 1])), z[:n], line.branches)
            queue.insert(0, Crossing(beyond_point, "beyond a cusp"))
    # A crossing whose own line could not be continued is still explained when another line passes through it
    # (a margin that vanishes at a fold: the zero-margin system is singular there, the fold line is not).
    continued = [t.line for t in traced if len(t.line.points) >= 2]
    unexplained = [u for u in unexplained if not any(_passes_near(line, u.point, box) for line in continued)]
    lines = [t.line for t in traced if len(t.line.points) >= 2
             or not any(_passes_near(line, t.line.coordinates[0], box) for line in continued)]
    reason = ""
    if not lines:
        rows = ", ".join(f"{v:.6g}" for v in scans.rows)
        edges = ", ".join(f"{v:.6g}" for v in scans.edges)
        reason = (f"no special point along {names[1]} in [{box.lo[1]:.6g}, {box.hi[1]:.6g}] at {names[0]} = {rows}, "
                  f"nor along {names[0]} in [{box.lo[0]:.6g}, {box.hi[0]:.6g}] at {names[1]} = {edges}")
        if scans.notes:
            reason += "; " + "; ".join(scans.notes)
    if untraced:
        reason = "; ".join([*([reason] if reason else []), *untraced])
    warnings = [f"the {u.kind.value} seen at {names[0]} = {u.point[0]:.6g}, {names[1]} = {u.point[1]:.6g} "
                f"(scan {u.scan}) lies on no traced line: {u.detail}" for u in unexplained]
    warnings.extend(scans.failed)
    for line in lines:
        warnings.extend(_inside_ends(line, box, names))
    warnings.extend(unseen_crossings(lines, scans, box, names))
    return BoundaryResult(tuple(lines), _critical_points(lines, box), reason, scans.rows, scans.edges,
                          tuple(unexplained), tuple(warnings))
