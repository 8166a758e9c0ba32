"""Each theory's known branches, found by deflation from one named start.

The references are independent of deflation: kernel_renormalization's three stationary points of the dense action
at designed data (its own 1-D sign scan of dS/dQ̄, written out in the test, not the engine's), rubin_cavity's
potential wells from its exhaustive root scan, and mean_field_ard's two stable branches from its two named starts
(between two minima of the same residual there is a saddle: deflation finds it too). hciz_mlp is covered over HTTP
(tests/service/test_search_api.py) and in a sweep (tests/theories/test_hciz_mlp_transitions.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import TypeAdapter
from scipy.optimize import brentq

from solvers.core.options import SolverOptions
from solvers.theories import get
from tests.theories.test_kernel_renormalization_common import arrays, make_spec
from tests.theories.test_kernel_renormalization_engine import _designed_three_root_data


def deflated_from(start: str, **search: Any) -> SolverOptions:
    return SolverOptions.model_validate({"search": {"method": "deflation", "starts": [start], **search}})


def spec_of(model: dict[str, Any]) -> Any:
    return TypeAdapter(get(model["theory"]).spec_model).validate_python(model)


def test_kernel_renormalization_three_stationary_points_from_one_start() -> None:
    X, y, Xt, yt = _designed_three_root_data()
    c, U = np.linalg.eigh(X @ X.T / X.shape[1])
    y2 = (U.T @ y) ** 2

    def dS(Q: float) -> float:  # N1 = 10, λ1 = 1, T = 1, linear: K = C
        a = 1.0 + Q * c
        return float(1 - 1 / Q + ((c / a) - y2 * c / a**2).sum() / 10)

    grid = np.geomspace(1e-4, 1e2, 20001)
    h = np.array([dS(q) for q in grid])
    reference = [brentq(dS, grid[i], grid[i + 1]) for i in np.flatnonzero(np.sign(h[:-1]) != np.sign(h[1:]))]
    assert len(reference) == 3
    theory = get("kernel_renormalization")
    spec = make_spec(arrays(X, y, Xt, yt), activation="linear", N1=10, T=1.0)
    problem = theory.problem(spec, None, SolverOptions())
    for start in problem.starts(1.0):
        cat = theory.solve(spec, deflated_from(start))
        found = sorted(float(b.report.order_parameters["Qbar"]) for b in cat.branches)  # type: ignore[union-attr]
        assert found == pytest.approx(reference, rel=1e-7), start
        assert cat.search.method == "deflated"  # type: ignore[union-attr]


def test_rubin_potential_wells_from_the_uninformative_start() -> None:
    theory = get("rubin_cavity")
    spec = spec_of({"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 30.0})
    reference = theory.solve(spec, SolverOptions())
    cat = theory.solve(spec, deflated_from("uninformative"))
    assert sorted(b.name for b in cat.branches) == sorted(b.name for b in reference.branches)
    assert len(cat.branches) == 3
    for b in cat.branches:
        ref = reference.get(b.name)
        assert ref is not None and np.allclose(b.x, ref.x, atol=1e-8) and b.stable is ref.stable
    assert sum(b.origin.method == "deflation" for b in cat.branches) == 2  # type: ignore[union-attr]


def test_mean_field_ard_both_stable_branches_and_the_saddle_between_from_either_start() -> None:
    theory = get("mean_field_ard")
    spec = spec_of({"theory": "mean_field_ard", "model": "mf_ard", "d": 35, "N": 512, "kappa": 0.095,
                    "target": {"kind": "parity", "k": 2}})
    reference = theory.solve(spec, SolverOptions())
    assert sorted(b.name for b in reference.branches) == ["aligned", "symmetric"]
    for start in ("symmetric", "aligned"):
        cat = theory.solve(spec, deflated_from(start, budget=4))
        stable = {b.name: b for b in cat.branches if b.stable}
        assert sorted(stable) == ["aligned", "symmetric"], start
        for name, b in stable.items():
            assert np.allclose(b.x, reference.get(name).x, atol=1e-7)  # type: ignore[union-attr]
        (saddle,) = [b for b in cat.branches if b.stable is False]
        lo, hi = sorted(float(stable[n].x[0]) for n in stable)
        assert lo < float(saddle.x[0]) < hi  # between the two minima in the first order parameter
