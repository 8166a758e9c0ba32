"""Continuation and transition location on problems with known answers."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from solvers.core.continuation import ProblemSystem
from solvers.core.options import SolverOptions
from solvers.core.sweep import run_sweep
from tests.core.problems import curie_weiss, tilted_double_well

FOLD = 2 / (3 * np.sqrt(3))


def _kinds(result, kind):
    return [t for t in result.special_points if t.transition == kind]


@pytest.mark.parametrize("lambda0", [0.0, 0.1, -0.23])
def test_double_well_folds_and_maxwell_point(lambda0: float) -> None:
    res = run_sweep(tilted_double_well(lambda0), np.linspace(-1, 1, 41), SolverOptions())
    folds = sorted(t.parameter for t in _kinds(res, "spinodal"))
    expected = sorted(f for f in (lambda0 - FOLD, lambda0 + FOLD) if -1 <= f <= 1)
    assert folds == pytest.approx(expected, abs=1e-6)
    (maxwell,) = _kinds(res, "first_order")
    assert maxwell.parameter == pytest.approx(lambda0, abs=1e-8)
    assert maxwell.branches == ("left", "right")
    # Equilibrium switches at the Maxwell point, not at a fold.
    for v, cat in zip(res.values, res.catalogues, strict=True):
        if abs(v - lambda0) > 1e-3:
            assert cat.equilibrium == ("right" if v < lambda0 else "left")


def test_every_branch_is_reported_in_the_bistable_window() -> None:
    res = run_sweep(tilted_double_well(0.0), np.linspace(-1, 1, 21), SolverOptions())
    for v, cat in zip(res.values, res.catalogues, strict=True):
        if abs(v) >= FOLD:
            assert len(cat.branches) == 1
            continue
        assert sorted(b.name for b in cat.branches) == ["barrier", "left", "right"]
        assert {b.name: b.stable for b in cat.branches} == {"barrier": False, "left": True, "right": True}


def test_grid_method_agrees_on_the_maxwell_point() -> None:
    res = run_sweep(tilted_double_well(0.1), np.linspace(-1, 1, 41), SolverOptions(), method="grid")
    (maxwell,) = _kinds(res, "first_order")
    assert maxwell.parameter == pytest.approx(0.1, rel=1e-8)
    # Grid spinodals are only bracketed by the grid.
    for t in _kinds(res, "spinodal"):
        assert not t.refined
        assert min(abs(t.parameter - (0.1 + s * FOLD)) for s in (-1, 1)) <= t.uncertainty + 1e-12


def test_pitchfork_is_a_stability_loss_with_no_first_order_point() -> None:
    res = run_sweep(curie_weiss(), np.linspace(0.5, 2.0, 31), SolverOptions())
    assert _kinds(res, "first_order") == []
    # One special point: the paramagnet loses stability where the ferromagnet branches off.
    loss = _kinds(res, "spinodal")
    assert len(loss) == 1 and loss[0].parameter == pytest.approx(1.0, abs=1e-8)
    assert loss[0].branches == ("paramagnet", "ferromagnet")
    for v, cat in zip(res.values, res.catalogues, strict=True):
        eq = cat.get(cat.equilibrium)
        assert eq is not None
        if v < 1:
            assert eq.name == "paramagnet" and abs(eq.x[0]) < 1e-9
        elif v > 1:
            assert eq.name == "ferromagnet"
            para = cat.get("paramagnet")
            assert para is not None and para.stable is False
            if v < 1.1:
                assert eq.x[0] == pytest.approx(np.sqrt(3 * (v - 1)), rel=3 * (v - 1))


def test_continuation_steps_through_the_fold_of_an_s_curve() -> None:
    res = run_sweep(tilted_double_well(0.0), np.linspace(-1, 1, 5), SolverOptions())
    assert len(res.curves) == 1
    curve = res.curves[0]
    ps = np.array([q.p for q in curve.points])
    # One connected curve covers all three branches: p turns around exactly twice.
    turns = np.sum(np.diff(np.sign(np.diff(ps))) != 0)
    assert turns == 2
    assert len(curve.folds) == 2


def test_bordered_matrix_differentiates_in_p_from_the_iterates_residual() -> None:
    """At the corrector's iterate F(x, p) is known: F_p costs one new evaluation (forward difference, exact to
    O(h) against the closed form F_p = 1), and at a point whose residual is not known, two (central)."""
    calls: list[float] = []

    def residual(x: np.ndarray, lam: float) -> np.ndarray:
        calls.append(lam)
        return x**3 - x + lam

    system = ProblemSystem(replace(tilted_double_well(0.0), residual=residual), -1.0, 1.0)
    z = np.array([0.3, -0.2])
    f = system.residual(z)
    assert f == pytest.approx(0.3**3 - 0.3 - 0.2)
    calls.clear()
    A = system.jacobian(z)
    assert len(calls) == 1  # F(x, p + h) only; the analytic F_x costs none
    assert A[0, 1] == pytest.approx(1.0, rel=1e-9)  # dF/dλ
    assert A[0, 0] == pytest.approx(3 * 0.3**2 - 1)
    # in the iterator's scaled coordinates the column is dF/dt = dF/dλ · width, width = 2
    assert (A * system.scale[None, :])[0, 1] == pytest.approx(2.0, rel=1e-9)
    calls.clear()
    system.jacobian(np.array([0.5, -0.2]))  # this point's residual was never evaluated
    assert len(calls) == 2
    # a cached residual is served only for its own (x, p)
    assert system.residual(np.array([0.5, 0.1])) == pytest.approx(0.125 - 0.5 + 0.1)
