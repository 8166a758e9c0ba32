"""Fold and first-order lines of x³ − a x + λ = 0 against their closed forms and a brute-force root count."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.core.lines import LineOptions, trace_boundaries, trace_fold_line
from tests.core.line_problems import cusp

BOX = ((-0.5, 1.0), (-1.0, 1.0))


@pytest.fixture(scope="module")
def result():
    return trace_boundaries(cusp(), *BOX)


def _fold(a: np.ndarray) -> np.ndarray:
    return 2 * (np.clip(a, 0, None) / 3) ** 1.5


def real_root_count(a: float, lam: float) -> int:
    """Real roots of x³ − a x + λ from the companion matrix (independent of the continuation)."""
    roots = np.roots([1.0, 0.0, -a, lam])
    return int(np.sum(np.abs(roots.imag) <= 1e-9 * (1 + np.abs(roots.real))))


def test_two_folds_and_one_first_order_line(result) -> None:
    assert result.reason == ""
    assert sorted(line.kind for line in result.lines) == ["first_order", "fold", "fold"]


def test_fold_lines_follow_the_closed_form(result) -> None:
    signs = []
    for line in result.of_kind("fold"):
        pts = line.array()
        x = np.array([s[0, 0] for s in line.states])
        sign = np.sign(np.median(pts[:, 1]))
        signs.append(sign)
        assert np.all(pts[:, 0] >= -1e-10)
        assert np.max(np.abs(pts[:, 1] - sign * _fold(pts[:, 0]))) <= 1e-8
        assert np.max(np.abs(3 * x**2 - pts[:, 0])) <= 1e-8  # F_x = 0 at the fold state
        assert sorted(e.kind for e in line.ends) == ["critical", "domain"]
        domain = next(e for e in line.ends if e.kind == "domain")
        assert domain.point[0] == pytest.approx(1.0, abs=1e-12)
        assert domain.point[1] == pytest.approx(sign * _fold(np.array(1.0)), abs=1e-8)
    assert sorted(signs) == [-1, 1]


def test_the_cusp_is_the_critical_point_of_all_three_lines(result) -> None:
    (critical,) = result.critical_points
    assert np.allclose(critical.point, (0.0, 0.0), atol=1e-8)
    assert critical.precision == 0.0
    assert sorted(critical.lines) == [0, 1, 2]
    for line in result.lines:
        end = next(e for e in line.ends if e.kind == "critical")
        assert np.allclose(end.point, (0.0, 0.0), atol=1e-8)


def test_first_order_line_is_lambda_zero_between_the_two_wells(result) -> None:
    (line,) = result.of_kind("first_order")
    pts = line.array()
    assert np.max(np.abs(pts[:, 1])) <= 1e-10
    for (a, _), states in zip(line.coordinates, line.states, strict=True):
        # The wells are conditioned by F_x = 2a: a residual of 1e-10 is a state error 5e-11 / a.
        if a > 0.02:
            assert sorted(states[:, 0]) == pytest.approx([-np.sqrt(a), np.sqrt(a)], abs=1e-8)
    assert sorted(e.kind for e in line.ends) == ["critical", "domain"]
    assert set(line.branches) == {"left", "right"}


def test_fold_lines_agree_with_a_grid_of_root_counts(result) -> None:
    """At several fold points the number of real roots changes within one grid step of the line."""
    h = 1e-4
    for line in result.of_kind("fold"):
        pts = line.array()
        for a, lam in pts[(pts[:, 0] > 0.05)][:: max(1, len(pts) // 6)]:
            grid = lam + h * np.arange(-20, 21)
            counts = np.array([real_root_count(a, g) for g in grid])
            change = np.nonzero(np.diff(counts))[0]
            assert len(change) == 1
            k = change[0]
            assert grid[k] - 1e-12 <= lam <= grid[k + 1] + 1e-12


def test_first_order_line_agrees_with_a_brute_force_global_minimum(result) -> None:
    """On a fine x grid, the global minimiser of V changes sign across λ = 0 at the line's a."""
    (line,) = result.of_kind("first_order")
    xs = np.linspace(-2, 2, 200_001)
    h = 1e-4
    for a, lam in line.array()[3::8]:
        if a < 0.1:
            continue
        below = xs[np.argmin(xs**4 / 4 - a * xs**2 / 2 + (lam - h) * xs)]
        above = xs[np.argmin(xs**4 / 4 - a * xs**2 / 2 + (lam + h) * xs)]
        assert below > 0 > above


def test_a_fold_line_from_an_unrefined_seed() -> None:
    """A seed off the fold converges onto it at fixed a; the line then runs to the cusp and the box."""
    a0 = 0.6
    x0 = np.sqrt(a0 / 3)
    line = trace_fold_line(cusp(), np.array([x0 + 0.01]), [a0, 2 * x0**3 + 0.01], *BOX, LineOptions())
    pts = line.array()
    assert np.max(np.abs(pts[:, 1] - _fold(pts[:, 0]))) <= 1e-8
    assert {e.kind for e in line.ends} == {"critical", "domain"}


def test_no_transition_in_the_box_gives_an_empty_result_with_a_reason() -> None:
    res = trace_boundaries(cusp(), (-1.0, -0.5), (-1.0, 1.0))
    assert res.lines == () and res.critical_points == ()
    assert "no special point" in res.reason and "lambda" in res.reason
