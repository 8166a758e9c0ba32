"""A sweep's problem knows which spec field it sweeps and the values that field admits, so that a curve which runs
out of them says so: a kernel_renormalization T sweep from T = 10⁻⁴ follows its curve towards T = 0, where the
equations end (T ≥ 0 in the spec), and names T as the quantity that left its domain."""

from __future__ import annotations

import numpy as np

from solvers.core.options import SolverOptions
from solvers.theories.base import swept
from solvers.theories.kernel_renormalization import THEORY
from tests.theories.test_kernel_renormalization_common import make_spec

SPEC = make_spec({"kind": "teacher", "P": 60, "P_test": 10, "N0": 8, "seed": 1}, N1=30)


def test_a_sweep_problem_is_named_and_bounded_by_its_spec_field() -> None:
    problem = swept(THEORY.problem(SPEC, "T", SolverOptions()), SPEC, "T")
    assert problem.parameters == ("T",) and problem.bounds == ((0.0, 1e12),)  # T: ge=0, le=1e12
    # a problem that names its parameter (or bounds it) already, or a parameter that is no field, keeps its own
    named = swept(problem, SPEC, "N1")
    assert named is problem
    plain = THEORY.problem(SPEC, "T", SolverOptions())
    assert swept(plain, SPEC, "no_such_field") is plain


def test_a_curve_that_runs_into_T_below_zero_says_T_left_its_domain() -> None:
    values = [float(t) for t in np.geomspace(1e-4, 1.0, 9)]
    sweep = THEORY.sweep(SPEC, "T", values, "continuation", SolverOptions())
    (curve,) = sweep.curves
    backward = curve.ends[0]
    assert backward is not None and backward.kind == "domain" and backward.quantity == "T < 0"
    assert 0.0 <= backward.point[0] < 1e-4  # past the smallest value asked, at the last solution before T = 0
    assert curve.message.startswith("backward: left the domain of its equations (T < 0)")
