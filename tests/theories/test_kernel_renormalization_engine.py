"""Engine integration: one eigendecomposition per kernel, every stationary point a branch, honest failures."""

from __future__ import annotations

import json

import numpy as np
import pytest

from solvers.theories.kernel_renormalization import THEORY
from solvers.theories.kernel_renormalization import spectrum as spectrum_module
from tests.payloads import solve_json, sweep_json
from tests.theories.test_kernel_renormalization_common import OPTIONS, arrays, make_spec, qbar_of, recipe_data


@pytest.fixture()
def eigh_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts calls of the spectrum module's eigendecomposition, on a cold cache."""
    spectrum_module.clear_cache()
    calls: list[int] = []
    real = spectrum_module._eigh

    def counting(a: np.ndarray):
        calls.append(a.shape[0])
        return real(a)

    monkeypatch.setattr(spectrum_module, "_eigh", counting)
    yield calls
    spectrum_module.clear_cache()


@pytest.mark.parametrize(
    ("activation", "depth", "parameter", "values", "expected"),
    [
        ("erf", 1, "T", [0.0, 1e-3, 0.01, 0.1, 1.0, 10.0], 1),
        ("erf", 1, "N1", [5, 10, 30, 100, 1000], 1),
        ("erf", 1, "lambda1", [0.3, 1.0, 3.0], 1),
        ("relu", 1, "lambda0", [0.3, 1.0, 3.0], 1),  # homogeneous: λ0 is a scalar factor
        ("linear", 2, "lambda1", [0.3, 1.0, 3.0], 1),
        ("erf", 2, "T", [0.01, 0.1, 1.0], 1),
        ("erf", 1, "lambda0", [0.3, 1.0, 3.0], 3),  # λ0 sets the arcsine's argument: one per value
        ("erf", 2, "lambda1", [0.3, 1.0, 3.0], 3),  # λ1 enters the second layer's arcsine
    ],
)
def test_sweeps_reuse_the_spectrum(eigh_calls, activation, depth, parameter, values, expected) -> None:
    spec = make_spec(arrays(*recipe_data()), activation=activation, depth=depth, N1=40)
    first = solve_json(THEORY, spec, OPTIONS)
    assert first["converged"]
    sweep = sweep_json(THEORY, spec, parameter, values, "grid", OPTIONS)
    assert all(point["converged"] for point in sweep["points"])
    assert len(eigh_calls) == expected, eigh_calls
    # the cached spectrum answers exactly what a cold solve would
    spectrum_module.clear_cache()
    cold = solve_json(THEORY, spec.model_copy(update={parameter: values[-1]}), OPTIONS)
    warm = sweep["points"][-1]
    assert np.allclose(cold["order_parameters"]["Qbar"], warm["order_parameters"]["Qbar"], rtol=1e-12)
    assert cold["observables"]["generalization_error"] == pytest.approx(
        warm["observables"]["generalization_error"], rel=1e-12
    )


def _designed_three_root_data() -> tuple[np.ndarray, ...]:
    """Linear-activation data whose input covariance C has a chosen spectrum and label projections.

    20 eigenvalues κ = 100 carry no label (their r-terms step dS/dlog Q̄ up by 20/N1 near Q̄ = T/100);
    one eigenvalue κ = 1/3 carries ỹ = 14 (its label term dips it near Q̄ = 3T). With N1 = 10 and T = 1
    the residual goes − + − +: two minima of S and a barrier between them.
    """
    rng = np.random.default_rng(3)
    U, _ = np.linalg.qr(rng.standard_normal((21, 21)))
    kappa = np.array([100.0] * 20 + [1 / 3])
    y_t = np.array([0.0] * 20 + [14.0])
    X = U * np.sqrt(21 * kappa)  # C = X Xᵀ/N0 = U diag(κ) Uᵀ with N0 = 21, λ0 = 1
    Xt = rng.standard_normal((4, 21))
    return X, U @ y_t, Xt, np.ones(4)


