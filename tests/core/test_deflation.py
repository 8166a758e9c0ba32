"""Deflation finds every solution of systems whose solution sets are known in closed form (or by an independent
method), from one start, and the catalogue says how each was found.

References: T_n has the n roots cos((2k − 1)π / 2n); z^n = 1 has the n roots e^{2πik/n}; the isola
(x² + (p − 2)² − 1)(x − 3) = 0 at p = 2 has x ∈ {−1, 1, 3}; Carrier's problem is counted by shooting
(Runge–Kutta on the ODE itself, no Newton, no finite-difference grid).
"""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from solvers.core.catalogue import solve_catalogue
from solvers.core.deflation import Deflation
from solvers.core.options import SolverOptions
from tests.core.deflation_problems import (
    carrier_problem,
    carrier_shooting_count,
    chebyshev_problem,
    chebyshev_roots,
    isola_problem,
    unit_roots_problem,
)


def deflation(**search: object) -> SolverOptions:
    return SolverOptions.model_validate({"search": {"method": "deflation", **search}})


@pytest.mark.parametrize("n", [3, 5, 8])
def test_every_chebyshev_root_is_found_from_one_start(n: int) -> None:
    cat = solve_catalogue(chebyshev_problem(n), 0.0, deflation())
    found = np.sort([b.x[0] for b in cat.branches])
    assert found.size == n
    assert found == pytest.approx(chebyshev_roots(n), abs=1e-12)
    assert cat.search is not None and cat.search.method == "deflated"
    assert cat.search.found == n - 1 and cat.search.fruitless >= cat.search.budget == 8
    assert [b.origin.method for b in cat.branches].count("deflation") == n - 1  # type: ignore[union-attr]


@pytest.mark.parametrize("n", [12, 16])
def test_clustered_chebyshev_roots_need_the_first_power(n: int) -> None:
    """Near ±1 the roots of T_n cluster; the operator 1/|x − r| + 0.1 separates them where the default
    1/|x − r|² + 1 leaves some out (both are options)."""
    cat = solve_catalogue(chebyshev_problem(n), 0.0, deflation(power=1.0, shift=0.1))
    assert np.sort([b.x[0] for b in cat.branches]) == pytest.approx(chebyshev_roots(n), abs=1e-12)


@pytest.mark.parametrize("n", [3, 5, 8])
def test_every_root_of_unity_is_found_in_the_plane(n: int) -> None:
    cat = solve_catalogue(unit_roots_problem(n), 0.0, deflation())
    k = [np.arctan2(b.x[1], b.x[0]) / (2 * np.pi / n) for b in cat.branches]
    assert sorted(round(float(v)) % n for v in k) == list(range(n))
    assert k == pytest.approx(np.round(k), abs=1e-9)
    for b in cat.branches:
        assert np.hypot(*b.x) == pytest.approx(1.0, abs=1e-9)  # the residual tolerance


def test_the_isola_is_found_from_the_line() -> None:
    starts_only = solve_catalogue(isola_problem(), 2.0, SolverOptions())
    assert [b.x[0] for b in starts_only.branches] == [3.0]
    assert starts_only.search is not None and starts_only.search.method == "starts-only"
    cat = solve_catalogue(isola_problem(), 2.0, deflation())
    assert np.sort([b.x[0] for b in cat.branches]) == pytest.approx([-1.0, 1.0, 3.0], abs=1e-9)
    origin = {round(float(b.x[0])): b.origin for b in cat.branches}
    assert origin[3].method == "start" and origin[3].start == "line"  # type: ignore[union-attr]
    assert origin[1].method == origin[-1].method == "deflation"  # type: ignore[union-attr]


@pytest.mark.slow
def test_carrier_solutions_match_the_shooting_count() -> None:
    eps = 0.5
    expected = carrier_shooting_count(eps, np.linspace(-20.0, 20.0, 2001))
    assert expected == 2
    cat = solve_catalogue(carrier_problem(eps, 201), 0.0, deflation(budget=4))
    assert len(cat.branches) == expected and all(b.converged for b in cat.branches)
    # distinct functions, not one solution found twice
    a, b = (br.x for br in cat.branches)
    assert np.sqrt(np.mean((a - b) ** 2)) > 0.1


def test_the_operator_and_its_jacobian() -> None:
    """M(x) = ∏(1/‖x − r‖^p + σ) by hand, and the deflated Jacobian against central differences."""
    r1, r2 = np.array([1.0, 0.0]), np.array([0.0, 2.0])
    op = Deflation((r1, r2), power=2.0, shift=0.5)
    x = np.array([0.3, 0.7])
    rms2 = [np.mean((x - r) ** 2) for r in (r1, r2)]
    assert op.value(x) == pytest.approx(np.prod([1 / d + 0.5 for d in rms2]), rel=1e-14)

    def F(y: np.ndarray) -> np.ndarray:
        return np.array([y[0] ** 2 - y[1], np.sin(y[0] * y[1])])

    def J(y: np.ndarray) -> np.ndarray:
        return np.array([[2 * y[0], -1.0], [y[1] * np.cos(y[0] * y[1]), y[0] * np.cos(y[0] * y[1])]])

    G, JG = op.residual(F), op.jacobian(F, J)
    h = 1e-6
    fd = np.column_stack([(G(x + h * e) - G(x - h * e)) / (2 * h) for e in np.eye(2)])
    assert JG(x) == pytest.approx(fd, rel=1e-7, abs=1e-9)


def test_starts_restrict_the_named_starts() -> None:
    problem = chebyshev_problem(3, start=0.9)
    cat = solve_catalogue(problem, 0.0, SolverOptions.model_validate({"search": {"starts": ["start"]}}))
    assert len(cat.branches) == 1 and cat.search.starts == ("start",)  # type: ignore[union-attr]
    none = solve_catalogue(problem, 0.0, SolverOptions.model_validate({"search": {"starts": ["elsewhere"]}}))
    assert none.branches == () and none.search.starts == ()  # type: ignore[union-attr]
    assert none.search.unknown_starts == ("elsewhere",)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("search", "field"),
    [({"method": "random"}, "method"), ({"budget": 0}, "budget"), ({"shift": 0.0}, "shift"),
     ({"power": 0.5}, "power"), ({"starts": []}, "starts"), ({"budgets": 3}, "budgets")],
)
def test_bad_search_options_name_the_field(search: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        SolverOptions.model_validate({"search": search})
    assert info.value.errors()[0]["loc"][:2] == ("search", field)
