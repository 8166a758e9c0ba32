"""The typed results: statuses by kind, complete catalogues, errors that are bugs propagate."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from solvers.core.catalogue import solve_catalogue
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.solve import solve_at
from solvers.core.status import Status
from tests.core.problems import curie_weiss


def slow_and_fast() -> Problem:
    """x = x + 1e-7 (1 - x): from x = 1 solved at once, from x = 0 it would take ~1e8 iterations."""
    return Problem(
        residual=None,
        dim=1,
        starts=lambda p: {"at_the_root": np.array([1.0]), "far_away": np.array([0.0])},
        fixed_point=lambda x, p: x + 1e-7 * (1.0 - x),
        kind="saddle",
        stability=lambda x, p: 1.0,
    )


def test_a_catalogue_with_a_start_cut_short_is_incomplete_and_not_cacheable() -> None:
    opts = SolverOptions(method="picard", mixing=1.0, max_iterations=10**6, time_limit=0.2)
    cat = solve_catalogue(slow_and_fast(), 0.0, opts)
    # One start converged: there is an equilibrium, but the search did not finish.
    assert cat.equilibrium == "at_the_root"
    assert {a.start: a.status for a in cat.attempts}["far_away"] is Status.TIME_LIMIT
    assert not cat.complete and not cat.cacheable and not cat.converged
    assert cat.status is Status.TIME_LIMIT and "may be missing branches" in cat.message


def test_a_complete_catalogue_is_cacheable() -> None:
    cat = solve_catalogue(curie_weiss(), 1.5, SolverOptions())
    assert cat.complete and cat.cacheable and cat.converged
    assert all(a.status is Status.CONVERGED for a in cat.attempts)


def test_results_are_frozen_and_their_states_read_only() -> None:
    res = solve_at(curie_weiss(), 1.5, np.array([0.5]), SolverOptions())
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.status = Status.DIVERGED  # type: ignore[misc]
    with pytest.raises(ValueError):
        res.x[0] = 0.0


def test_every_status_has_a_message_and_only_interruptions_are_uncacheable() -> None:
    for s in Status:
        assert s.message and s.message.endswith(".")
    assert {s for s in Status if s.interrupted} == {Status.TIME_LIMIT, Status.NUMERICAL_ERROR}


def _raising(exc: BaseException) -> Problem:
    def residual(x: np.ndarray, p: float) -> np.ndarray:
        if abs(x[0]) < 0.5:
            raise exc
        return x - 1.0

    return Problem(residual=residual, dim=1, starts=lambda p: {"s": np.array([0.0])})


@pytest.mark.parametrize("exc", [np.linalg.LinAlgError("singular"), FloatingPointError("overflow"),
                                 ZeroDivisionError("float division"), ValueError("math domain error")])
def test_numerical_failures_become_a_status(exc: BaseException) -> None:
    res = solve_at(_raising(exc), 0.0, np.array([0.0]), SolverOptions())
    assert not res.converged and res.status is Status.NUMERICAL_ERROR
    assert type(exc).__name__ in res.message


@pytest.mark.parametrize("exc", [KeyError("missing"), TypeError("bad call"), ValueError("shapes do not match"),
                                 AttributeError("no such field")])
def test_programming_errors_propagate(exc: BaseException) -> None:
    with pytest.raises(type(exc)):
        solve_at(_raising(exc), 0.0, np.array([0.0]), SolverOptions())
    with pytest.raises(type(exc)):
        solve_catalogue(_raising(exc), 0.0, SolverOptions())
