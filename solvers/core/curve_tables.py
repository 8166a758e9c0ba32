"""The traced curves of a continuation as bounded tables of solutions, with the special points on them.

A :class:`~solvers.core.curve.Curve` is what the continuation stepped through: points a few
percent of the range apart, running past the ends of the range, its folds between two of its points.
What a user draws is a table per curve (:class:`CurveTable`), made here:

- **special points on their curves**: each fold of the curve, and each refined special point of the
  sweep that lies on it, becomes a row at its own state (the state the engine refined it to; a
  first-order point, which has none, Newton-polished from the curve at its parameter). Where the curve
  changes branch (a fold, a change of stability) the point is written twice in a row, once as the
  last row of the branch before it and once as the first of the branch after it;
- **clipped to the range**: rows outside [p_lo, p_hi] are dropped; where the curve crosses an end its
  state there is polished from the curve and kept;
- **the sweep's own solutions**: where a requested value's solution lies on the curve (the catalogue's
  branch there, Newton-polished from this very curve), it is a row, with the report the point already
  carries; a traced point is left out where such a row lies within half its step, so the requested
  values stand in for the continuation where they resolve the curve, and traced points fill in where
  they do not (around turns, where the requested values are sparse);
- **bounded**: at most ``max_points`` rows, the special points and the ends always kept, then the other
  rows, all of them when they fit, else those nearest to equally spaced arclengths;
- **reported**: the theory's report is computed only at the rows kept that do not carry one already.

Every row is a solution (a traced, refined, polished or requested point), never an interpolation. The
arclength is measured in the continuation's coordinates (x, (p - p_lo)/(p_hi - p_lo)) along the rows
before resampling, so it never decreases.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from solvers.core.catalogue import same_solution
from solvers.core.curve import Curve, CurvePoint, End
from solvers.core.curve_results import CurveRow, CurveTable
from solvers.core.detect import BRANCH_POINT_REL, curve_cuts, curve_tracks, polish
from solvers.core.errors import or_none
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import Catalogue, Report, is_stable
from solvers.core.special_points import SpecialKind, SpecialPoint

#: Rows of one curve table (more only when a curve holds more special points than that).
MAX_POINTS = 200


@dataclass
class _Row:
    p: float
    x: np.ndarray
    branch: str
    stable: bool | None
    free_entropy: float | None
    special: int | None = None
    pinned: bool = False  # a special point or an end of the range: always kept
    #: A requested value's solution: its report is the point's (a traced row has none until it is kept).
    report: Report | None = None
    s: float = 0.0


def curve_tables(
    problem: Problem,
    curves: Sequence[Curve],
    special_points: Sequence[SpecialPoint],
    p_lo: float,
    p_hi: float,
    options: SolverOptions,
    *,
    catalogues: Sequence[Catalogue] = (),
    max_points: int = MAX_POINTS,
) -> tuple[CurveTable, ...]:
    """A table per curve (per piece of a curve inside the range, should it leave and come back); ``catalogues``:
    the sweep's solutions at the requested values, whose branches on a curve are rows of it."""
    width = (p_hi - p_lo) or 1.0
    out: list[CurveTable] = []
    for curve in curves:
        if not curve.points:
            continue
        cuts = curve_cuts(curve)
        tracks = curve_tracks(problem, curve, cuts)
        names = [tr.name for _, tr in tracks for _q in tr.points]
        rows = _rows(problem, curve, names, {i for i, _ in cuts}, special_points, catalogues, options)
        pieces = _clipped(problem, rows, p_lo, p_hi, options)
        ends = _branch_ends(curve, names, p_lo, p_hi)
        for k, piece in enumerate(pieces):
            _arclength(piece, p_lo, width)
            kept = _resampled(_thinned(piece), max_points)
            table_rows = tuple(_reported(problem, r) for r in kept)
            out.append(CurveTable(curve.name, table_rows, len(curve.points), curve.message,
                                  tuple(dict.fromkeys(r.branch for r in table_rows)),
                                  _piece_ends(ends, piece, k == 0, k == len(pieces) - 1, width)))
    return tuple(out)


