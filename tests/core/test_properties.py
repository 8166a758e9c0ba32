"""Property-based checks of the engine (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from service.jsonsafe import json_safe
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.solve import solve_at

finite = st.floats(min_value=-5, max_value=5, allow_nan=False, allow_infinity=False)


@settings(max_examples=40, deadline=None)
@given(a=st.floats(0.05, 0.9), b=finite, x0=finite, method=st.sampled_from(["picard", "anderson", "newton", "auto"]))
def test_contracting_affine_maps_are_solved_by_every_method(a: float, b: float, x0: float, method: str) -> None:
    # x = a x + b has the fixed point b / (1 - a); every method must find it from anywhere.
    prob = Problem(residual=None, dim=1, starts=lambda p: {}, fixed_point=lambda x, p: a * x + b)
    res = solve_at(prob, 0.0, np.array([x0]), SolverOptions(method=method, mixing=0.9, tol_abs=1e-12, tol_rel=0))
    assert res.converged
    assert abs(res.x[0] - b / (1 - a)) <= 1e-9 * max(1.0, abs(b / (1 - a))) + 1e-11


@settings(max_examples=40, deadline=None)
@given(coeffs=st.lists(finite, min_size=3, max_size=3), x0=finite)
def test_a_converged_result_really_has_a_small_residual(coeffs: list[float], x0: float) -> None:
    c0, c1, c2 = coeffs

    def F(x: np.ndarray, p: float) -> np.ndarray:
        return x**3 + c2 * x**2 + c1 * x + c0

    res = solve_at(Problem(residual=F, dim=1, starts=lambda p: {}), 0.0, np.array([x0]), SolverOptions())
    if res.converged:  # a cubic always has a real root, but any reported success must be honest
        assert abs(F(res.x, 0.0)[0]) <= SolverOptions().tolerance(abs(res.x[0]))
    else:
        assert res.status in {"line_search", "max_iterations", "diverged", "singular"}


@given(st.recursive(st.floats(allow_nan=True, allow_infinity=True) | st.integers() | st.text(max_size=3),
                    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids, max_size=3),
                    max_leaves=10))
def test_json_safe_output_never_carries_non_finite_floats(obj) -> None:
    import json

    json.dumps(json_safe({"v": obj}), allow_nan=False)
