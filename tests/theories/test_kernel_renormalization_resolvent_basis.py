"""The resolvent basis of a sweep: its certificate holds, its products equal the direct ones to its tolerance, a
sweep's observables equal the exact weight-space posterior, and what it cannot certify is computed directly."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.theories.kernel_renormalization import THEORY
from solvers.theories.kernel_renormalization.resolvent_basis import TOLERANCE, ResolventBasis
from solvers.theories.kernel_renormalization.sweep_products import SweepProducts
from tests.theories.test_kernel_renormalization_common import arrays, make_spec


def _spectrum(P: int = 400, spread: float = 1e3, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.sort(np.exp(rng.uniform(0.0, np.log(spread), P))) * 0.01


def _points(n: int, seed: int = 1) -> list[tuple[float, float]]:
    """(T, a) pairs as a sweep meets them, in random order (the basis must not rely on a sweep's order)."""
    rng = np.random.default_rng(seed)
    return [(float(t), float(a)) for t, a in zip(np.geomspace(1e-5, 1e2, n)[rng.permutation(n)],
                                                 rng.uniform(0.5, 4.0, n), strict=True)]


def test_a_certified_fit_reproduces_every_entry_of_the_resolvent_to_the_tolerance() -> None:
    kappa = _spectrum()
    basis = ResolventBasis(kappa)
    omega = np.sqrt(kappa.astype(np.longdouble) + 1e-8 * kappa.max())
    for T, a in _points(120):
        c = basis.fit(T, a)
        assert c is not None
        # in extended precision, independently of the basis' own arithmetic: d against Φc/ω
        d = 1 / (np.longdouble(T) + np.longdouble(a) * kappa.astype(np.longdouble))
        approx = (basis._phi[:, : c.size].astype(np.longdouble) @ c.astype(np.longdouble)) / omega
        assert np.max(np.abs(approx - d) / d) <= TOLERANCE
    assert basis.certified == 120 and basis.refused == 0
    assert basis.size < 60  # far fewer columns than points: the family has a small numerical dimension


def test_the_channels_combine_to_the_direct_products_within_the_tolerance() -> None:
    kappa = _spectrum(P=300)
    rng = np.random.default_rng(2)
    A, y, Z = rng.standard_normal((50, 300)), rng.standard_normal(300), rng.standard_normal((300, 7))
    basis = ResolventBasis(kappa)
    basis.channel("k0", lambda cols: (A @ (y[:, None] * cols)).T)
    basis.channel("gram", lambda cols: np.stack([(Z.T @ (col[:, None] * Z)).ravel() for col in cols.T]))
    for T, a in _points(60, seed=3):
        c = basis.fit(T, a)
        assert c is not None
        d = 1 / (T + a * kappa)
        # the certificate: |Σ w_i d_i − combined| ≤ tol·Σ |w_i| d_i (plus rounding of the direct sum)
        direct, scale = A @ (y * d), np.abs(A) @ (np.abs(y) * d)
        assert np.all(np.abs(basis.combine("k0", c) - direct) <= 1.01 * TOLERANCE * scale + 1e-14 * scale)
        gram = (Z.T @ (d[:, None] * Z)).ravel()
        gram_scale = (np.abs(Z).T @ (d[:, None] * np.abs(Z))).ravel()
        assert np.all(np.abs(basis.combine("gram", c) - gram) <= 1.01 * TOLERANCE * gram_scale + 1e-14 * gram_scale)


def test_what_the_basis_cannot_certify_is_computed_directly() -> None:
    kappa = _spectrum(P=200)
    # a tolerance below rounding: nothing can be certified, the basis stops growing after one try
    strict = ResolventBasis(kappa, tol=1e-18)
    assert all(strict.fit(T, a) is None for T, a in _points(20))
    assert strict.refused == 20 and not strict.growing and strict.size <= 3
    # a byte budget too small for one column and its channels
    tight = ResolventBasis(kappa, max_bytes=100)
    tight.channel("x", lambda cols: cols.T)
    assert tight.fit(0.1, 1.0) is None and tight.size == 0 and not tight.growing
    # an infinite resolvent (T = 0 with a zero eigenvalue) is not fitted
    assert ResolventBasis(np.array([0.0, 1.0, 2.0])).fit(0.0, 1.0) is None


def _weight_space_posterior(X: np.ndarray, y: np.ndarray, Xt: np.ndarray, q: float, T: float,
                            lambda0: float) -> dict[str, np.ndarray]:
    """The exact posterior of a linear network at fixed readout norm q (a readout v with ‖v‖²/N1 = q), in weight
    space: predictions at the test points and the unit-averaged ⟨w wᵀ⟩ (as test_kernel_renormalization_exact_linear
    derives them)."""
    N0 = X.shape[1]
    N1 = 3
    v = np.full(N1, np.sqrt(q))

    def design(Z: np.ndarray) -> np.ndarray:
        return np.einsum("i,mk->mik", v, Z).reshape(Z.shape[0], N1 * N0) / np.sqrt(N0 * N1)

    Phi, Phi0 = design(X), design(Xt)
    cov = np.linalg.inv(lambda0 * np.eye(N1 * N0) + Phi.T @ Phi / T)
    mean = cov @ Phi.T @ y / T
    W_mean, W_cov = mean.reshape(N1, N0), cov.reshape(N1, N0, N1, N0)
    ww = (np.einsum("ih,ik->hk", W_mean, W_mean) + np.einsum("ihik->hk", W_cov)) / N1
    return {"mean": Phi0 @ mean, "var": np.einsum("ij,jk,ik->i", Phi0, cov, Phi0),
            "eig": np.linalg.eigvalsh(lambda0 * ww - np.eye(N0))}


def test_a_sweeps_observables_equal_the_exact_weight_space_posterior() -> None:
    """Linear network, 160 training points: along a T sweep the predictions and the weight-correlation extremes
    come from the basis (certified), and equal the exact weight-space posterior at each T."""
    rng = np.random.default_rng(11)
    P, N0, Pt, lambda0, lambda1 = 160, 8, 12, 1.3, 0.7
    X, Xt = rng.standard_normal((P, N0)), rng.standard_normal((Pt, N0))
    y = np.sign(X @ rng.standard_normal(N0))
    spec = make_spec(arrays(X, y, Xt, np.zeros(Pt)), activation="linear", N1=3, lambda0=lambda0, lambda1=lambda1)
    problem = THEORY.problem(spec, "T")
    reporter = problem.report.__self__.reporter  # type: ignore[attr-defined]
    q = 0.8
    for T in np.geomspace(1e-2, 10.0, 40):
        obs = problem.report(np.array([np.log(lambda1 * q)]), float(T)).observables
        exact = _weight_space_posterior(X, y, Xt, q, float(T), lambda0)
        assert np.allclose(obs["test_mean"], exact["mean"], rtol=1e-9, atol=1e-11)
        assert np.allclose(obs["test_variance"], exact["var"], rtol=1e-9, atol=1e-11)
        wc = obs["weight_correlations"]
        scale = np.max(np.abs(exact["eig"]))
        assert wc["max_eigenvalue"] == pytest.approx(exact["eig"][-1], abs=1e-9 * scale)
        assert wc["min_eigenvalue"] == pytest.approx(exact["eig"][0], abs=1e-9 * scale)
    basis = next(iter(reporter.products._bases.values()))[1]
    assert basis.certified >= 40 and basis.size < P  # the points came from the basis, not a full-rank one


@pytest.mark.parametrize("parameter", ["T", "N1"])
def test_a_sweep_equals_the_same_points_computed_directly(parameter: str) -> None:
    """The kernel sweep's every observable, from the basis, against the same problem with the basis off."""
    spec = make_spec({"kind": "teacher", "P": 240, "P_test": 30, "N0": 20, "seed": 4}, N1=60)
    values = np.geomspace(1e-3, 5.0, 25) if parameter == "T" else np.geomspace(5.0, 500.0, 25)
    on = THEORY.problem(spec, parameter)
    off = THEORY.problem(spec, parameter)
    off.report.__self__.reporter.products = SweepProducts(enabled=False)  # type: ignore[attr-defined]
    for v in values:
        (_, x), = on.enumerate(float(v))
        a, b = on.report(x, float(v)).observables, off.report(x, float(v)).observables
        for name in ("generalization_error", "generalization_error_nngp", "generalization_bias2"):
            assert a[name] == pytest.approx(b[name], rel=1e-10)
        assert np.allclose(a["test_mean"], b["test_mean"], rtol=0, atol=1e-11 * np.max(np.abs(b["test_mean"])))
        for name in ("max_eigenvalue", "min_eigenvalue", "trace_lambda2"):
            scale = abs(b["weight_correlations"]["min_eigenvalue"])
            assert a["weight_correlations"][name] == pytest.approx(b["weight_correlations"][name], abs=1e-11 * scale)
    basis = next(iter(on.report.__self__.reporter.products._bases.values()))[1]  # type: ignore[attr-defined]
    assert basis.certified > 0


def test_fitting_many_points_at_once_is_fitting_them_one_group_after_the_other() -> None:
    """The windowed fit of a sweep's block (pairs of points, as a report meets a point's own and its NNGP posterior)
    certifies and grows exactly as fitting each pair by itself, in order."""
    kappa = _spectrum(P=300)
    points = _points(90, seed=5)
    groups = [k // 2 for k in range(len(points))]
    together, alone = ResolventBasis(kappa), ResolventBasis(kappa)
    fits = together.fit_many(points, groups)
    one_by_one = [c for g in range(45) for c in alone.fit_many(points[2 * g : 2 * g + 2], [g, g])]
    assert together.size == alone.size and together.certified == alone.certified == 90
    for c, d in zip(fits, one_by_one, strict=True):
        assert c is not None and d is not None and c.size == d.size
        assert np.allclose(c, d, rtol=0, atol=1e-13 * np.max(np.abs(d)))


def test_a_sweeps_points_reported_together_equal_each_computed_directly() -> None:
    """A T sweep's block of points (report_many, as the sweep asks for it) against each point reported alone by a
    problem whose products are all direct; a failed solve among them is reported without observables."""
    spec = make_spec({"kind": "teacher", "P": 240, "P_test": 30, "N0": 20, "seed": 4}, N1=60)
    problem = THEORY.problem(spec, "T")
    direct = THEORY.problem(spec, "T")
    direct.report.__self__.reporter.products = SweepProducts(enabled=False)  # type: ignore[attr-defined]
    assert problem.report_many is not None
    values = [float(v) for v in np.geomspace(1e-3, 5.0, 30)]
    points = [(x, v) for v in values for _, x in problem.enumerate(v)]
    points.insert(7, (np.array([np.nan]), values[7]))
    reports = problem.report_many(points)
    assert reports[7].observables == dict.fromkeys(reports[7].observables)
    for (x, v), got in zip(points[:7] + points[8:], reports[:7] + reports[8:], strict=True):
        want = direct.report(x, v).observables
        obs = got.observables
        for name in ("generalization_error", "generalization_error_nngp", "generalization_bias2", "train_error",
                     "action"):
            assert obs[name] == pytest.approx(want[name], rel=1e-10)
        assert np.allclose(obs["test_mean"], want["test_mean"], rtol=0, atol=1e-11 * np.max(np.abs(want["test_mean"])))
        assert obs["class_distance"]["D2"] == pytest.approx(want["class_distance"]["D2"], rel=1e-10)
        scale = abs(want["weight_correlations"]["min_eigenvalue"])
        for name in ("max_eigenvalue", "min_eigenvalue", "trace_lambda1", "trace_lambda2"):
            assert obs["weight_correlations"][name] == pytest.approx(want["weight_correlations"][name],
                                                                     abs=1e-11 * scale)
    basis = next(iter(problem.report.__self__.reporter.products._bases.values()))[1]  # type: ignore[attr-defined]
    assert basis.certified >= len(values)


def test_only_a_sweep_on_one_spectrum_reports_its_points_together() -> None:
    """T and N1 never change the kernel; λ0 changes an erf kernel (each value its own spectrum: reported alone)."""
    spec = make_spec({"kind": "teacher", "P": 60, "P_test": 10, "N0": 8, "seed": 1}, N1=30)
    assert THEORY.problem(spec, "T").report_many is not None
    assert THEORY.problem(spec, "N1").report_many is not None
    assert THEORY.problem(spec, "lambda0").report_many is None
    assert THEORY.problem(spec, None).report_many is None
