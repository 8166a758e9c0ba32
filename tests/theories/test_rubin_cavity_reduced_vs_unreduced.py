"""The reduced tree level against the unreduced one where what the reduction drops is provably small, and apart.

The two forms solve the same closure K = N s_a2 E_p[φφᵀ], p(w) ∝ p0(w) exp E(w); the reduction changes only the
exponent E (|w⊥|² at its prior value, sample sums by population values, one ridge for the perpendicular modes), and
each form's kernel of a given law is exact. With |φ_μ| ≤ 1, (φᵀt̄)² ≤ P‖t̄‖² ≤ P‖y‖²/T² and 0 ≤ φᵀ(K + T)⁻¹φ ≤ P/T, so

    sup_w |E(w)| ≤ ε = (s_a2 P/2) (‖y‖²/T² + 1/T)

for either form: both laws are within a factor e^{±2ε} of the prior, both kernels within O(ε) of the NNGP kernel,
and so within O(ε) of each other, whatever the reduction drops (docs/theories/rubin_cavity.md). At fixed N s_a2 the
bound falls like 1/N. The control at ε ≫ 1 shows that the comparison can fail: there the forms differ by far more
than the tolerances.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from solvers.core.options import SolverOptions
from solvers.theories import get
from solvers.theories.rubin_cavity import FiniteSampleSpec
from solvers.theories.rubin_cavity.finite_sample.data import draw_inputs

THEORY = get("rubin_cavity")
BASE = {"theory": "rubin_cavity", "mode": "finite_sample", "P": 20, "D": 4, "T": 0.5, "P_test": 20, "seed": 3}
PARTICLES = {"nodes": 9, "chains": 8, "samples": 8, "burn_in": 40, "thin": 2, "rho_max": 2.5}


def epsilon_bound(N: float) -> float:
    X = draw_inputs(BASE["P"], BASE["D"], BASE["P_test"], BASE["seed"])[0]
    z = X[:, 0]
    y = z - 0.3 * (z**3 - 3 * z)
    T = BASE["T"]
    return (1 / N) * BASE["P"] / 2 * (float(y @ y) / T**2 + 1 / T)


def solution(N: float, treatment: str, particles: dict[str, Any] | None = None) -> tuple[dict[str, float], Any]:
    extra = {"particles": particles} if particles else {}
    spec = FiniteSampleSpec.model_validate({**BASE, "N": N, "s_a2": 1 / N, "treatment": treatment, **extra})
    eq = THEORY.solve(spec, SolverOptions()).equilibrium_branch
    assert eq is not None and eq.converged
    return dict(eq.report.order_parameters), eq.report.observables


def test_reduced_and_unreduced_agree_where_the_exponent_is_small() -> None:
    N = 2e5  # N s_a2 = 1
    assert epsilon_bound(N) < 0.01
    red, _ = solution(N, "tree_level")
    unr, obs = solution(N, "tree_level_unreduced", PARTICLES)
    # R depends on the node weights alone (measured: equal to 1e-4); b and c carry the particles' noise in K
    # (measured: 1.3 % and 1.0 % apart, standard errors 2.0 % and 1.9 %): each tolerance is below 5 % minus that.
    assert unr["R"] == pytest.approx(red["R"], rel=0.01)
    assert unr["b"] == pytest.approx(red["b"], rel=0.035)
    assert unr["c"] == pytest.approx(red["c"], rel=0.035)
    assert obs["b_stderr"] < 0.03 * abs(red["b"])


def test_reduced_and_unreduced_differ_where_the_exponent_is_large() -> None:
    """N = 20 (ε ≈ 50): the reduced law's R is 1.8 times the unreduced one (measured 0.256 against 0.139)."""
    N = 20.0
    assert epsilon_bound(N) > 10
    red, _ = solution(N, "tree_level")
    unr, obs = solution(N, "tree_level_unreduced", {**PARTICLES, "chains": 4, "samples": 4})
    assert red["R"] > 1.5 * unr["R"]
    assert abs(red["R"] - unr["R"]) > 10 * obs["R_stderr"]
    assert np.isfinite(unr["b"]) and abs(red["b"] - unr["b"]) > 0.05 * abs(red["b"])


def test_reduced_sweep_by_continuation_traces_through_b_equal_zero() -> None:
    """A reduced tree-level T sweep is a traced curve whose ends say how it stops. On a finite sample b is a
    least-squares coefficient and may be negative (the linear part over-learnt on the training inputs): the curve
    crosses b = 0 and leaves the range at both ends, where a clip of b to > 0 used to end it in a solver failure."""
    spec = FiniteSampleSpec.model_validate({**BASE, "treatment": "tree_level", "P": 40, "D": 5, "N": 10.0,
                                            "s_a2": 0.1, "T": 0.4, "seed": 0})
    sweep = THEORY.sweep(spec, "T", [0.42, 0.38], "continuation", SolverOptions())
    (table,) = sweep.tables
    assert table.ends == () and table.message.count("left the parameter range") == 2
    T = np.array([r.p for r in table.rows])
    b = np.array([r.report.order_parameters["b"] for r in table.rows])
    assert T.min() == pytest.approx(0.38) and T.max() == pytest.approx(0.42)
    assert b.max() > 0 > b.min()
    # b falls with T along the curve (more is learnt as the noise falls)
    order = np.argsort(T)
    assert np.all(np.diff(b[order]) > 0)


def test_a_folding_reduced_sweep_reports_both_folds_as_the_ends_of_its_branches() -> None:
    """Mean field on a small training set (P = 40, D = 8, N = 10, s_a2 = 0.1) has an S-shaped T-curve: the traced
    curve turns at two folds (measured T = 0.23524 and 0.24693), reported as ends of kind ``fold`` naming the branch
    the curve continues on. Between them three solutions coexist, outside one: Newton-polished fixed points at the
    requested values, each with its own R."""
    spec = FiniteSampleSpec.model_validate({**BASE, "treatment": "cavity", "P": 40, "D": 8, "N": 10.0, "s_a2": 0.1,
                                            "T": 0.24, "seed": 0})
    values = [0.25, 0.24, 0.23]
    sweep = THEORY.sweep(spec, "T", values, "continuation", SolverOptions())
    (table,) = sweep.tables
    folds = sorted({e.parameter for e in table.ends if e.kind == "fold"})
    assert len(folds) == 2 and all(e.kind == "fold" and e.partner for e in table.ends)
    assert 0.23 < folds[0] < 0.24 < folds[1] < 0.25
    counts = [sum(b.converged for b in cat.branches) for cat in sweep.catalogues]
    assert counts == [1, 3, 1]
    problem = THEORY.problem(spec, "T", SolverOptions())
    between = [b for b in sweep.catalogues[1].branches if b.converged]
    for b in between:  # each is a fixed point of the map itself, not only a point of the curve
        assert np.max(np.abs(problem.F(np.asarray(b.x), 0.24))) < 1e-9
    R = sorted(b.report.order_parameters["R"] for b in between)
    assert R[1] > 1.05 * R[0] and R[2] > 1.05 * R[1]
