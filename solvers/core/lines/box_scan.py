"""The scans that seed the lines of a box: interior rows and the box's four edges.

A line that crosses the box enters and leaves it through its edge, so every edge is scanned: the
two λ1 edges as rows (λ2 scanned at fixed λ1, like every row), the two λ2 edges along λ1 at fixed
λ2 (the problem with its parameters exchanged, restricted there). A line that runs from one λ2
edge to the other between two rows is therefore seen where it crosses those edges. The interior
rows, at the stated resolution (``LineOptions.seeds`` values of λ1, ends included), look for lines
that never reach the edge (closed lines) as well.

Every special point a scan finds is a *crossing*: a point where a line of its kind passes the
scanned segment. ``trace_boundaries`` traces from each crossing that no traced line passes
through, and names the crossings it could not explain.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from solvers.core.arclength import Box
from solvers.core.curve import Curve
from solvers.core.errors import MAYBE_NUMERICAL, is_numerical
from solvers.core.lines.scan import ScanPoint, scan_special_points
from solvers.core.options import LineOptions
from solvers.core.problem import Problem


@dataclass(frozen=True)
class Crossing:
    """A special point seen by one scan; ``scan`` names the segment, e.g. "alpha = 1 (edge)"."""

    point: ScanPoint
    scan: str


@dataclass(frozen=True)
class BoxScan:
    """What the scans of a box saw: the λ1 values scanned along λ2 (``rows``, the λ1 edges included), the λ2
    values scanned along λ1 (``edges``), every crossing (rows first, in scan order), and notes (what the
    problem lacks for some kind of point), and the scans that failed (``failed``)."""

    rows: tuple[float, ...]
    edges: tuple[float, ...]
    crossings: tuple[Crossing, ...]
    notes: tuple[str, ...]
    failed: tuple[str, ...] = ()


def row_values(box: Box, seeds: int) -> list[float]:
    """The λ1 values of the rows: ``seeds`` evenly spaced values with the ends (one: the middle), and the
    λ1 edges always."""
    lo, hi = float(box.lo[0]), float(box.hi[0])
    interior = [0.5 * (lo + hi)] if seeds == 1 else [float(v) for v in np.linspace(lo, hi, seeds)]
    return sorted({lo, hi, *interior})


def _unswap(point: ScanPoint) -> ScanPoint:
    return dataclasses.replace(point, lam=(point.lam[1], point.lam[0]))


def scan_box(problem: Problem, box: Box, options: LineOptions) -> BoxScan:
    """Scan the rows and the four edges of ``box`` for special points (see the module docstring)."""
    width = box.hi - box.lo
    names = problem.parameters
    rows = row_values(box, options.seeds)
    crossings: list[Crossing] = []
    notes: list[str] = []
    edge_of = {float(box.lo[0]), float(box.hi[0])}
    failed: list[str] = []

    def run(pr: Problem, fixed: float, span: tuple[float, float], lam_width: float, where: str,
            back: Callable[[ScanPoint], ScanPoint]) -> None:
        try:
            scan = scan_special_points(pr, fixed, span, options, lam1_width=lam_width)
        except MAYBE_NUMERICAL as exc:
            if not is_numerical(exc):
                raise
            # e.g. a residual that is not finite along the whole segment: what this scan would have seen is
            # unknown, and the result says so
            failed.append(f"the scan at {where} failed ({exc})")
            return
        crossings.extend(Crossing(back(p), where) for p in scan.points)
        notes.extend(n for n in scan.notes if n not in notes)

    for lam1 in rows:
        run(problem, lam1, (float(box.lo[1]), float(box.hi[1])), float(width[0]),
            f"{names[0]} = {lam1:.6g}" + (" (edge)" if lam1 in edge_of else ""), lambda p: p)
    edges = (float(box.lo[1]), float(box.hi[1]))
    swapped = problem.swapped()
    for lam2 in edges:
        run(swapped, lam2, (float(box.lo[0]), float(box.hi[0])), float(width[1]), f"{names[1]} = {lam2:.6g} (edge)",
            _unswap)
    return BoxScan(tuple(rows), edges, tuple(crossings), tuple(notes), tuple(failed))


#: Fraction of the box within which a scan's crossing counts as the place where a traced line crosses that scan
#: (the polyline is a chord between its points, off by up to ds²·curvature/8).
SEEN = 1e-2


def _crossings_of(points: np.ndarray, axis: int, value: float, width: float) -> list[float]:
    """The other coordinate where the polyline ``points`` (N, 2) meets ``points[:, axis] = value``."""
    other = 1 - axis
    out: list[float] = []
    d = points[:, axis] - value
    on = np.abs(d) <= 1e-9 * width
    for k in range(len(points)):
        if on[k]:
            out.append(float(points[k, other]))
        if k + 1 < len(points) and not on[k] and not on[k + 1] and d[k] * d[k + 1] < 0:
            t = d[k] / (d[k] - d[k + 1])
            out.append(float(points[k, other] + t * (points[k + 1, other] - points[k, other])))
    return out


def unseen_crossings(lines: Sequence[Curve], scans: BoxScan, box: Box, names: tuple[str, str]) -> list[str]:
    """Where a traced line crosses a scanned segment and that scan saw no special point near it: the scan's starts
    did not reach the line's branches there (the line was found elsewhere). One sentence per such place."""
    width = box.hi - box.lo
    seen = np.array([c.point.lam for c in scans.crossings], dtype=float).reshape(-1, 2)
    out: list[str] = []
    segments = [(0, v, f"{names[0]} = {v:.6g}") for v in scans.rows] + \
               [(1, v, f"{names[1]} = {v:.6g}") for v in scans.edges]
    for line in lines:
        if len(line.points) < 2:
            continue
        pts = line.array()
        for axis, value, where in segments:
            other = 1 - axis
            for x in _crossings_of(pts, axis, value, float(width[axis])):
                near = (np.abs(seen[:, axis] - value) <= 1e-9 * width[axis]) & (
                    np.abs(seen[:, other] - x) <= SEEN * width[other])
                if not near.any():
                    out.append(f"the {line.kind.value} line of {', '.join(line.branches) or 'its branch'} crosses the "
                               f"scan at {where} near {names[other]} = {x:.6g}, where that scan saw no special point "
                               "(its starts did not reach the line's branches there)")
    return out
