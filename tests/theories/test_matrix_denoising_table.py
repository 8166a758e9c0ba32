"""The tabulated m_S(λ), its derivative, integral and inverse against direct quadrature, known asymptotes,
the free-entropy form of the mutual information, and the authors' stored tables."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.theories.matrix_denoising.asymptotics import large_lambda_limit, small_lambda_coefficients
from solvers.theories.matrix_denoising.point import mmse_point, mmse_points, spectrum
from solvers.theories.matrix_denoising.readouts import READOUTS
from solvers.theories.matrix_denoising.table import LAM_MAX, LAM_MIN, get_table, lambda_min

TABLES = [(0.5, r) for r in READOUTS] + [(2.0, "rademacher"), (1.0, "ones"), (0.05, "four_point")]


@pytest.mark.parametrize(("gamma", "readout"), TABLES)
def test_table_interpolates_direct_quadrature(gamma: float, readout: str) -> None:
    """Off-grid λ (midpoints of the grid, and beyond both ends) against the direct formula."""
    t = get_table(gamma, readout)
    g = t.lam_grid
    mids = np.sqrt(g[:-1] * g[1:])[::4]
    direct = np.array([p.mmse for p in mmse_points(gamma, readout, mids)])
    # Cubic-spline error: ~1e-7 where q is smooth, up to ~1e-6 near the λ where a gap opens in the
    # spectrum of Y (one weak singularity of mmse_S each).
    assert np.max(np.abs(t.mmse(mids) - direct)) < 1.5e-6
    assert np.max(np.abs(t.mmse(mids) - direct) / direct) < 1e-5
    assert t.diagnostics.all_points_ok


@pytest.mark.parametrize(("gamma", "readout"), [(0.5, "ones"), (0.5, "rademacher"), (2.0, "ones"), (1.0, "uniform"),
                                             (0.5, "four_point")])
def test_small_lambda_series(gamma: float, readout: str) -> None:
    """m_S(λ) = λ − (1 − κ₃²)λ² + (1 − 4κ₃² + κ₄²)λ³ + O(λ⁴), κ₃ = E v³/√γ, κ₄ = E v⁴/γ (derived by
    perturbing the semicircle in its free cumulants), against direct quadrature: the remainder divided
    by λ⁴ stays bounded and settles as λ halves. Dropping either the κ₃ or the κ₄ term breaks this."""
    c2, c3 = small_lambda_coefficients(gamma, readout)
    lams = np.array([0.02, 0.01, 0.005])
    m = np.array([1 - p.mmse for p in mmse_points(gamma, readout, lams)])
    r = (m - lams + c2 * lams**2 - c3 * lams**3) / lams**4
    assert np.all(np.abs(r) < 300)
    assert abs(r[2] - r[1]) < 0.1 * abs(r[1]) + 1.0
    t = get_table(gamma, readout)
    # Below the grid the table uses the same series (plus one fitted λ⁴ term). The direct formula loses
    # accuracy there like (quadrature error ~1e-12)/λ.
    small = np.array([1e-3, 4e-3])
    direct = np.array([1 - p.mmse for p in mmse_points(gamma, readout, small)])
    assert np.allclose(t.overlap(small), direct, rtol=0, atol=5e-9)
    assert t.overlap(1e-7) == pytest.approx(1e-7, rel=1e-6)
    assert t.d_overlap(0.0) == pytest.approx(1.0, abs=1e-12)
    assert t.overlap(0.0) == 0.0 and t.mmse(0.0) == 1.0


@pytest.mark.parametrize(("gamma", "readout", "tol"), [(0.5, "ones", 2e-4), (0.5, "rademacher", 2e-4),
                                                      (3.0, "four_point", 2e-4), (0.5, "uniform", 3e-3)])
def test_large_lambda_limit(gamma: float, readout: str, tol: float) -> None:
    """λ·mmse_S(λ) → 2γ − γ² (γ < 1) or 1 (γ ≥ 1): direct quadrature at λ = 1e6 (beyond the table),
    and the table's extrapolation, approach it; the gap shrinks with λ."""
    L = large_lambda_limit(gamma)
    p5, p6 = mmse_points(gamma, readout, np.array([1e5, 1e6]))
    gap5, gap6 = abs(1e5 * p5.mmse - L), abs(1e6 * p6.mmse - L)
    assert gap6 < tol
    assert gap6 < gap5
    t = get_table(gamma, readout)
    assert abs(1e6 * t.mmse(1e6) - 1e6 * p6.mmse) < 0.2 * gap5 + 1e-6
    assert 1e12 * t.mmse(1e12) == pytest.approx(L, abs=1e-4)
    assert t.inverse_overlap(1.0) == np.inf


# m_S at γ = 0.5 from the authors' stored tables (Minh-Toan/extensive-width-NN, continuous_W/stored_func/
# gamma_0.5/old/mS_{ones,rad,unif}.csv and gamma_0.5/gauss.csv): external reference numbers.
AUTHORS = {
    "ones": {1.0: 0.6030513638563893553, 10.0: 0.9334585067854818119, 40.0: 0.9817692096496505316,
             200.0: 0.9962690151707681574},
    "rademacher": {10.0: 0.9290122721489403324, 40.0: 0.9814713868152716847, 200.0: 0.9962586469283059021},
    "uniform": {10.0: 0.9381920309146509762, 40.0: 0.9828780042213717261, 200.0: 0.9963912897791821210},
    "gaussian": {1.0: 0.6565995070439847314, 200.0: 0.9964442562525605007},
}


