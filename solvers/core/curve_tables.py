"""The traced curves of a continuation as bounded tables of solutions, with the special points on them.

A :class:`~solvers.core.continuation.Curve` is what the continuation stepped through: points a few
percent of the range apart, running past the ends of the range, its folds between two of its points.
What a user draws is a table per curve (:class:`CurveTable`), made here:

- **special points on their curves**: each fold of the curve, and each refined special point of the
  sweep that lies on it, becomes a row at its own state (the state the engine refined it to; a
  first-order point, which has none, Newton-polished from the curve at its parameter). Where the curve
  changes branch (a fold, a change of stability) the point is written twice in a row, once as the
  last row of the branch before it and once as the first of the branch after it;
- **clipped to the range**: rows outside [p_lo, p_hi] are dropped; where the curve crosses an end its
  state there is polished from the curve and kept;
- **bounded**: at most ``max_points`` rows, the special points and the ends always kept, then traced
  points, all of them when they fit, else those nearest to equally spaced arclengths;
- **reported**: the theory's report is computed only at the rows kept.

Every row is a solution (a traced, refined or polished point), never an interpolation. The arclength
is measured in the continuation's coordinates (x, (p - p_lo)/(p_hi - p_lo)) along the rows before
resampling, so it never decreases.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from solvers.core.catalogue import is_stable, same_solution, stability_margin
from solvers.core.continuation import Curve, CurvePoint
from solvers.core.detect import BRANCH_POINT_REL, curve_cuts, curve_tracks, polish
from solvers.core.errors import is_numerical
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import Report
from solvers.core.special_points import SpecialKind, SpecialPoint

#: Rows of one curve table (more only when a curve holds more special points than that).
MAX_POINTS = 200


@dataclass(frozen=True)
class CurveRow:
    """One solution on a curve."""

    p: float
    x: np.ndarray
    arclength: float
    branch: str
    stable: bool | None
    free_entropy: float | None
    report: Report | None = None
    #: Index of the sweep's special point at this row (None for a traced point).
    special: int | None = None


@dataclass(frozen=True)
class CurveTable:
    """One traced curve within the range: its rows in order along it."""

    name: str
    rows: tuple[CurveRow, ...]
    #: Points the continuation made on the whole curve.
    traced: int
    message: str = ""
    branches: tuple[str, ...] = field(default=())


@dataclass
class _Row:
    p: float
    x: np.ndarray
    branch: str
    stable: bool | None
    free_entropy: float | None
    special: int | None = None
    pinned: bool = False  # a special point or an end of the range: always kept
    s: float = 0.0


def curve_tables(
    problem: Problem,
    curves: Sequence[Curve],
    special_points: Sequence[SpecialPoint],
    p_lo: float,
    p_hi: float,
    options: SolverOptions,
    *,
    max_points: int = MAX_POINTS,
) -> tuple[CurveTable, ...]:
    """A table per curve (per piece of a curve inside the range, should it leave and come back)."""
    width = (p_hi - p_lo) or 1.0
    out: list[CurveTable] = []
    for curve in curves:
        if not curve.points:
            continue
        cuts = curve_cuts(curve)
        tracks = curve_tracks(problem, curve, cuts)
        names = [tr.name for _, tr in tracks for _q in tr.points]
        rows = _with_special_points(problem, curve, names, {i for i, _ in cuts}, special_points, options)
        for piece in _clipped(problem, rows, p_lo, p_hi, options):
            _arclength(piece, p_lo, width)
            kept = _resampled(piece, max_points)
            table_rows = tuple(_reported(problem, r) for r in kept)
            out.append(CurveTable(curve.name, table_rows, len(curve.points), curve.message,
                                  tuple(dict.fromkeys(r.branch for r in table_rows))))
    return tuple(out)


def _traced_row(q: CurvePoint, name: str) -> _Row:
    return _Row(q.p, np.asarray(q.x, dtype=float), name, q.stable, q.free_entropy)


def _with_special_points(
    problem: Problem, curve: Curve, names: list[str], cut_after: set[int], sps: Sequence[SpecialPoint],
    options: SolverOptions,
) -> list[_Row]:
    """The curve's points, with each fold and each special point on it inserted between its two neighbours."""
    pts = curve.points
    inserted: dict[int, list[_Inserted]] = {}  # by segment: between points i and i + 1
    for f in curve.folds:
        if f.refined and 0 <= f.index < len(pts) - 1:
            inserted.setdefault(f.index, []).append(_Inserted(f.p, np.asarray(f.x, dtype=float)))
    for k, sp in enumerate(sps):
        if not sp.refined:
            continue  # only bracketed: it has no place on a curve
        tagged = {i for i, here in inserted.items() for e in here if e.claim(problem, sp, k)}
        for i, x in _locations(problem, curve, names, sp, options):
            if i not in tagged:
                inserted.setdefault(i, []).append(_Inserted(sp.parameter, x, k))
    rows: list[_Row] = []
    for i, q in enumerate(pts):
        rows.append(_traced_row(q, names[i]))
        if i == len(pts) - 1:
            break
        a, b = pts[i], pts[i + 1]
        here = sorted(inserted.get(i, []), key=lambda e: float(np.linalg.norm(e.x - a.x)) + abs(e.p - a.p))
        for p, x, k in ((e.p, e.x, e.special) for e in here):
            fe = _free_entropy(problem, x, p)
            if i in cut_after:
                # the special point ends the branch before it and starts the one after it
                rows.append(_Row(p, x, names[i], a.stable, fe, k, pinned=True))
                rows.append(_Row(p, x, names[i + 1], b.stable, fe, k, pinned=True))
            else:
                stable = a.stable if a.stable == b.stable else _stable(problem, x, p)
                rows.append(_Row(p, x, names[i], stable, fe, k, pinned=True))
    return rows


@dataclass
class _Inserted:
    """A point inserted between two traced points: a fold of the curve, or a special point of the sweep."""

    p: float
    x: np.ndarray
    special: int | None = None

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
    for i in range(len(pts) - 1):
        a, b = pts[i], pts[i + 1]
        lo, hi = sorted((a.p, b.p))
        if not lo <= sp.parameter <= hi:
            continue
        w = 0.0 if hi == lo else (sp.parameter - a.p) / (b.p - a.p)
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
    try:
        return float(problem.free_entropy(x, p))
    except Exception as exc:
        if not is_numerical(exc):
            raise
        return None


def _stable(problem: Problem, x: np.ndarray, p: float) -> bool | None:
    try:
        return is_stable(stability_margin(problem, x, p))
    except Exception as exc:
        if not is_numerical(exc):
            raise
        return None


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
            end = None if abs(within.p - p_end) <= tol else _end_row(problem, within, beyond, p_end, options)
            if end is not None:
                current.append(end)
            elif inside(r) and abs(r.p - p_end) <= tol:
                r.pinned = True  # a traced point at the end value: it is the end row
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
    s = 0.0
    for k, r in enumerate(rows):
        if k:
            prev = rows[k - 1]
            dz = np.concatenate([r.x - prev.x, [(r.p - prev.p) / width]])
            s += float(np.linalg.norm(dz))
        r.s = s


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
    report = None
    if problem.report is not None:
        try:
            report = problem.report(r.x, r.p)
        except Exception as exc:
            if not is_numerical(exc):
                raise
    return CurveRow(r.p, r.x, r.s, r.branch, r.stable, r.free_entropy, report, r.special)
