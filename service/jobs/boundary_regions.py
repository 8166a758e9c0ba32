"""The phases a boundary job's traced lines separate: the equilibrium solved a little to either side of each line.

A traced line says where a transition is, not which phases meet there; a grid phase diagram says it at every grid
point, a boundary job only at the probes this module adds: for each line, from the point half way along it, along
the line's normal to either side, half way to the next line or the box's edge (in coordinates scaled to the box),
so that a probe lies inside the region it names; the box's centre when there is no line. Each probe is one single
solve of the spec at that (p1, p2); its phase is the theory's ``phase`` observable where the equilibrium reports
one (GFL, GMFL-II; universal, specialized), else the equilibrium branch's name, and None where the solve found no
equilibrium. Two solves per line: next to tracing the line, little.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pydantic import ValidationError

#: Probes lie half way between their line and the next line (or the box's edge) along the line's normal; at least
#: MIN_OFFSET of the box from their line, and a next line counts as reached within REACH of it (scaled coordinates).
MIN_OFFSET, REACH, STEP = 0.01, 0.01, 0.005


def _distance_to(polyline: np.ndarray, q: np.ndarray) -> float:
    """Distance from q to a polyline (its segments; a single point as itself)."""
    if len(polyline) == 1:
        return float(np.linalg.norm(polyline[0] - q))
    a, b = polyline[:-1], polyline[1:]
    ab = b - a
    t = np.clip(np.einsum("ij,ij->i", q - a, ab) / np.maximum(np.einsum("ij,ij->i", ab, ab), 1e-300), 0.0, 1.0)
    return float(np.min(np.linalg.norm(a + t[:, None] * ab - q, axis=1)))


def _free_run(start: np.ndarray, direction: np.ndarray, others: list[np.ndarray]) -> float:
    """How far one can go from ``start`` along ``direction`` (scaled box [0, 1]²) before the box's edge or another
    line."""
    t = 0.0
    while True:
        q = start + (t + STEP) * direction
        if np.any(q < 0.0) or np.any(q > 1.0) or any(_distance_to(o, q) <= REACH for o in others):
            return t
        t += STEP


def probe_points(
    lines: Sequence[Sequence[Sequence[float]]], box: tuple[tuple[float, float], tuple[float, float]],
) -> list[tuple[float, float]]:
    """(p1, p2) on either side of the middle of every line of at least two points, half way to what lies next on
    that side; the box's centre without any line."""
    lo = np.array([box[0][0], box[1][0]], dtype=float)
    span = np.array([box[0][1] - box[0][0], box[1][1] - box[1][0]], dtype=float)
    span[span == 0] = 1.0
    scaled = []
    for points in lines:
        pts = (np.asarray(points, dtype=float).reshape(-1, 2) - lo) / span
        scaled.append(pts[np.all(np.isfinite(pts), axis=1)])
    out: list[tuple[float, float]] = []
    for k, pts in enumerate(scaled):
        if len(pts) < 2:
            continue
        m = len(pts) // 2
        a, b = pts[max(m - 1, 0)], pts[min(m + 1, len(pts) - 1)]
        tangent = b - a
        if not np.any(tangent):
            continue
        normal = np.array([-tangent[1], tangent[0]]) / np.linalg.norm(tangent)
        others = [q for j, q in enumerate(scaled) if j != k and len(q)]
        for side in (1.0, -1.0):
            run = _free_run(pts[m], side * normal, others)
            q = np.clip(pts[m] + side * max(0.5 * run, MIN_OFFSET) * normal, 0.0, 1.0)
            out.append(tuple(float(v) for v in lo + q * span))  # type: ignore[arg-type]
    if not out:
        out.append(tuple(float(v) for v in lo + 0.5 * span))  # type: ignore[arg-type]
    return out


def phase_of(catalogue: Any) -> str | None:
    """The equilibrium's phase: its ``phase`` observable where the theory reports one, else its branch's name."""
    eq = catalogue.equilibrium_branch
    if eq is None:
        return None
    phase = (eq.report.observables.get("phase") if eq.report is not None else None)
    return phase if isinstance(phase, str) else eq.name


def region_probes(
    theory: Any, spec_at: Callable[[float, float], Any], points: Sequence[tuple[float, float]], options: Any,
    check: Callable[[], None],
) -> list[dict[str, Any]]:
    """``[{"point": [p1, p2], "phase"}]`` for every probe whose spec is valid. An integer field (a width, a sample
    count) takes the nearest integer, and ``point`` says where the solve was; a probe that no rounding makes valid
    (``spec_at`` raises a ValidationError) is left out."""
    out = []
    for p1, p2 in points:
        check()
        found = _valid(spec_at, p1, p2)
        if found is not None:
            (q1, q2), spec = found
            out.append({"point": [q1, q2], "phase": phase_of(theory.solve(spec, options))})
    return out


def _valid(spec_at: Callable[[float, float], Any], p1: float, p2: float) -> tuple[tuple[float, float], Any] | None:
    r1, r2 = round(p1), round(p2)  # ints: an integer field takes an int (a strict field refuses 500.0)
    for q1, q2 in ((p1, p2), (r1, p2), (p1, r2), (r1, r2)):
        try:
            return (float(q1), float(q2)), spec_at(q1, q2)
        except ValidationError:
            continue
    return None
