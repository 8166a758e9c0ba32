"""How a traced branch ends (a fold, a domain boundary, a solver failure), on problems whose answer is known in
closed form, and how the results JSON serves it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from service.serialize import branch_end_json, curves_json
from solvers.core.curve import End
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.sweep import run_sweep
from tests.core.deflation_problems import isola_problem


def fold_at_zero() -> Problem:
    """x² + p = 0: the branches x = ±√(−p) meet at the fold p = 0 and no solution exists for p > 0.
    It is the gradient of S = x³/3 + p x, so x > 0 is the stable branch."""
    return Problem(
        residual=lambda x, p: x**2 + p,
        dim=1,
        starts=lambda p: {"upper": np.array([1.0]), "lower": np.array([-1.0])},
        jacobian=lambda x, p: np.array([[2 * x[0]]]),
        kind="gradient",
        label=lambda x, p, start: "upper" if x[0] > 0 else "lower",
    )


def domain_ends_at_one() -> Problem:
    """x = (1 − p)^{3/2}: a smooth branch whose equation has no meaning for p > 1, where 1 − p < 0."""

    def residual(x: np.ndarray, p: float) -> np.ndarray:
        return np.array([x[0] - math.sqrt(1.0 - p) ** 3])  # math.sqrt: a math domain error past p = 1

    return Problem(
        residual=residual,
        dim=1,
        starts=lambda p: {"only": np.array([0.5])},
        jacobian=lambda x, p: np.array([[1.0]]),
        domain=lambda x, p: "1 - p" if p > 1 else None,
    )


def no_root_past_half() -> Problem:
    """x³ = 1 for p < ½; x² + 1 = 0 for p ≥ ½, which has no real root: |F| ≥ 1 there, everywhere finite, so the
    branch x = 1 ends at p = ½ by a solver failure, not at a fold or a domain boundary."""

    def residual(x: np.ndarray, p: float) -> np.ndarray:
        return x**3 - 1 if p < 0.5 else x**2 + 1

    return Problem(residual=residual, dim=1, starts=lambda p: {"only": np.array([1.0])})


def _ends(problem: Problem, lo: float, hi: float) -> list:
    sweep = run_sweep(problem, np.linspace(lo, hi, 21), SolverOptions())
    assert sweep.tables is not None
    return [e for t in sweep.tables for e in t.ends], sweep


def test_a_branch_that_folds_names_the_fold_and_its_partner() -> None:
    ends, sweep = _ends(fold_at_zero(), -1.0, 0.5)
    folds = {(e.branch, e.partner): e.parameter for e in ends if e.kind == "fold"}
    assert set(folds) == {("upper", "lower"), ("lower", "upper")}
    for p in folds.values():
        assert p == pytest.approx(0.0, abs=1e-8)
    # the partner is traced through the fold by continuation: one curve holds both branches
    (table,) = [t for t in sweep.tables if set(t.branches) == {"upper", "lower"}]
    xs = [r.x[0] for r in table.rows]
    assert min(xs) < -0.9 and max(xs) > 0.9  # both branches back to p = −1, where x = ±1
    assert [e.kind for e in ends] == ["fold", "fold"]  # nothing else ends: the rest leaves the range


def test_a_branch_that_leaves_the_domain_names_the_quantity_and_where() -> None:
    ends, _ = _ends(domain_ends_at_one(), 0.0, 1.5)
    (end,) = ends
    assert end.kind == "domain"
    assert end.quantity == "1 - p"
    assert end.parameter == pytest.approx(1.0, abs=1e-4)
    assert "math domain error" in end.detail


def test_a_branch_whose_corrector_fails_reports_the_method_and_last_residual() -> None:
    ends, _ = _ends(no_root_past_half(), 0.0, 1.0)
    (end,) = ends
    assert end.kind == "solver"
    assert end.parameter == pytest.approx(0.5, abs=1e-4)
    assert "Newton" in end.method
    # the corrector's last residual: not converged (its iterates may step back below p = ½, where x³ = 1 has a root,
    # so the residual need not be ≥ 1, but the hyperplane constraint keeps the solve from reaching it)
    assert np.isfinite(end.residual) and end.residual > SolverOptions().tolerance(1.0)


def test_the_ends_are_served_with_the_curves() -> None:
    _, sweep = _ends(domain_ends_at_one(), 0.0, 1.5)
    (curve,) = curves_json(sweep)
    (end,) = curve["ends"]
    assert end["kind"] == "domain" and end["quantity"] == "1 - p" and end["branch"] == "only"
    _, sweep = _ends(no_root_past_half(), 0.0, 1.0)
    (end,) = curves_json(sweep)[0]["ends"]
    assert set(end) == {"branch", "kind", "parameter", "method", "residual", "detail"}


def test_a_closed_curve_and_the_step_cap_keep_their_contract_names() -> None:
    """The engine names a curve that closes on itself ``closed`` and one stopped by the step cap ``max_points`` (as
    a line's ends are named); a sweep's curves serve them as ``loop`` and ``step_cap``."""
    sweep = run_sweep(isola_problem(), np.linspace(0.0, 4.0, 21), SolverOptions(), method="deflated")
    circle = next(c for c in curves_json(sweep) if c["name"] == "circle")
    assert "loop" in {e["kind"] for e in circle["ends"]}
    capped = branch_end_json(End("max_points", (0.5,), branch="b", detail="100 steps in this direction"))
    assert capped == {"branch": "b", "kind": "step_cap", "parameter": 0.5, "detail": "100 steps in this direction"}


def positive_parameter(bounded: bool) -> Problem:
    """x = 1 + p on p ≥ 0, the residual undefined (NaN) below: the branch leaves the problem's bounds at p = 0. With
    ``bounded`` the problem declares p's domain [0, ∞) (as a theory's sweep does from its spec), else nothing."""

    def residual(x: np.ndarray, p: float) -> np.ndarray:
        return np.array([x[0] - 1.0 - p]) if p >= 0 else np.array([np.nan])

    return Problem(residual=residual, dim=1, starts=lambda p: {"only": np.array([1.0])},
                   jacobian=lambda x, p: np.array([[1.0]]), parameters=("q",) if bounded else ("p",),
                   bounds=((0.0, math.inf),) if bounded else None)


def test_a_branch_that_leaves_its_parameters_bounds_names_the_parameter() -> None:
    """The theory names no quantity, but the parameter's own domain does: the branch ends at its edge, the curve says
    which bound it crossed; a problem that declares no bounds says nothing it does not know."""
    for bounded, quantity in ((True, "q < 0"), (False, None)):
        sweep = run_sweep(positive_parameter(bounded), np.linspace(1e-4, 1.0, 11), SolverOptions(),
                          method="continuation")
        (curve,) = sweep.curves
        backward, forward = curve.ends
        assert forward is None and backward is not None and backward.kind == "domain"
        assert backward.quantity == quantity
        assert 0.0 <= backward.point[0] < 1e-5  # the last solution before the edge
        if quantity is not None:
            assert curve.message.startswith(f"backward: left the domain of its equations ({quantity})")
