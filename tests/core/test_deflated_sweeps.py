"""Deflated continuation and the automatic branch diagram against solution sets known in closed form.

- The isola (x² + (p − 2)² − 1)(x − 3) = 0 over p ∈ [0, 4]: the line x = 3 everywhere and the circle
  x² + (p − 2)² = 1, two solutions x = ±√(1 − (p − 2)²) for 1 < p < 3, folds at p = 1 and p = 3. Continuation of the
  line never reaches the circle; deflated continuation must.
- F = (x (x² − p), y (y² + 1 − x²)) (tests/core/deflation_problems.py): pitchforks at p = 0 (trivial → A: x² = p)
  and at p = 1, x = ±1 (A → B±: y² = p − 1). Solutions: 1 for p < 0, 3 for 0 < p < 1, 7 for p > 1.
- x (x − p) = 0: a transcritical point at p = 0 where x = p crosses x = 0.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ellipe

from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.special_points import SpecialKind
from solvers.core.sweep import run_sweep
from tests.core.deflation_problems import isola_problem, nested_pitchforks

ISOLA_P = np.linspace(0.0, 4.0, 21)


@pytest.fixture(scope="module")
def isola() -> object:
    return run_sweep(isola_problem(), ISOLA_P, SolverOptions(), method="deflated")


def test_continuation_alone_never_reaches_the_isola() -> None:
    sweep = run_sweep(isola_problem(), ISOLA_P, SolverOptions())
    assert [c.name for c in sweep.curves] == ["line"]
    for cat in sweep.catalogues:
        assert [b.x[0] for b in cat.branches] == pytest.approx([3.0], abs=1e-9)


def test_the_deflated_sweep_finds_the_circle_at_every_value(isola) -> None:
    assert sorted(c.name for c in isola.curves) == ["circle", "line"]  # the circle once, not once per fold
    circle = next(c for c in isola.curves if c.name == "circle")
    assert circle.message.startswith("found by deflation at p = ")
    for q in circle.points:
        assert q.x[0] ** 2 + (q.p - 2) ** 2 == pytest.approx(1.0, abs=1e-8)
    for p, cat in zip(isola.values, isola.catalogues, strict=True):
        xs = sorted(float(b.x[0]) for b in cat.branches if b.converged)
        if 1 < p < 3 - 1e-9 and abs(p - 1) > 1e-9:
            r = math.sqrt(1 - (p - 2) ** 2)
            assert xs == pytest.approx([-r, r, 3.0], abs=1e-8)
        elif p < 1 - 1e-9 or p > 3 + 1e-9:
            assert xs == pytest.approx([3.0], abs=1e-9)


def test_a_curve_found_by_deflation_says_how_it_ends(isola) -> None:
    """The circle closes on itself (it has no other end), and says so like a curve traced from a start."""
    circle = next(c for c in isola.curves if c.name == "circle")
    assert circle.ends[1] is not None and circle.ends[1].kind == "closed"
    (table,) = [t for t in isola.tables if t.name == "circle"]
    assert "closed" in {e.kind for e in table.ends}


def test_the_isola_folds_are_where_the_circle_turns(isola) -> None:
    folds = sorted(sp.parameter for sp in isola.special_points if sp.kind is SpecialKind.FOLD)
    assert folds == pytest.approx([1.0, 3.0], abs=1e-8)


def test_the_circle_found_next_to_its_fold_is_served_once_round_with_both_folds(isola) -> None:
    """Deflation finds the circle at p = 1, next to its fold (a double root): traced from there once round, its
    table is one round of the scaled circle (an ellipse of semi-axes 1 and 1/4 in (x, p / 4), perimeter
    4 E(15/16)), ends once, closed, and holds both folds as rows, the one at its start included."""
    (table,) = [t for t in isola.tables if t.name == "circle"]
    assert table.rows[-1].arclength == pytest.approx(4 * float(ellipe(15 / 16)), rel=1e-2)
    assert [e.kind for e in table.ends if e.kind != "fold"] == ["closed"]
    folds = {k: sp for k, sp in enumerate(isola.special_points) if sp.kind is SpecialKind.FOLD}
    rows = [r for r in table.rows if r.special in folds]
    assert sorted({r.p for r in rows}) == pytest.approx([1.0, 3.0], abs=1e-8)
    assert len(rows) == 4  # each fold once, as the last row of one branch and the first of the next
    assert table.rows[0].branch == table.rows[-1].branch


@pytest.mark.parametrize(("depth", "curves"), [(0, 1), (1, 2), (2, 4), (3, 4)])
def test_the_diagram_switches_depth_levels_deep(depth: int, curves: int) -> None:
    options = SolverOptions.model_validate({"search": {"depth": depth}})
    sweep = run_sweep(nested_pitchforks(), np.linspace(-1.0, 2.0, 31), options, method="diagram")
    assert sweep.method == "diagram" and len(sweep.curves) == curves  # no branch twice, none looping
    levels = sorted(int(c.message.split("(depth ")[1][0]) for c in sweep.curves if "(depth " in c.message)
    assert levels == [1, 2, 2][: curves - 1]
    bps = sorted(sp.parameter for sp in sweep.special_points if sp.kind is SpecialKind.BIFURCATION)
    # Depth d shows the branch points of the curves of depth < d + 1: p = 0 on the trivial branch, p = 1 on A.
    assert bps == pytest.approx([0.0, 1.0][: min(depth + 1, 2)], abs=1e-9)
    for sp in sweep.special_points:
        assert sp.bifurcation is not None and sp.bifurcation.type == "pitchfork"
    for p, cat in zip(sweep.values, sweep.catalogues, strict=True):
        if abs(p) < 1e-9 or abs(p - 1) < 1e-9:
            continue  # at a branch point the branches meet: Newton's answers there are degenerate
        want = [(0.0, 0.0)]  # the trivial branch
        if depth >= 1 and p > 0:
            want += [(s * math.sqrt(p), 0.0) for s in (-1, 1)]  # A
        if depth >= 2 and p > 1:
            want += [(s * math.sqrt(p), t * math.sqrt(p - 1)) for s in (-1, 1) for t in (-1, 1)]  # B±
        def ordered(pts: list[tuple[float, float]]) -> np.ndarray:
            return np.array(sorted(pts, key=lambda z: (round(z[0], 6), round(z[1], 6))))

        found = ordered([(float(b.x[0]), float(b.x[1])) for b in cat.branches if b.converged])
        assert found.shape == (len(want), 2)
        np.testing.assert_allclose(found, ordered(want), atol=1e-8)


def test_a_transcritical_diagram() -> None:
    problem = Problem(
        residual=lambda x, p: x * (x - p), dim=1, starts=lambda p: {"zero": np.array([0.0])},
        jacobian=lambda x, p: np.array([[2 * x[0] - p]]), kind="gradient",
        label=lambda x, p, s: "zero" if abs(x[0]) < 1e-9 else "diagonal",
    )
    sweep = run_sweep(problem, np.linspace(-1.0, 1.0, 21), SolverOptions.model_validate({"search": {"depth": 1}}),
                      method="diagram")
    assert len(sweep.curves) == 2
    (sp,) = sweep.special_points
    assert sp.bifurcation is not None and sp.bifurcation.type == "transcritical"
    assert sp.parameter == pytest.approx(0.0, abs=1e-10)
    diagonal = next(c for c in sweep.curves if c.name != "zero")
    assert all(q.x[0] == pytest.approx(q.p, abs=1e-9) for q in diagonal.points)


def test_every_branch_of_a_sweep_point_names_its_origin(isola) -> None:
    """A continuation sweep's branches are points of its traced curves; a grid's come from a start or from the
    neighbouring value's solution."""
    for cat in isola.catalogues:
        assert cat.branches
        assert {(b.origin.method, b.origin.start) for b in cat.branches} == {("continuation", None)}  # type: ignore[union-attr]
    grid = run_sweep(isola_problem(), ISOLA_P[:3], SolverOptions(), method="grid")
    methods = [[b.origin.method for b in cat.branches] for cat in grid.catalogues]  # type: ignore[union-attr]
    assert methods[0] == ["start"] and all(m == ["warm"] for m in methods[1:])
