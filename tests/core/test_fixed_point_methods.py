"""Picard, Anderson and Newton on problems with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.core.fixed_point import iterate
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.solve import solve_at
from tests.core.problems import contraction, curie_weiss


@pytest.mark.parametrize("method", ["picard", "anderson", "newton", "auto"])
def test_methods_agree_on_the_fixed_point(method: str) -> None:
    prob = contraction()
    ref = solve_at(prob, 0.0, np.zeros(prob.dim), SolverOptions(method="newton", tol_abs=1e-13, tol_rel=0))
    res = solve_at(prob, 0.0, np.zeros(prob.dim), SolverOptions(method=method, mixing=0.7, tol_abs=1e-12, tol_rel=0))
    assert res.converged, res
    # The residual is independent of how the point was reached.
    assert np.max(np.abs(prob.F(res.x, 0.0))) <= 1e-11
    np.testing.assert_allclose(res.x, ref.x, atol=1e-10)


def test_anderson_needs_fewer_iterations_than_picard() -> None:
    prob = contraction(dim=6, seed=3)
    opts = SolverOptions(mixing=0.3, tol_abs=1e-12)
    picard = solve_at(prob, 0.0, np.zeros(6), opts.model_copy(update={"method": "picard"}))
    anderson = solve_at(prob, 0.0, np.zeros(6), opts.model_copy(update={"method": "anderson"}))
    assert picard.converged and anderson.converged
    assert anderson.iterations < picard.iterations / 2


def test_curie_weiss_ferromagnet_matches_expansion_near_the_critical_point() -> None:
    prob = curie_weiss()
    for beta in (1.001, 1.01):
        res = solve_at(prob, beta, np.array([0.5]), SolverOptions(method="newton"))
        assert res.converged
        m = abs(res.x[0])
        # m = tanh(beta m) => m^2 = 3 (beta - 1) / beta^3 + O((beta - 1)^2)
        assert m == pytest.approx(np.sqrt(3 * (beta - 1)), rel=3 * (beta - 1) + 1e-6)
        assert m == pytest.approx(np.tanh(beta * m), abs=1e-10)


def test_convergence_is_judged_on_the_residual_not_the_step() -> None:
    # With tiny mixing the step is ~1e-4 of the residual: a step criterion would stop at once.
    prob = contraction()
    res = iterate(lambda x: prob.fixed_point(x, 0.0), np.zeros(prob.dim),
                  SolverOptions(mixing=1e-4, max_iterations=50, tol_abs=1e-6))
    assert not res.converged
    assert res.status == "max_iterations"
    assert res.residual > 1e-3


def test_nan_is_reported_not_raised() -> None:
    prob = Problem(residual=None, dim=1, starts=lambda p: {"s": np.array([1.0])},
                   fixed_point=lambda x, p: np.sqrt(x - 2.0))
    for method in ("picard", "anderson", "newton", "auto"):
        with np.errstate(invalid="ignore"):
            res = solve_at(prob, 0.0, np.array([1.0]), SolverOptions(method=method))
        assert not res.converged
        assert res.status in {"diverged", "line_search", "max_iterations"}


def test_anderson_restarts_and_still_converges_on_a_stiff_map() -> None:
    # A map with a strongly varying slope: secant history goes stale; restart keeps it honest.
    def G(x: np.ndarray) -> np.ndarray:
        return np.array([np.cos(3 * x[0]) * 0.4 + 0.2 * x[1], 0.5 * np.sin(x[0]) - 0.3 * x[1] ** 3])

    res = iterate(G, np.array([2.0, -1.0]), SolverOptions(mixing=0.8, tol_abs=1e-12), anderson=True)
    assert res.converged
    np.testing.assert_allclose(G(res.x), res.x, atol=1e-11)