def test_every_stationary_point_is_a_branch() -> None:
    X, y, Xt, yt = _designed_three_root_data()
    spec = make_spec(arrays(X, y, Xt, yt), activation="linear", N1=10, T=1.0)
    out = solve_json(THEORY, spec, OPTIONS)
    assert out["diagnostics"]["stationary_points"] == 3
    assert any("3 stationary points" in note for note in out["diagnostics"]["notes"])
    branches = {b["name"]: b for b in out["branches"]}
    assert set(branches) == {"low_Qbar", "barrier", "high_Qbar"}
    assert branches["barrier"]["stable"] is False
    assert branches["low_Qbar"]["stable"] and branches["high_Qbar"]["stable"]
    qs = {name: b["order_parameters"]["Qbar"] for name, b in branches.items()}
    assert qs["low_Qbar"] < qs["barrier"] < qs["high_Qbar"]

    # independent check: each is a zero of dS/dQ̄ of the dense action, and the equilibrium has the lowest S
    C = X @ X.T / X.shape[1]

    def S(Q: float) -> float:
        A = np.eye(len(y)) + Q * C
        return Q - np.log(Q) + (np.linalg.slogdet(A)[1] + y @ np.linalg.solve(A, y)) / 10

    for q in qs.values():
        h = 1e-5 * q
        assert (S(q + h) - S(q - h)) / (2 * h) == pytest.approx(0.0, abs=1e-6)
    minima = ["low_Qbar", "high_Qbar"]
    assert out["equilibrium"] == min(minima, key=lambda n: S(qs[n]))
    for name in minima:
        assert branches[name]["free_entropy"] == pytest.approx(-S(qs[name]), rel=1e-10)


def test_continuation_finds_the_first_order_transition_and_the_spinodal_in_temperature() -> None:
    """Designed data: two minima of S exchange at T* (first order) and one dies at a fold (spinodal).

    Reference values from the dense action alone: T* where S(low) = S(high), and the fold where the
    number of sign changes of dS/dQ̄ drops from three to one.
    """
    from scipy.optimize import brentq

    X, y, Xt, yt = _designed_three_root_data()
    C = X @ X.T / X.shape[1]
    c, U = np.linalg.eigh(C)
    y2 = (U.T @ y) ** 2

    def dS(Q: np.ndarray, T: float) -> np.ndarray:  # N1 = 10, λ1 = 1, linear: K = C
        a = T + np.multiply.outer(Q, c)
        return 1 - 1 / Q + ((c / a) - y2 * c / a**2).sum(-1) / 10

    def S(Q: float, T: float) -> float:
        a = T + Q * c
        return Q - np.log(Q) + (np.log(a) + y2 / a).sum() / 10

    def roots(T: float) -> list[float]:
        grid = np.geomspace(1e-4, 1e2, 20001)
        h = dS(grid, T)
        return [brentq(dS, grid[i], grid[i + 1], args=(T,)) for i in np.flatnonzero(np.sign(h[:-1]) != np.sign(h[1:]))]

    def gap(T: float) -> float:
        r = roots(T)
        return S(r[0], T) - S(r[-1], T)

    T_star = brentq(gap, 1.0, 1.4, xtol=1e-12)
    lo, hi = 1.3, 1.7  # three roots at lo, one at hi: bisect on the count
    while hi - lo > 1e-9:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if len(roots(mid)) == 3 else (lo, mid)

    spec = make_spec(arrays(X, y, Xt, yt), activation="linear", N1=10, T=1.0)
    out = sweep_json(THEORY, spec, "T", list(np.linspace(0.5, 2.0, 31)), "continuation", OPTIONS)
    kinds = {(t["kind"], tuple(sorted(t["branches"]))): t for t in out["transitions"]}
    first = kinds[("first_order", ("high_Qbar", "low_Qbar"))]
    assert first["parameter"] == pytest.approx(T_star, abs=1e-7)
    fold = kinds[("spinodal", ("barrier", "high_Qbar"))]
    assert fold["parameter"] == pytest.approx(lo, abs=1e-5)
    before, after = out["points"][0], out["points"][-1]
    assert before["equilibrium"] == "high_Qbar" and after["equilibrium"] == "renormalized"
    assert len(before["branches"]) == 3 and len(after["branches"]) == 1


def test_zero_temperature_with_a_singular_kernel_is_reported_not_raised() -> None:
    X, y, Xt, yt = recipe_data(P=30, N0=10)  # linear kernel of rank 10 < P
    out = solve_json(THEORY, make_spec(arrays(X, y, Xt, yt), activation="linear", T=0.0), OPTIONS)
    assert out["converged"] is False
    assert any("singular" in note for note in out["diagnostics"]["notes"])
    json.dumps(out, allow_nan=False)
    # at any T > 0 the same data solve
    assert solve_json(THEORY, make_spec(arrays(X, y, Xt, yt), activation="linear", T=1e-3), OPTIONS)["converged"]


def test_sweep_payload_is_json_safe_and_follows_the_grid() -> None:
    spec = make_spec({"kind": "teacher", "P": 60, "P_test": 15, "N0": 20, "seed": 1}, activation="relu", N1=30)
    values = list(np.geomspace(1e-3, 10, 7))
    out = sweep_json(THEORY, spec, "T", values, "grid", OPTIONS)
    json.dumps(out, allow_nan=False)
    assert [p["parameter"] for p in out["points"]] == pytest.approx(values)
    for p in out["points"]:
        single = solve_json(THEORY, spec.model_copy(update={"T": p["parameter"]}), OPTIONS)
        assert p["order_parameters"]["Qbar"] == pytest.approx(qbar_of(single), rel=1e-10)
        assert len(p["observables"]["test_variance"]) == 15