def _branch_ends(curve: Curve, names: list[str], p_lo: float, p_hi: float) -> list[tuple[str, End]]:
    """Every end of a branch on the curve inside [p_lo, p_hi], tagged with where it lies: ``first`` / ``last`` (an
    end of the curve) or ``fold`` (both branches that meet at a refined fold, each naming the other)."""
    inside = lambda p: p_lo - 1e-12 * max(1.0, abs(p_lo)) <= p <= p_hi + 1e-12 * max(1.0, abs(p_hi))  # noqa: E731
    out: list[tuple[str, End]] = []
    first, last = curve.ends
    if first is not None and inside(first.parameter):
        out.append(("first", replace(first, branch=names[0])))
    for f in curve.folds:
        if 0 <= f.index < len(names) - 1 and inside(f.p):
            a, b = names[f.index], names[f.index + 1]
            for one, other in ((a, b), (b, a)):
                why = f"the curve turns back in the parameter and continues as {other}"
                out.append(("fold", End("fold", f.point, detail=why, branch=one, partner=other)))
    if last is not None and inside(last.parameter):
        out.append(("last", replace(last, branch=names[-1])))
    return out


def _piece_ends(
    ends: list[tuple[str, End]], piece: list[_Row], first: bool, last: bool, width: float
) -> tuple[End, ...]:
    """The ends that belong to one piece of the curve within the range: the curve's own ends on its first and last
    piece, a fold on the piece that holds both its branches around its parameter."""
    lo, hi = min(r.p for r in piece), max(r.p for r in piece)
    tol = 1e-9 * width
    held = {r.branch for r in piece}
    out = []
    for where, e in ends:
        own = (where == "first" and first) or (where == "last" and last)
        if own or (where == "fold" and lo - tol <= e.parameter <= hi + tol and {e.branch, e.partner} <= held):
            out.append(e)
    return tuple(out)


def _traced_row(q: CurvePoint, name: str) -> _Row:
    return _Row(q.p, np.asarray(q.x, dtype=float), name, q.stable, q.free_entropy)


def _rows(
    problem: Problem, curve: Curve, names: list[str], cut_after: set[int], sps: Sequence[SpecialPoint],
    catalogues: Sequence[Catalogue], options: SolverOptions,
) -> list[_Row]:
    """The curve's points, with each fold, each special point and each requested value's solution on it inserted
    between its two neighbours (a requested solution at a traced point's own parameter takes its place)."""
    pts = curve.points
    inserted: dict[int, list[_Inserted]] = {}  # by segment: between points i and i + 1
    for f in curve.folds:
        if f.refined and 0 <= f.index < len(pts) - 1:
            inserted.setdefault(f.index, []).append(_Inserted(f.p, np.asarray(f.x, dtype=float)))
    for k, sp in enumerate(sps):
        if not sp.refined:
            continue  # only bracketed: it has no place on a curve
        tagged = {i for i, here in inserted.items() for e in here if e.claim(problem, sp, k)}
        if tagged and sp.kind is SpecialKind.FOLD:
            continue  # the curve's own fold: a regular point of it, which it passes once (a branch point may be twice)
        for i, x in _locations(problem, curve, names, sp, options):
            if i not in tagged:
                inserted.setdefault(i, []).append(_Inserted(sp.parameter, x, k))
    rows = [_traced_row(q, names[i]) for i, q in enumerate(pts)]
    for i, e in _requested(curve, catalogues):
        a, b = pts[i], pts[i + 1]
        at = i if e.p == a.p else (i + 1 if e.p == b.p else None)
        if at is not None:
            rows[at].report, rows[at].x = e.report, e.x
        else:
            inserted.setdefault(i, []).append(e)
    out: list[_Row] = []
    for i, row in enumerate(rows):
        out.append(row)
        if i == len(pts) - 1:
            break
        here = inserted.get(i)
        if not here:
            continue
        start = pts[i]
        here = sorted(here, key=lambda e: float(np.dot(e.x - start.x, e.x - start.x)) + abs(e.p - start.p))
        left, right = rows[i].stable, rows[i + 1].stable
        cut = i in cut_after
        passed = False  # past the special point where the curve changes branch in this segment
        for e in here:
            if e.report is not None:
                after = passed or (cut and e.stable == right != left)
                out.append(_Row(e.p, e.x, names[i + 1] if after else names[i], e.stable, e.free_entropy,
                                report=e.report))
                continue
            fe = _free_entropy(problem, e.x, e.p)
            if cut and not passed:
                # the special point ends the branch before it and starts the one after it
                out.append(_Row(e.p, e.x, names[i], left, fe, e.special, pinned=True))
                out.append(_Row(e.p, e.x, names[i + 1], right, fe, e.special, pinned=True))
                passed = True
            else:
                stable = left if left == right else _stable(problem, e.x, e.p)
                out.append(_Row(e.p, e.x, names[i + 1] if passed else names[i], stable, fe, e.special,
                                pinned=True))
    return out


