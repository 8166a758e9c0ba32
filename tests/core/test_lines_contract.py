"""Contracts of the line tracers: validated options, immutable results, failures as data, errors as errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from pydantic import ValidationError

from solvers.core.lines import LineOptions, trace_boundaries, trace_fold_line
from solvers.core.problem import Problem
from solvers.core.special_points import SpecialKind
from tests.core.line_problems import cusp, event_toy


def test_options_reject_unknown_keys_and_disordered_steps() -> None:
    with pytest.raises(ValidationError):
        LineOptions(tolerence=1e-8)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        LineOptions(ds=0.1, ds_max=0.05)
    with pytest.raises(ValidationError):
        LineOptions(seeds="3")  # type: ignore[arg-type]
    opts = LineOptions(tolerance=1e-9)
    with pytest.raises(ValidationError):
        opts.tolerance = 1e-3  # type: ignore[misc]


def test_results_are_immutable() -> None:
    res = trace_boundaries(cusp(), (0.2, 1.0), (-1.0, 1.0))
    line = res.lines[0]
    with pytest.raises(AttributeError):
        line.kind = "event"  # type: ignore[misc]
    with pytest.raises(ValueError):
        line.states[0][0, 0] = 1.0
    assert isinstance(line.coordinates, tuple) and isinstance(line.coordinates[0], tuple)


def test_a_seed_where_no_fold_exists_is_reported_lost_not_raised() -> None:
    # At a = −0.5, F_x = 3x² + 0.5 > 0: no fold at this a for the seed to converge to.
    line = trace_fold_line(cusp(), np.array([0.3]), [-0.5, 0.1], (-1.0, 1.0), (-10.0, 10.0))
    assert [e.kind for e in line.ends] == ["lost", "lost"]
    assert "does not converge" in line.message


def test_a_residual_of_the_wrong_size_is_a_programming_error() -> None:
    bad = Problem(residual=lambda x, lam: np.zeros(2), dim=1, starts=lambda lam: {"a": np.zeros(1)},
                  parameters=("lambda1", "lambda2"))
    with pytest.raises(ValueError, match="dim = 1"):
        trace_boundaries(bad, (0.0, 1.0), (0.0, 1.0))


def test_the_box_must_be_finite() -> None:
    with pytest.raises(ValueError, match="finite"):
        trace_boundaries(cusp(), (0.0, np.inf), (0.0, 1.0))


def test_the_problem_bounds_cut_the_box() -> None:
    bounded = dataclasses.replace(cusp(), bounds=((0.0, 0.5), (-1.0, 1.0)))
    res = trace_boundaries(bounded, (-0.5, 1.0), (-1.0, 1.0))
    assert res.lines
    for line in res.lines:
        assert line.array()[:, 0].max() <= 0.5 + 1e-12


def test_a_line_that_cannot_be_seeded_is_reported_and_the_job_goes_on() -> None:
    """A residual defined only on the scanned λ1 (NaN elsewhere, as a spec field that takes integers only): the
    special points are found, the lines cannot be continued from them, and the result says so instead of raising."""
    base = cusp()

    def F(x: np.ndarray, lam: np.ndarray) -> np.ndarray:
        return base.F(x, lam) if lam[0] == 0.5 else np.full(1, np.nan)

    only_there = dataclasses.replace(base, residual=F)
    res = trace_boundaries(only_there, (0.0, 1.0), (-1.0, 1.0), LineOptions(seeds=1))
    assert res.lines == ()
    assert "could not be traced" in res.reason and "a = 0.5" in res.reason
    # each crossing the row saw is named, with the scan that saw it: the two folds λ = ±2 (a/3)^(3/2) and the
    # first-order point λ = 0
    assert all(u.point[0] == 0.5 and u.scan == "a = 0.5" for u in res.unexplained)
    folds = sorted(u.point[1] for u in res.unexplained if u.kind == SpecialKind.FOLD)
    assert np.allclose(folds, [-2 * (0.5 / 3) ** 1.5, 2 * (0.5 / 3) ** 1.5], atol=1e-8)
    assert [u.point[1] for u in res.unexplained if u.kind == SpecialKind.FIRST_ORDER] == pytest.approx([0.0], abs=1e-8)
    assert sum("lies on no traced line" in w for w in res.warnings) == len(res.unexplained)
    # the edges λ = ±1 could not be scanned at all (the residual is NaN along them): the result says so too
    assert any("the scan at lambda = -1 (edge) failed" in w for w in res.warnings)


def test_restrict_and_swapped_evaluate_the_problem_at_the_right_point() -> None:
    """Every hook of ``swapped().restrict(λ2)`` at p is the problem's own at λ = (p, λ2); of ``restrict(λ1)`` at p,
    at λ = (λ1, p)."""
    base = dataclasses.replace(event_toy(), free_entropy=lambda x, lam: float(x[0] * lam[0] - lam[1]),
                               bounds=((-1.0, 2.0), (0.0, 5.0)), parameters=("a", "b"))
    x = np.array([0.7])
    along_a = base.swapped().restrict(3.0)
    along_b = base.restrict(0.25)
    assert along_a.parameters == ("a",) and along_a.bounds == ((-1.0, 2.0),)
    assert along_b.parameters == ("b",) and along_b.bounds == ((0.0, 5.0),)
    for one, lam in ((along_a, np.array([0.5, 3.0])), (along_b, np.array([0.25, 0.5]))):
        assert one.F(x, 0.5) == pytest.approx(x**3 + x - lam[1])
        assert one.free_entropy(x, 0.5) == pytest.approx(0.7 * lam[0] - lam[1])  # type: ignore[misc]
        assert one.indicator("x_equals_lambda1")(x, 0.5) == pytest.approx(0.7 - lam[0])
        assert set(one.starts(0.5)) == {"root"}


def test_a_problem_has_one_or_two_parameters_each_with_ordered_bounds() -> None:
    with pytest.raises(ValueError, match="one or two"):
        Problem(residual=lambda x, p: x, dim=1, parameters=("a", "b", "c"))
    with pytest.raises(ValueError, match="one bound"):
        Problem(residual=lambda x, p: x, dim=1, parameters=("a", "b"), bounds=((0.0, 1.0),))
    with pytest.raises(ValueError, match="one bound"):
        Problem(residual=lambda x, p: x, dim=1, bounds=((1.0, 0.0),))
