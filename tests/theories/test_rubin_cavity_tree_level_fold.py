"""The folds of the reduced tree level's T-curve, located by continuation, against an independent location.

On a small training set (P = 40, D = 5, N = 10, s_a2 = 0.1, seed 0) the reduced ``tree_level`` finite_sample
solution is an S in T with two folds (docs/theories/rubin_cavity.md, "Folds in the reduced form"). Along the S the
training b is monotone, so the curve is a graph T(b): fixing b and solving the six equations F(x, T) = 0 for the
five other coordinates and T (MINPACK's hybrid method, scipy's ``fsolve``; neither the continuation nor the
project's Newton) traces it, and each fold is an extremum of T(b) (Brent's bounded search on b). The continuation
over a narrow window T ∈ [0.214, 0.225] must report both folds at those extrema.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import fsolve, minimize_scalar

from solvers.core.options import SolverOptions
from solvers.theories import get
from solvers.theories.rubin_cavity import FiniteSampleSpec

THEORY = get("rubin_cavity")
SPEC = FiniteSampleSpec.model_validate({
    "theory": "rubin_cavity", "mode": "finite_sample", "treatment": "tree_level", "P": 40, "D": 5, "N": 10.0,
    "s_a2": 0.1, "T": 0.22, "P_test": 20, "seed": 0,
})
#: Window between the folds (measured 0.22266 − 0.21626 = 0.0064); the tolerance below, 1e-8, is 1.6·10⁻⁶ of it,
#: so a fold that moved by 5 % of the window (3.2·10⁻⁴) fails by four orders of magnitude. The two locations agree
#: to 3·10⁻¹⁵ (measured).
TOLERANCE = 1e-8


class CurveByB:
    """T(b) and the other coordinates along the solution curve, b held fixed: (x₂…x₆, T) solve F(x, T) = 0."""

    def __init__(self) -> None:
        self.problem = THEORY.problem(SPEC, "T", SolverOptions())
        # a start near the curve: the coordinates other than b at T = 0.22 on any branch are within 0.04 of these
        self.last = np.array([-0.22, 0.53, -0.285, 0.171, 0.91, 0.22])

    def solve(self, b: float) -> np.ndarray:
        def equations(z: np.ndarray) -> np.ndarray:
            return np.asarray(self.problem.F(np.concatenate([[b], z[:5]]), float(z[5])))

        z, _, ier, message = fsolve(equations, self.last, full_output=True, xtol=1e-13)
        assert ier == 1, message
        assert np.max(np.abs(equations(z))) < 1e-10
        self.last = z
        return z

    def T(self, b: float) -> float:
        return float(self.solve(b)[5])


def test_the_continuation_reports_the_folds_at_the_extrema_of_T_along_the_curve() -> None:
    sweep = THEORY.sweep(SPEC, "T", [0.225, 0.22, 0.214], "continuation", SolverOptions())
    (table,) = sweep.tables
    folds = sorted({e.parameter for e in table.ends if e.kind == "fold"})
    assert len(folds) == 2

    curve = CurveByB()
    # b at the folds: −0.096 (lower fold) and −0.143 (upper fold); the brackets hold one extremum each
    lower = minimize_scalar(curve.T, bounds=(-0.12, -0.08), method="bounded", options={"xatol": 1e-7})
    upper = minimize_scalar(lambda b: -curve.T(b), bounds=(-0.17, -0.12), method="bounded", options={"xatol": 1e-7})
    assert lower.x < -0.081 and upper.x > -0.169  # interior extrema, not a bracket's end
    assert folds[0] == pytest.approx(lower.fun, abs=TOLERANCE)
    assert folds[1] == pytest.approx(-upper.fun, abs=TOLERANCE)
    assert folds[0] == pytest.approx(0.216262, abs=1e-6) and folds[1] == pytest.approx(0.222655, abs=1e-6)  # docs

    # between the folds, T = 0.22 has three solutions: the continuation's three b there are the roots of T(b) = 0.22
    traced = sorted(r.x[0] for r in table.rows if r.p == pytest.approx(0.22, abs=1e-12))
    assert len(traced) == 3
    for b in traced:
        assert curve.T(b) == pytest.approx(0.22, abs=1e-9)
