"""The served curves of a sweep, on problems with closed forms: every row a solution, the folds and the
equal-depth point rows of their curves at the closed-form values, the range's ends kept, and the bound on
rows keeping every special point."""

from __future__ import annotations

import math

import numpy as np
import pytest

from solvers.core.curve_tables import curve_tables
from solvers.core.options import SolverOptions
from solvers.core.special_points import SpecialKind
from solvers.core.sweep import run_sweep
from tests.core.problems import curie_weiss, tilted_double_well

OPTIONS = SolverOptions()
FOLD = 2 / (3 * math.sqrt(3))  # x³ − x + λ = 0 turns at λ = ±2/(3√3), x = ∓1/√3


@pytest.fixture(scope="module")
def double_well():
    problem = tilted_double_well()
    return problem, run_sweep(problem, list(np.linspace(-1.0, 1.0, 21)), OPTIONS)


def test_the_s_curve_turns_at_both_folds_and_every_row_is_a_solution(double_well) -> None:
    problem, sweep = double_well
    assert sweep.tables is not None
    (s_curve,) = [t for t in sweep.tables if "barrier" in t.branches]
    rows = s_curve.rows
    for r in rows:
        assert abs(float(problem.F(r.x, r.p)[0])) < 1e-9
        assert -1.0 <= r.p <= 1.0
        # stable exactly where V'' = 3x² − 1 > 0
        curvature = 3 * float(r.x[0]) ** 2 - 1
        assert r.stable == (curvature > 0) or abs(curvature) < 1e-6
    folds = [(i, r) for i, r in enumerate(rows[:-1]) if r.special is not None and rows[i + 1].special == r.special
             and sweep.special_points[r.special].kind is SpecialKind.FOLD]
    assert sorted(round(r.p, 9) for _, r in folds) == [round(-FOLD, 9), round(FOLD, 9)]
    for i, r in folds:
        assert abs(abs(r.x[0]) - 1 / math.sqrt(3)) < 1e-6
        assert {rows[i].branch, rows[i + 1].branch} == {"barrier", "left" if r.x[0] < 0 else "right"}
        assert rows[i].stable != rows[i + 1].stable
    # the ends of the range are rows of the curve, and the arclength never decreases
    assert {rows[0].p, rows[-1].p} == {-1.0, 1.0}
    s = [r.arclength for r in rows]
    assert s == sorted(s)


def test_the_equal_depth_point_is_on_both_stable_curves(double_well) -> None:
    _, sweep = double_well
    (k,) = [k for k, sp in enumerate(sweep.special_points) if sp.kind is SpecialKind.FIRST_ORDER]
    at = [r for t in sweep.tables for r in t.rows if r.special == k]
    assert sorted(round(float(r.x[0]), 9) for r in at) == [-1.0, 1.0]  # x = ±1 at λ = 0
    assert all(r.p == pytest.approx(0.0, abs=1e-10) and r.stable for r in at)
    assert at[0].free_entropy == pytest.approx(at[1].free_entropy, abs=1e-12)


def test_the_bound_keeps_every_special_point_and_both_ends(double_well) -> None:
    problem, sweep = double_well
    small = curve_tables(problem, sweep.curves, sweep.special_points, -1.0, 1.0, OPTIONS,
                         catalogues=sweep.catalogues, max_points=8)
    full = {t.name: t for t in sweep.tables}
    for t in small:
        specials = [r.special for r in full[t.name].rows if r.special is not None]
        assert [r.special for r in t.rows if r.special is not None] == specials
        assert len(t.rows) <= 8 + len(specials)
        assert (t.rows[0].p, t.rows[-1].p) == (full[t.name].rows[0].p, full[t.name].rows[-1].p)


def test_a_pitchfork_is_a_row_of_both_curves_through_it() -> None:
    problem = curie_weiss()
    sweep = run_sweep(problem, list(np.linspace(0.5, 1.5, 11)), OPTIONS)
    (k,) = [k for k, sp in enumerate(sweep.special_points) if sp.kind is SpecialKind.BIFURCATION]
    assert sweep.special_points[k].parameter == pytest.approx(1.0, abs=1e-9)
    curves = [t for t in sweep.tables if any(r.special == k for r in t.rows)]
    assert {t.name for t in curves} >= {"paramagnet"} and len(curves) == 2
    for t in curves:
        for r in t.rows:  # m = tanh(βm) on every row
            assert abs(r.x[0] - math.tanh(r.p * r.x[0])) < 1e-9


def test_a_grid_sweep_has_no_tables() -> None:
    sweep = run_sweep(tilted_double_well(), [-0.5, 0.0, 0.5], OPTIONS, method="grid")
    assert sweep.tables is None