def _requested(curve: Curve, catalogues: Sequence[Catalogue]) -> list[tuple[int, _Inserted]]:
    """(segment, row) of every requested value's converged, reported branch that lies on the curve: on the
    segment bracketing its value whose chord passes closest to its state (within the segment's reach)."""
    pts = curve.points
    seen: set[float] = set()
    found = []
    for cat in catalogues:
        if float(cat.parameter) in seen:
            continue  # a repeated value: one row
        seen.add(float(cat.parameter))
        found.extend((float(cat.parameter), br) for br in cat.branches if br.converged and br.report is not None)
    if len(pts) < 2 or not found:
        return []
    v = np.array([f[0] for f in found])
    x = np.array([np.asarray(f[1].x, dtype=float) for f in found])
    p = np.array([q.p for q in pts])
    xs = np.array([q.x for q in pts])
    # every (solution k, segment i) whose parameter range holds the solution's value, all at once
    k, i = np.nonzero((np.minimum(p[:-1], p[1:]) <= v[:, None]) & (v[:, None] <= np.maximum(p[:-1], p[1:])))
    dp = p[i + 1] - p[i]
    w = np.where(dp != 0, (v[k] - p[i]) / np.where(dp != 0, dp, 1.0), 0.0)
    d = x[k] - ((1 - w)[:, None] * xs[i] + w[:, None] * xs[i + 1])
    dist = np.sqrt(np.einsum("ij,ij->i", d, d))
    step = xs[i + 1] - xs[i]
    reach = 0.5 * np.sqrt(np.einsum("ij,ij->i", step, step)) + 1e-6 * (1.0 + np.sqrt(np.einsum("ij,ij->i", x[k], x[k])))
    near = dist <= reach
    k, i, dist = k[near], i[near], dist[near]
    order = np.lexsort((dist, k))  # by solution, closest segment first
    first = order[np.concatenate([[True], k[order][1:] != k[order][:-1]])] if order.size else order
    return [(int(i[j]), _Inserted(float(v[k[j]]), x[k[j]], report=found[k[j]][1].report,
                                  stable=found[k[j]][1].stable, free_entropy=found[k[j]][1].free_entropy))
            for j in first]


@dataclass
class _Inserted:
    """A point inserted between two traced points: a fold of the curve, a special point of the sweep, or a
    requested value's solution (with its report)."""

    p: float
    x: np.ndarray
    special: int | None = None
    report: Report | None = None
    stable: bool | None = None
    free_entropy: float | None = None

    def claim(self, problem: Problem, sp: SpecialPoint, k: int) -> bool:
        """Tag this fold with the special point ``k`` that records it: the fold itself, or the branch point the
        sweep merged it into (a fold next to a bifurcation is that branch point seen from the branch that splits
        off, located poorly there: the branch point's own state and parameter replace it)."""
        if self.special is not None or sp.x is None:
            return self.special == k
        near = abs(sp.parameter - self.p) <= BRANCH_POINT_REL * max(1.0, abs(sp.parameter))
        if sp.kind is SpecialKind.FOLD and near and same_solution(problem, np.asarray(sp.x), self.x, tol=1e-5):
            self.special = k
        elif sp.kind is SpecialKind.BIFURCATION and near:
            self.p, self.x, self.special = sp.parameter, np.asarray(sp.x, dtype=float), k
        return self.special == k


def _locations(
    problem: Problem, curve: Curve, names: list[str], sp: SpecialPoint, options: SolverOptions
) -> list[tuple[int, np.ndarray]]:
    """(segment, state) of each place where the refined special point ``sp`` lies on the curve."""
    pts = curve.points
    out: list[tuple[int, np.ndarray]] = []
    p = np.array([q.p for q in pts])
    for i in np.nonzero((np.minimum(p[:-1], p[1:]) <= sp.parameter) & (sp.parameter <= np.maximum(p[:-1], p[1:])))[0]:
        i = int(i)
        a, b = pts[i], pts[i + 1]
        w = 0.0 if a.p == b.p else (sp.parameter - a.p) / (b.p - a.p)
        guess = (1 - w) * a.x + w * b.x
        # How far the curve's own chord may be from a point of the curve between a and b.
        reach = 0.5 * float(np.linalg.norm(b.x - a.x)) + 1e-6 * (1.0 + float(np.linalg.norm(guess)))
        if sp.x is not None:
            x = np.asarray(sp.x, dtype=float)
            if float(np.linalg.norm(x - guess)) <= reach:
                out.append((i, x))
        elif sp.kind is SpecialKind.FIRST_ORDER and names[i] in sp.branches and names[i + 1] in sp.branches:
            res = polish(problem, sp.parameter, guess, options)
            if res.converged and float(np.linalg.norm(res.x - guess)) <= reach:
                out.append((i, np.asarray(res.x, dtype=float)))
    return out


