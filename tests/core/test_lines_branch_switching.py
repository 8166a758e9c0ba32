"""Branch switching at simple branch points: normal forms with known coefficients and branches."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from solvers.core.lines import (
    branch_off,
    classify_branch_point,
    find_bifurcations,
    locate_branch_point,
)
from solvers.core.problem import Problem
from tests.core.problems import curie_weiss


def transcritical() -> Problem:
    """x (p − x) = 0: the branches x = 0 and x = p cross at p = 0; F_xx = −2, F_xp = 1, F_pp = 0."""
    return Problem(residual=lambda x, p: x * (p - x), dim=1, stability=lambda x, p: float(2 * x[0] - p), kind="saddle")


def pitchfork(kappa: float) -> Problem:
    """κ x³ − p x = 0 with margin F_x; x = 0 is stable for p < 0 and the branches are κ x² = p.

    κ = +1: they lie on the unstable side (p > 0) — supercritical; κ = −1: on the stable side — subcritical.
    """
    return Problem(residual=lambda x, p: kappa * x**3 - p * x, dim=1,
                   stability=lambda x, p: float(3 * kappa * x[0] ** 2 - p), kind="saddle")


def test_transcritical_point_is_classified_and_both_branches_started() -> None:
    (switch,) = find_bifurcations(transcritical(), np.array([0.0]), -1.0, (-1.0, 1.0))
    bp = switch.point
    assert bp.type == "transcritical"
    assert bp.parameter == pytest.approx(0.0, abs=1e-12)
    v, w = bp.kernel
    assert abs(v[0]) == pytest.approx(1.0) and float(w @ v) == pytest.approx(1.0)
    # With v = ±1 and ⟨w, v⟩ = 1: a = −2, b11 = 1, b20 = 0 whatever the sign of v.
    assert (bp.coefficients.a, bp.coefficients.b11, bp.coefficients.b20) == pytest.approx((-2.0, 1.0, 0.0), abs=1e-7)
    starts = switch.starts
    assert len(starts) == 4
    new = [s for s in starts if s.bifurcating]
    old = [s for s in starts if not s.bifurcating]
    assert sorted(np.sign(s.parameter) for s in new) == [-1, 1]
    assert sorted(np.sign(s.parameter) for s in old) == [-1, 1]
    for s in new:
        assert s.x[0] == pytest.approx(s.parameter, abs=1e-12)  # the branch x = p
        assert abs(s.x[0]) > 1e-3
    for s in old:
        assert s.x[0] == pytest.approx(0.0, abs=1e-12)


def test_transcritical_without_a_known_incoming_branch_starts_all_four_half_branches() -> None:
    problem = transcritical()
    located = locate_branch_point(problem, np.array([0.01]), 0.02)
    assert located is not None
    x, p = located
    assert abs(x[0]) <= 1e-10 and abs(p) <= 1e-10
    bp = classify_branch_point(problem, x, p)
    assert bp is not None and bp.found_on is None
    starts = branch_off(problem, bp)
    on_diagonal = sorted(np.sign(s.parameter) for s in starts if abs(s.x[0] - s.parameter) <= 1e-12)
    on_axis = sorted(np.sign(s.parameter) for s in starts if abs(s.x[0]) <= 1e-12)
    assert on_diagonal == [-1, 1] and on_axis == [-1, 1]


@pytest.mark.parametrize(("kappa", "criticality"), [(1.0, "supercritical"), (-1.0, "subcritical")])
def test_pitchfork_criticality_from_the_normal_form(kappa: float, criticality: str) -> None:
    (switch,) = find_bifurcations(pitchfork(kappa), np.array([0.0]), -1.0, (-1.0, 1.0))
    bp = switch.point
    assert bp.type == "pitchfork" and bp.criticality == criticality
    assert bp.parameter == pytest.approx(0.0, abs=1e-12)
    # F = κ x³ − p x: F_xp = −1, F_xxx = 6κ, so b11 = −1, c = 6κ (v = ±1, ⟨w, v⟩ = 1).
    assert bp.coefficients.b11 == pytest.approx(-1.0, rel=1e-8)
    assert bp.coefficients.c == pytest.approx(6.0 * kappa, rel=1e-6)
    new = [s for s in switch.starts if s.bifurcating]
    assert sorted(np.sign(s.x[0]) for s in new) == [-1, 1]
    for s in new:
        assert s.parameter == pytest.approx(kappa * s.x[0] ** 2, rel=1e-10)  # the branch p = κ x²


def test_a_sweep_problem_is_switched_on_as_it_is() -> None:
    """The engine's Curie–Weiss problem (m = tanh(βm), a gradient problem without a margin hook): pitchfork at
    β = 1, supercritical (the ferromagnets m² ≈ 3(β − 1) exist where the paramagnet is unstable) by the margin the
    engine derives from the action's Hessian; without any way to tell stability, criticality is not guessed."""
    problem = curie_weiss()
    (switch,) = find_bifurcations(problem, np.array([0.0]), 0.5, (0.5, 2.0))
    assert switch.point.type == "pitchfork"
    assert switch.point.parameter == pytest.approx(1.0, abs=1e-10)
    assert switch.point.criticality == "supercritical"
    assert sorted(np.sign(s.x[0]) for s in switch.starts if s.bifurcating) == [-1, 1]
    (blind,) = find_bifurcations(replace(problem, kind="saddle"), np.array([0.0]), 0.5, (0.5, 2.0))
    assert blind.point.parameter == pytest.approx(1.0, abs=1e-10) and blind.point.criticality is None


def test_a_fold_is_not_a_branch_point() -> None:
    fold = Problem(residual=lambda x, p: x**2 - p, dim=1)
    assert classify_branch_point(fold, np.array([0.0]), 0.0) is None
    assert find_bifurcations(fold, np.array([0.5]), 0.25, (-1.0, 1.0)) == ()
