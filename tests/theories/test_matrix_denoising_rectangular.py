"""Rectangular denoising X = AB/√k through iid Gaussian noise: Monte Carlo of the rotation-invariant estimator
on finite matrices, the derived small- and large-SNR asymptotes, the Gaussian limit, the table against direct
quadrature, the I-MMSE relation 2ι' = mmse, and the cache."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from solvers.theories.matrix_denoising import rectangular_table as rt
from solvers.theories.matrix_denoising.build_cache import BuildOnceCache
from solvers.theories.matrix_denoising.rectangular_asymptotics import cubic_coefficient, large_lambda_limit
from solvers.theories.matrix_denoising.rectangular_point import rectangular_mmse_point, rectangular_mmse_points
from solvers.theories.matrix_denoising.rectangular_spectrum import RectangularSpectrum

D = 400
INSTANCES = 3


@pytest.fixture(autouse=True)
def _one_blas_thread() -> Iterator[None]:
    with threadpool_limits(limits=1):
        yield


def _errors(gamma: float, eta: float, lam: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per instance: error of the oracle estimator ξ_i = u_iᵀ X v_i (knows X; tends to the Bayes error for a
    bi-rotationally invariant X) and of the plug-in estimator ξ(s) = s − (2/√R₁)[Re G_μ(s) + (R₁ − 1)/(2s)]
    built from the computed Stieltjes transform (in units Ŷ = Y/(MP)^{1/4})."""
    rng = np.random.default_rng(seed)
    N, M, k = round(eta * D), D, round(gamma * D)
    sp = RectangularSpectrum(gamma, eta, lam)
    quarter = (N * M) ** 0.25
    oracle, plugin = [], []
    for _ in range(INSTANCES):
        X = rng.standard_normal((N, k)) @ rng.standard_normal((k, M)) / np.sqrt(k)
        Y = np.sqrt(lam) * X + rng.standard_normal((N, M))
        U, sv, Vt = np.linalg.svd(Y, full_matrices=False)
        xi_oracle = np.einsum("ij,ij->j", U, X @ Vt.T)
        oracle.append((np.sum(X * X) - np.sum(xi_oracle**2)) / (N * M))
        s = sv / quarter
        G_mu = s * sp.stieltjes(s * s).real
        xi = s - (2.0 / np.sqrt(sp.R1)) * (G_mu + 0.5 * (sp.R1 - 1.0) / s)
        X_hat = (U * xi) @ Vt * quarter / np.sqrt(lam)
        plugin.append(np.sum((X - X_hat) ** 2) / (N * M))
    return np.array(oracle), np.array(plugin)


@pytest.mark.parametrize(
    ("gamma", "eta", "lam"),
    [(0.5, 0.5, 1.0), (0.5, 1.0, 2.0), (0.3, 2.0, 0.5), (2.0, 0.7, 3.0), (0.2, 0.5, 20.0), (0.25, 0.25, 8.0)],
)
def test_mmse_matches_monte_carlo_denoising(gamma: float, eta: float, lam: float) -> None:
    oracle, plugin = _errors(gamma, eta, lam, seed=5)
    mmse = rectangular_mmse_point(gamma, eta, lam).mmse
    se = max(np.std(oracle, ddof=1), np.std(plugin, ddof=1)) / np.sqrt(INSTANCES)
    tol = 4 * se + 3.0 / D * mmse + 2e-3 * mmse  # finite-d bias O(1/d) of both estimators
    assert abs(np.mean(oracle) - mmse) < tol
    assert abs(np.mean(plugin) - mmse) < tol
    assert np.all(oracle <= plugin + 1e-12)


@pytest.mark.parametrize(("gamma", "eta"), [(0.5, 0.5), (1.0, 1.0), (0.3, 2.0), (2.0, 0.7)])
def test_point_checks_and_small_lambda_series(gamma: float, eta: float) -> None:
    """mmse_X = 1/(1 + λ) − (η/γ²)λ³ + O(λ⁴) (derived from the fourth cumulants at the corners of a
    rectangle): the remainder over λ⁴ stays bounded and settles as λ halves; without the cubic term the
    remainder over λ⁴ would grow like C/λ."""
    lams = np.array([0.02, 0.01, 0.005])
    points = rectangular_mmse_points(gamma, eta, lams)
    assert all(p.ok for p in points)  # ∫ν = 1, E x = √R₁(1 + λ), E[x Re G] = 1/2
    m = np.array([p.mmse for p in points])
    C = cubic_coefficient(gamma, eta)
    r = (m - 1.0 / (1.0 + lams) + C * lams**3) / lams**4
    assert np.all(np.abs(r) < 20 * max(C, 1.0) ** 2)
    assert abs(r[2] - r[1]) < 0.1 * abs(r[1]) + 0.5
    assert np.all(np.abs((m - 1.0 / (1.0 + lams)) / lams**3 + C) < 12 * max(C, 1.0) ** 2 * lams)


