"""A closed curve is traced once round, every special point on it found once, the one next to its start included.

Reference: the isola's circle x² + (p − 2)² = 1 (tests/core/deflation_problems.py), folds at p = 1 and p = 3 (x = 0).
Traced over p ∈ [0, 4], its scaled coordinates (x, p / 4) run round an ellipse of semi-axes 1 and 1/4, whose
perimeter is 4 E(m = 15/16) (complete elliptic integral of the second kind): one round. Twice round would be twice
that; the tolerance (0.5 %) is far above the chords' shortfall from the arc (≈ (κ ds)² / 24 per step).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy.special import ellipe

from solvers.core import arclength
from solvers.core.continuation import trace_curve
from solvers.core.detect import curve_cuts, curve_tracks
from solvers.core.lines import trace_branch
from solvers.core.options import SolverOptions
from tests.core.deflation_problems import isola_problem
from tests.core.test_arclength import FOLD, WIDE, Circle, _limits

P_LO, P_HI = 0.0, 4.0
ROUND = 4 * float(ellipe(15 / 16))  # the perimeter of the scaled circle


def _on_circle(p: float, side: float) -> tuple[float, np.ndarray]:
    return p, np.array([side * math.sqrt(max(0.0, 1 - (p - 2) ** 2))])


SEEDS = {
    "top": _on_circle(2.0, 1.0),
    "bottom": _on_circle(2.0, -1.0),
    "at the fold p = 1": (1.0, np.array([0.0])),
    "at the fold p = 3": (3.0, np.array([0.0])),
    "next to the fold p = 1, x > 0": _on_circle(1.0 + 1e-9, 1.0),
    "next to the fold p = 1, x < 0": _on_circle(1.0 + 1e-9, -1.0),
    "next to the fold p = 3, x > 0": _on_circle(3.0 - 1e-7, 1.0),
    "near the fold p = 1": _on_circle(1.0 + 1e-4, -1.0),
}


def _length(points: list[tuple[float, np.ndarray]]) -> float:
    z = np.array([[float(x[0]), p / (P_HI - P_LO)] for p, x in points])
    return float(np.sum(np.linalg.norm(np.diff(z, axis=0), axis=1)))


@pytest.mark.parametrize("seed", SEEDS.values(), ids=SEEDS.keys())
def test_the_isola_is_traced_once_round_with_both_folds_once(seed: tuple[float, np.ndarray]) -> None:
    p0, x0 = seed
    curve = trace_curve(isola_problem(), p0, x0, P_LO, P_HI, SolverOptions())
    assert curve.ends[0] is None and curve.ends[1] is not None and curve.ends[1].kind == "closed"
    first, last = curve.points[0], curve.points[-1]
    assert (last.p, float(last.x[0])) == (first.p, float(first.x[0]))  # back on its first point
    assert _length([(q.p, q.x) for q in curve.points]) == pytest.approx(ROUND, rel=5e-3)
    for q in curve.points:
        assert q.x[0] ** 2 + (q.p - 2) ** 2 == pytest.approx(1.0, abs=1e-8)
    folds = sorted(curve.folds, key=lambda f: f.p)
    assert [f.p for f in folds] == pytest.approx([1.0, 3.0], abs=1e-8)
    for f in folds:
        assert f.refined and abs(float(f.x[0])) < 1e-4  # x = 0 there, to the square root of p's precision
        assert 0 <= f.index < len(curve.points) - 1


def test_the_branches_on_either_side_of_a_loops_start_are_one() -> None:
    """Without the theory's labels the pieces between folds are named by the curve: the piece before the start
    and the piece after it are one branch, so they have one name."""
    problem = replace(isola_problem(), label=None)
    curve = trace_curve(problem, *SEEDS["bottom"], P_LO, P_HI, SolverOptions(), name="circle")
    names = [tr.name for _, tr in curve_tracks(problem, curve, curve_cuts(curve))]
    assert len(names) == 3 and names[0] == names[-1] != names[1]


@pytest.mark.parametrize("angle", [0.5 * np.pi, -0.5 * np.pi, 0.5 * np.pi + 1e-9, 0.5 * np.pi - 2e-6, np.pi / 6])
def test_a_path_round_a_circle_ends_on_its_first_point_with_each_fold_once(angle: float) -> None:
    """G(x, p) = x² + p² − 4, folds at p = ±2; from a fold itself (its monitor exactly zero at the first point), next
    to one on either side, and away from both."""
    z0 = 2 * np.array([np.cos(angle), np.sin(angle)])
    if abs(abs(angle) - 0.5 * np.pi) == 0:
        z0[0] = 0.0  # on the fold exactly
    t0 = np.array([-z0[1], z0[0]]) / 2  # anticlockwise
    path = arclength.run(Circle(2.0), z0, t0, _limits(exact=True), box=WIDE, monitors=[FOLD])
    assert path.end == "closed"
    assert np.array_equal(path.z[-1], path.z[0])
    turned = sum(np.arctan2(b[0] * a[1] - b[1] * a[0], a @ b) for a, b in zip(path.z, path.z[1:], strict=False))
    assert abs(turned) == pytest.approx(2 * np.pi, rel=1e-12)  # once round
    folds = sorted(float(f.z[1]) for f in path.located if f.name == "fold")
    assert folds == pytest.approx([-2.0, 2.0], abs=1e-9)


def test_a_closed_branch_traced_for_branch_switching_ends_as_a_sweeps_closed_curve() -> None:
    """``lines.trace_branch`` (the branch record of branch switching) and a sweep's curve: once round, one end."""
    branch = trace_branch(isola_problem(), np.array([1.0]), 2.0, (P_LO, P_HI))
    first, last = branch.ends
    assert first is None and last is not None and last.kind == "closed"
    assert last.point == branch.points[-1].point == branch.points[0].point == (2.0,)
    assert [e.kind for e in branch.traced_ends] == ["closed"]
    for q in branch.points:
        assert q.x[0] ** 2 + (q.p - 2) ** 2 == pytest.approx(1.0, abs=1e-8)
    assert _length([(q.p, q.x) for q in branch.points]) == pytest.approx(ROUND, rel=5e-3)