@pytest.mark.parametrize("readout", sorted(AUTHORS))
def test_authors_stored_tables(readout: str) -> None:
    t = get_table(0.5, readout)
    for lam, m in AUTHORS[readout].items():
        assert t.overlap(lam) == pytest.approx(m, abs=1e-6)


def _log_energy_iota(gamma: float, readout: str, lam: float) -> float:
    """ι(λ) = (1/d²) I(S̃; Y) = ½[Σ(ρ_Y) − Σ(ρ_sc)], Σ(ρ) = ∫∫ log|x − y| ρ(x)ρ(y), Σ(ρ_sc) = −1/4.

    (Entropy of a rotation-invariant matrix = ½Σ(ρ)d² + a constant shared with the GOE noise.)
    U(x) = ∫ log|x − y| ρ(y) dy has U' = Re G(x + i0), so U is integrated from a point left of the
    support, where it is a regular integral.
    """
    sp = spectrum(gamma, readout, lam)
    lo, hi = sp.bounds()
    x = np.linspace(lo, hi, 50001)
    G, _ = sp.stieltjes(x)
    rho = np.maximum(-G.imag, 0.0) / np.pi
    x0 = lo
    U0 = np.trapezoid(np.log(np.abs(x[1:] - x0)) * rho[1:], x[1:])
    U = U0 + np.concatenate([[0.0], np.cumsum(0.5 * (G.real[1:] + G.real[:-1]) * np.diff(x))])
    sigma = np.trapezoid(rho * U, x)
    return 0.5 * sigma + 0.125


@pytest.mark.parametrize(("gamma", "readout", "lam"), [(0.5, "ones", 1.0), (0.5, "rademacher", 6.0),
                                                       (2.0, "four_point", 3.0), (0.7, "uniform", 2.0)])
def test_immse_integral_equals_free_entropy_formula(gamma: float, readout: str, lam: float) -> None:
    """ι from integrating the MMSE (I-MMSE, 4ι' = mmse) vs ι from the logarithmic energy of ρ_Y at one λ."""
    t = get_table(gamma, readout)
    assert t.iota(lam) == pytest.approx(_log_energy_iota(gamma, readout, lam), abs=1e-6)
    assert t.iota(lam) == pytest.approx((lam - t.integral(lam)) / 4, abs=1e-14)


@pytest.mark.parametrize(("gamma", "readout"), [(0.5, "ones"), (2.0, "rademacher"), (0.5, "gaussian")])
def test_derivative_integral_and_inverse_are_consistent(gamma: float, readout: str) -> None:
    t = get_table(gamma, readout)
    lam = np.array([1e-4, 0.005, lambda_min(gamma), LAM_MIN, 0.3, 2.0, 47.0, 800.0, LAM_MAX, 3e4, 1e7])
    h = 1e-5 * lam
    # dm/dλ: the table's derivative vs centred differences of direct quadrature (independent of the spline).
    inner = (lam > 0.05) & (lam < 1e3)
    hi, lo = mmse_points(gamma, readout, lam[inner] + h[inner]), mmse_points(gamma, readout, lam[inner] - h[inner])
    fd = np.array([(b.mmse - a.mmse) / (2 * hh) for a, b, hh in zip(hi, lo, h[inner], strict=True)])
    assert np.allclose(t.d_overlap(lam[inner]), fd, rtol=2e-4)
    # dM/dλ = m_S (the integral integrates the same interpolant), everywhere including the extrapolations.
    fd_M = (t.integral(lam + h) - t.integral(lam - h)) / (2 * h)
    assert np.allclose(fd_M, t.overlap(lam), rtol=1e-6, atol=1e-9)
    fd_m = (t.overlap(lam + h) - t.overlap(lam - h)) / (2 * h)
    assert np.allclose(fd_m, t.d_overlap(lam), rtol=1e-4, atol=1e-12)
    # m_S^{-1}(m_S(λ)) = λ.
    # (at λ = 1e7, 1 − m_S ~ 1e-7: round-off in m_S alone moves λ by ~1e-9 relative)
    assert np.allclose(t.inverse_overlap(t.overlap(lam)), lam, rtol=1e-8)
    assert t.inverse_overlap(0.0) == 0.0


@pytest.mark.parametrize(("gamma", "readout"), TABLES)
def test_overlap_is_increasing_in_unit_interval(gamma: float, readout: str) -> None:
    t = get_table(gamma, readout)
    lam = np.concatenate([[0.0], np.logspace(-6, 8, 3000)])
    m = t.overlap(lam)
    assert np.all(np.diff(m) > 0)
    assert m[0] == 0.0 and np.all(m < 1.0)
    assert np.all(t.d_overlap(lam) > 0)
    # λ·mmse stays between 0 and 1 (the linear estimator has λ·mmse ≤ λ/(1 + λ) only for Gaussian S̃).
    assert np.all(lam * t.mmse(lam) <= 1.0 + 1e-9)


def test_scalars_arrays_and_bad_input() -> None:
    t = get_table(0.5, "ones")
    assert isinstance(t.overlap(1.0), float)
    assert t.overlap(np.array([1.0, 2.0])).shape == (2,)
    assert t.mmse(2.0) == pytest.approx(1 - t.overlap(2.0), abs=1e-15)
    assert t is get_table(0.5, "ones")  # cached
    with pytest.raises(ValueError, match="snr"):
        t.overlap(-1.0)
    with pytest.raises(ValueError, match="readout"):
        get_table(0.5, "binary")
    with pytest.raises(ValueError, match="gamma"):
        get_table(0.0, "ones")
    with pytest.raises(ValueError):
        mmse_point(0.5, "ones", -0.1)