def _free_entropy(problem: Problem, x: np.ndarray, p: float) -> float | None:
    if problem.free_entropy is None:
        return None
    fe = or_none(problem.free_entropy, x, p)
    return None if fe is None else float(fe)


def _stable(problem: Problem, x: np.ndarray, p: float) -> bool | None:
    return is_stable(or_none(problem.margin, x, p))


def _clipped(
    problem: Problem, rows: list[_Row], p_lo: float, p_hi: float, options: SolverOptions
) -> list[list[_Row]]:
    """The runs of rows inside [p_lo, p_hi], each closed by the curve's solution at the end value it crosses."""
    tol = 1e-12 * max(1.0, abs(p_lo), abs(p_hi))

    def inside(r: _Row) -> bool:
        return p_lo - tol <= r.p <= p_hi + tol

    pieces: list[list[_Row]] = []
    current: list[_Row] = []
    for k, r in enumerate(rows):
        prev = rows[k - 1] if k else None
        if prev is not None and inside(prev) != inside(r):
            within, beyond = (prev, r) if inside(prev) else (r, prev)
            p_end = p_lo if beyond.p < p_lo else p_hi
            if abs(within.p - p_end) <= tol:
                within.pinned = True  # a row at the end value already: it is the end row
            else:
                end = _end_row(problem, within, beyond, p_end, options)
                if end is not None:
                    current.append(end)
        if inside(r):
            current.append(r)
        elif current:
            pieces.append(current)
            current = []
    if current:
        pieces.append(current)
    return pieces


def _end_row(problem: Problem, within: _Row, beyond: _Row, p_end: float, options: SolverOptions) -> _Row | None:
    """The curve's solution at ``p_end``, between a row inside the range and the next one outside it."""
    w = (p_end - within.p) / (beyond.p - within.p)
    guess = (1 - w) * within.x + w * beyond.x
    res = polish(problem, p_end, guess, options)
    if not res.converged or not same_solution(problem, res.x, guess, tol=0.2):
        return None
    x = np.asarray(res.x, dtype=float)
    return _Row(p_end, x, within.branch, within.stable, _free_entropy(problem, x, p_end), pinned=True)


def _arclength(rows: list[_Row], p_lo: float, width: float) -> None:
    z = np.column_stack([np.array([r.x for r in rows]), np.array([r.p for r in rows]) / width])
    s = np.concatenate([[0.0], np.cumsum(np.sqrt(np.sum(np.diff(z, axis=0) ** 2, axis=1)))])
    for r, sk in zip(rows, s.tolist(), strict=True):
        r.s = sk


def _thinned(rows: list[_Row]) -> list[_Row]:
    """Without the traced rows that a requested value's row stands in for: one within half the traced step."""
    s = np.array([r.s for r in rows])
    traced = [k for k, r in enumerate(rows) if r.report is None and not r.pinned]
    given = np.array([r.s for r in rows if r.report is not None])
    if not traced or not given.size:
        return rows
    ts = s[traced]
    step = np.diff(ts)
    left = np.concatenate([[np.inf], step])
    right = np.concatenate([step, [np.inf]])
    half = 0.5 * np.minimum(left, right)
    nearest = np.min(np.abs(given[None, :] - ts[:, None]), axis=1)
    drop = {traced[j] for j in np.nonzero(nearest <= half)[0]}
    return [r for k, r in enumerate(rows) if k not in drop]


def _resampled(rows: list[_Row], max_points: int) -> list[_Row]:
    """All rows when they fit; else every pinned row, the two ends, and the traced rows nearest to equally
    spaced arclengths."""
    if len(rows) <= max_points:
        return rows
    keep = {0, len(rows) - 1} | {k for k, r in enumerate(rows) if r.pinned}
    free = [k for k in range(len(rows)) if k not in keep]
    room = max_points - len(keep)
    if room > 0 and free:
        s_free = np.array([rows[k].s for k in free])
        targets = np.linspace(rows[0].s, rows[-1].s, room + 2)[1:-1]
        for t in targets:
            j = int(np.argmin(np.abs(s_free - t)))
            keep.add(free[j])
    return [rows[k] for k in sorted(keep)]


def _reported(problem: Problem, r: _Row) -> CurveRow:
    report = r.report
    if report is None and problem.report is not None:
        report = or_none(problem.report, r.x, r.p)
    return CurveRow(r.p, r.x, r.s, r.branch, r.stable, r.free_entropy, report, r.special)