def test_N1_sweep_accepts_continuous_widths() -> None:
    spec = make_spec(arrays(*recipe_data()), N1=30)
    out = sweep_json(THEORY, spec, "N1", [12.5, 30.0, 77.7], "grid", OPTIONS)
    assert all(p["converged"] for p in out["points"])
    assert out["points"][0]["observables"]["alpha"] == pytest.approx(30 / 12.5)


@pytest.mark.parametrize("activation", ["erf", "relu", "linear"])
@pytest.mark.parametrize(("x_scale", "y_scale"), [(1e200, 1.0), (1.0, 1e200), (1e-200, 1.0), (1.0, 0.0)])
def test_absurd_magnitudes_are_results_not_errors(activation: str, x_scale: float, y_scale: float) -> None:
    X, y, Xt, yt = recipe_data(P=12, N0=6, P_test=3)
    spec = make_spec(arrays(X * x_scale, y * y_scale, Xt, yt), activation=activation, T=0.1)
    out = solve_json(THEORY, spec, OPTIONS)
    json.dumps(out, allow_nan=False)
    if out["converged"]:
        assert np.isfinite(out["order_parameters"]["Qbar"]) and out["order_parameters"]["Qbar"] > 0
    else:
        assert out["diagnostics"]["notes"] or out["diagnostics"]["status"] != "converged"
    sweep = sweep_json(THEORY, spec, "T", [0.01, 1.0], "grid", OPTIONS)
    json.dumps(sweep, allow_nan=False)


@pytest.mark.parametrize("where", ["search", "observables"])
def test_numerical_failures_are_diagnostics_and_bugs_propagate(monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    from solvers.theories.kernel_renormalization import report as report_module
    from solvers.theories.kernel_renormalization.scalar_action import ScalarAction

    spec = make_spec(arrays(*recipe_data()), N1=30)

    def failing(exc: Exception):
        def fail(*args, **kwargs):
            raise exc

        if where == "search":
            monkeypatch.setattr(ScalarAction, "stationary_points", fail)
        else:
            monkeypatch.setattr(report_module, "class_distance", fail)

    failing(FloatingPointError("overflow in a test"))
    out = solve_json(THEORY, spec, OPTIONS)
    if where == "search":
        assert any("exhaustive search failed: FloatingPointError" in n for n in out["diagnostics"]["notes"])
        assert out["converged"]  # the NNGP start still finds the root
    else:
        assert out["observables"]["error"] == "FloatingPointError: overflow in a test"
        assert out["observables"]["generalization_error"] is None
    failing(ValueError("a programming error"))
    with pytest.raises(ValueError, match="a programming error"):
        THEORY.solve(spec, OPTIONS)


@pytest.mark.parametrize("data", ["three_roots", "teacher"])
def test_the_sweep_scan_table_finds_the_roots_of_the_direct_scan(data: str) -> None:
    """Along a sweep the search reads A(v), B(v) from a table; it must find exactly the direct scan's roots."""
    import dataclasses

    from solvers.theories.kernel_renormalization.model import Model
    from solvers.theories.kernel_renormalization.problem import KernelRenormalizationProblem

    if data == "three_roots":
        spec = make_spec(arrays(*_designed_three_root_data()), activation="linear", N1=10, T=1.0)
    else:
        spec = make_spec({"kind": "teacher", "P": 80, "P_test": 5, "N0": 30, "seed": 2}, N1=40)
    sweeps = {"T": np.geomspace(1e-5, 1e3, 120), "N1": np.geomspace(2.0, 1e4, 40),
              "lambda1": np.geomspace(1e-2, 1e2, 40)}
    used = 0
    for parameter, values in sweeps.items():
        kp = KernelRenormalizationProblem(Model(spec), parameter)
        for v in values:
            act = kp.action(v)
            roots = act.stationary_points()
            direct = dataclasses.replace(act, table=None).stationary_points()
            assert len(roots) == len(direct) and np.allclose(roots, direct, rtol=0, atol=1e-12), (parameter, v)
            used += act._table_scan(*act.root_interval(), np.inf) is not None
            for s in roots:
                assert abs(float(act.symmetric_residual(s))) < 1e-12
    assert used > 100  # the table is what these sweeps scan
    if data == "three_roots":
        assert len(KernelRenormalizationProblem(Model(spec), "T").action(1.0).stationary_points()) == 3