@pytest.mark.parametrize(("gamma", "eta"), [(0.5, 0.5), (0.3, 2.0), (0.05, 1.0), (0.2, 0.5)])
def test_large_lambda_limit(gamma: float, eta: float) -> None:
    """λ·mmse_X → ρ(1 + η − ρ)/η, ρ = min(γ, η, 1) (rank-ρ manifold dimension per entry); the gap shrinks."""
    L = large_lambda_limit(gamma, eta)
    p4, p6 = rectangular_mmse_points(gamma, eta, np.array([1e4, 1e6]))
    assert p4.ok and p6.ok
    g4, g6 = abs(p4.mmse * 1e4 - L), abs(p6.mmse * 1e6 - L)
    assert g6 < g4 and g6 < 2e-3 * L


def test_gaussian_signal_limit() -> None:
    """k → ∞ makes X Gaussian with iid entries: mmse = 1/(1 + λ) (here k = 1000d, C = 5e-7)."""
    for eta, lam in [(0.5, 0.3), (1.0, 2.0), (3.0, 10.0)]:
        assert rectangular_mmse_point(1e3, eta, lam).mmse == pytest.approx(1.0 / (1.0 + lam), abs=2e-6)


@pytest.mark.parametrize(("gamma", "eta"), [(0.5, 0.5), (0.3, 2.0)])
def test_table_against_direct_quadrature_and_i_mmse(gamma: float, eta: float) -> None:
    t = rt.build_rectangular_table(gamma, eta)
    assert t.diagnostics.all_points_ok and t.diagnostics.tail_matched
    g = t.lam_grid
    mids = np.sqrt(g[:-1] * g[1:])[::7]
    direct = np.array([p.mmse for p in rectangular_mmse_points(gamma, eta, mids)])
    assert np.max(np.abs(t.mmse(mids) - direct)) < 3e-7
    # 2ι' = mmse (real Gaussian channel), by central differences of the tabulated ι.
    lam = np.array([1e-3, 0.3, 3.0, 40.0, 2e4])
    h = 1e-5 * lam
    assert np.allclose(2 * (t.iota(lam + h) - t.iota(lam - h)) / (2 * h), t.mmse(lam), rtol=1e-6, atol=1e-12)
    assert t.iota(0.0) == 0.0 and t.mmse(0.0) == 1.0 and t.d_overlap(0.0) == pytest.approx(1.0, abs=1e-12)
    # Below the grid: the series q = 1 − Cλ³ + c₄λ⁴.
    small = np.array([1e-4, 1e-3])
    assert np.allclose(t.mmse(small), [p.mmse for p in rectangular_mmse_points(gamma, eta, small)], atol=5e-9)
    # Beyond it: λ·mmse → L∞.
    assert t.mmse(1e8) * 1e8 == pytest.approx(large_lambda_limit(gamma, eta), rel=2e-3)
    m = np.array([0.1, 0.5, 0.9, 0.999])
    assert np.allclose(t.overlap(t.inverse_overlap(m)), m, atol=1e-12)


def test_vanishing_row_group_is_the_iid_gaussian_channel() -> None:
    g = rt.get_rectangular_table(0.5, 0.0)
    lam = np.array([0.0, 0.5, 7.0])
    assert np.allclose(g.mmse(lam), 1 / (1 + lam)) and np.allclose(g.iota(lam), 0.5 * np.log1p(lam))
    assert np.allclose(g.inverse_overlap(g.overlap(lam)), lam)
    # The finite-η tables approach it as η → 0 (the cubic coefficient η/γ² vanishes).
    assert rectangular_mmse_point(0.5, 1e-3, 0.7).mmse == pytest.approx(1 / 1.7, abs=1e-4)


def test_cache_builds_once_per_key_and_stays_bounded() -> None:
    calls: list[tuple] = []
    gate = threading.Event()

    def build(*key: float) -> tuple:
        calls.append(key)
        gate.wait(2.0)
        return key

    cache: BuildOnceCache[tuple] = BuildOnceCache(build, size=2)
    out: list[tuple] = []
    threads = [threading.Thread(target=lambda: out.append(cache.get((0.5, 0.5)))) for _ in range(4)]
    for th in threads:
        th.start()
    gate.set()
    for th in threads:
        th.join()
    assert calls == [(0.5, 0.5)] and out == [(0.5, 0.5)] * 4
    cache.get((1.0, 1.0))
    cache.get((2.0, 2.0))
    assert len(cache) == 2 and cache.peek((0.5, 0.5)) is None
    with pytest.raises(ValueError, match="eta"):
        rt.get_rectangular_table(0.5, 5e-4)


#: The authors' stored rectangular mmse for γ₁ = η = 1/2 (`Minh-Toan/statphys-deep-NN`,
#: theory/ones_nonsymm_05_mmse_only.csv, row 1 the SNR, row 2 the mmse; values on its linear grid λ = 100 − 0.024975k,
#: k counted from the last entry). Computed there with the log-potential form of Troiani et al.'s MMSE.
AUTHORS_TABLE = [
    (0, 9.4836844956084233e-03), (80, 9.6714681475178459e-03), (1075, 1.2839214132158151e-02),
    (1084, 1.2877441663975133e-02), (3962, 4.5238239008106623e-01), (3963, 4.5853671996330120e-01),
    (3964, 4.6486422940442551e-01),
]


def test_table_matches_the_authors_stored_rectangular_mmse() -> None:
    t = rt.get_rectangular_table(0.5, 0.5)
    for k, reference in AUTHORS_TABLE:
        lam = 100.0 - 0.024975 * k
        assert float(t.mmse(lam)) == pytest.approx(reference, rel=1e-5), lam
