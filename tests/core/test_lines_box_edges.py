"""The scans of a box: a line that runs between the interior rows is found where it crosses the box's edges, a closed
line inside the box by an interior row, and a crossing no line explains is named.

References are closed forms: x³ − a x + λ has its first-order line at λ = 0 (states ±√a) and its folds on
λ = ±2 (a/3)^(3/2).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from service.serialize import line_out
from solvers.core.lines import LineOptions, scan_special_points, trace_boundaries
from solvers.core.problem import Problem
from solvers.core.special_points import SpecialKind
from tests.core.line_problems import cusp


def test_a_line_between_the_rows_is_found_on_the_edges() -> None:
    """λ1 = λ over [−1, 1], λ2 = a over [0.5, 3], two rows (λ = ±1, the box's λ1 edges): the first-order line λ = 0
    crosses no row; it enters and leaves through the edges a = 0.5 and a = 3."""
    problem = cusp().swapped()
    assert problem.parameters == ("lambda", "a")
    res = trace_boundaries(problem, (-1.0, 1.0), (0.5, 3.0), LineOptions(seeds=2))
    assert res.scans == (-1.0, 1.0) and res.edges == (0.5, 3.0)
    (first,) = res.of_kind(SpecialKind.FIRST_ORDER)
    pts = first.array()
    assert np.max(np.abs(pts[:, 0])) < 1e-8
    assert {e.kind for e in first.ends} == {"domain"}
    assert sorted(pts[[0, -1], 1]) == [0.5, 3.0]
    for (_, a), states in zip(first.coordinates, first.states, strict=True):
        assert np.allclose(sorted(states[:, 0]), [-np.sqrt(a), np.sqrt(a)], atol=1e-8)
    # the rows alone see the folds but no first-order point: only the edges do
    for lam in (-1.0, 1.0):
        row = scan_special_points(problem, lam, (0.5, 3.0), LineOptions(seeds=2), lam1_width=2.0)
        assert SpecialKind.FIRST_ORDER not in {p.kind for p in row.points}
    folds = res.of_kind(SpecialKind.FOLD)
    assert len(folds) == 2
    for fold in folds:
        lam, a = fold.array().T
        assert np.max(np.abs(np.abs(lam) - 2 * (a / 3) ** 1.5)) < 1e-8
    assert res.unexplained == () and res.warnings == ()


def test_a_closed_line_is_found_by_an_interior_row() -> None:
    """x³ − (1 − r²) x + 0.1, r² = λ1² + λ2²: folds where 27·0.01 = 4 (1 − r²)³, a circle of radius
    r_f = (1 − (0.0675)^(1/3))^(1/2) ≈ 0.770 that touches no edge of the box [−1.5, 1.5]²; the row λ1 = 0 crosses it."""
    r_fold = np.sqrt(1 - (27 * 0.01 / 4) ** (1 / 3))

    def F(x: np.ndarray, lam: np.ndarray) -> np.ndarray:
        return x**3 - (1 - lam[0] ** 2 - lam[1] ** 2) * x + 0.1

    ring = Problem(residual=F, dim=1, starts=lambda lam: {"left": np.array([-1.5]), "right": np.array([1.5]),
                                                               "middle": np.array([0.0])},
                               parameters=("l1", "l2"))
    res = trace_boundaries(ring, (-1.5, 1.5), (-1.5, 1.5), LineOptions(seeds=3))
    (fold,) = res.of_kind(SpecialKind.FOLD)
    # It ends once, on its last point, which is its first (where it was seeded), as a sweep's closed curve does;
    # and it is served with that one end.
    first, last = fold.ends
    assert first is None and last is not None and last.kind == "closed"
    assert last.point == fold.points[-1].point == fold.points[0].point
    served = line_out(fold)
    assert [e.kind for e in served.ends] == ["closed"] and served.ends[0].point == list(fold.points[-1].point)
    assert fold.message.endswith(f"ends: closed at ({last.point[0]:.10g}, {last.point[1]:.10g})")
    r = np.hypot(*fold.array().T)
    assert np.max(np.abs(r - r_fold)) < 1e-8
    # the whole circle, not an arc: its points go round the origin
    angles = np.sort(np.arctan2(fold.array()[:, 1], fold.array()[:, 0]))
    assert np.max(np.diff(angles)) < 0.5



def test_a_line_crossing_a_scan_that_saw_nothing_there_is_named() -> None:
    """x³ − a x + λ over a ∈ [0.5, 3], λ ∈ [−3, 3], with no start at the middle row a = 1.75: the lines are found from
    the other scans, and the result says where they cross the middle row, which saw nothing (the first-order line at
    λ = 0, the folds at λ = ±2 (1.75/3)^(3/2))."""
    base = cusp()
    starts = base.starts
    assert starts is not None
    blind = dataclasses.replace(base, starts=lambda lam: {} if lam[0] == 1.75 else starts(lam))
    res = trace_boundaries(blind, (0.5, 3.0), (-3.0, 3.0), LineOptions(seeds=3))
    assert res.scans == (0.5, 1.75, 3.0)
    assert len(res.of_kind(SpecialKind.FOLD)) == 2 and len(res.of_kind(SpecialKind.FIRST_ORDER)) == 1
    unseen = [w for w in res.warnings if "crosses the scan at a = 1.75" in w]
    assert len(unseen) == 3
    at = sorted(float(w.split("near lambda = ")[1].split(",")[0]) for w in unseen)
    fold = 2 * (1.75 / 3) ** 1.5
    assert at == pytest.approx([-fold, 0.0, fold], abs=1e-3)  # the chord between two traced points
    # with the starts everywhere, nothing is unseen
    assert trace_boundaries(base, (0.5, 3.0), (-3.0, 3.0), LineOptions(seeds=3)).warnings == ()
