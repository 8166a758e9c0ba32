"""The spectral density of Y_λ = √λ S̃ + Z against closed forms, exact identities and an independent root solver."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.stats import norm
from threadpoolctl import threadpool_limits

from solvers.theories.matrix_denoising.point import FOUR_PI2_3, mmse_point, mmse_points, spectrum
from solvers.theories.matrix_denoising.readouts import READOUTS, law


@pytest.fixture(autouse=True)
def _one_blas_thread() -> Iterator[None]:
    # Multi-threaded BLAS on small matrices is much slower when the cores are shared.
    with threadpool_limits(limits=1):
        yield


CASES = [(g, r, lam) for r in READOUTS for g in (0.5, 2.0) for lam in (0.3, 4.0, 300.0)]


def test_semicircle_density_and_its_cubic_integral() -> None:
    """λ = 0: Y = Z, ρ = √(4 − x²)/(2π) exactly, and (4π²/3)∫ρ³ = 1."""
    sp = spectrum(0.7, "rademacher", 0.0)
    x = np.linspace(-2.5, 2.5, 101)
    exact = np.sqrt(np.clip(4 - x * x, 0, None)) / (2 * np.pi)
    err = np.abs(sp.density(x) - exact)
    at_edge = np.isclose(np.abs(x), 2.0)
    # Exactly at an edge the root is double and Newton converges only linearly.
    assert np.max(err[~at_edge]) < 1e-13
    assert np.max(err[at_edge]) < 1e-8
    assert mmse_point(0.7, "rademacher", 0.0).fisher == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(("gamma", "readout", "lam"), CASES)
def test_density_integrates_to_one_with_the_right_first_two_moments(gamma: float, readout: str, lam: float) -> None:
    """∫ρ = 1, ∫xρ = √(λγ) E v and ∫x²ρ = λ(1 + γ (E v)²) + 1 (moments of √λ S̃ + Z from the matrix definition)."""
    p = mmse_point(gamma, readout, lam)
    assert abs(p.mass_error) < 1e-10
    assert abs(p.mean_error) < 1e-9 * np.sqrt(1 + lam)
    assert abs(p.second_moment_error) < 1e-9 * (1 + lam)


@pytest.mark.parametrize(("gamma", "lam"), [(0.5, 1.0), (0.5, 50.0), (2.0, 3.0), (1.0, 10.0)])
def test_ones_density_matches_the_closed_cubic(gamma: float, lam: float) -> None:
    """ones: c g³ + (γ + c x) g² + (γ x − γ c + c) g + γ = 0 for g = ∫ρ/(t − x) (ρ = max Im g/π)."""
    sp = spectrum(gamma, "ones", lam)
    c = np.sqrt(gamma * lam)
    lo, hi = sp.bounds()
    x = np.linspace(lo, hi, 257)[1:-1]
    # The physical root is the one with the largest imaginary part (g = ∫ρ/(t − x) has Im g = πρ ≥ 0).
    rho_poly = np.array([max(np.roots([c, gamma + c * xi, gamma * xi - gamma * c + c, gamma]).imag.max(), 0.0)
                         for xi in x]) / np.pi
    assert np.max(np.abs(sp.density(x) - rho_poly)) < 1e-9


@pytest.mark.parametrize(("gamma", "lam"), [(0.5, 1.0), (0.5, 200.0), (2.0, 5.0)])
def test_rademacher_density_matches_the_closed_quartic(gamma: float, lam: float) -> None:
    """rademacher: −c² g⁴ − c² x g³ + (γ² + γc² − c²) g² + γ² x g + γ² = 0."""
    sp = spectrum(gamma, "rademacher", lam)
    c2 = gamma * lam
    lo, hi = sp.bounds()
    x = np.linspace(lo, hi, 257)[1:-1]
    rho_poly = np.array([
        max(np.roots([-c2, -c2 * xi, gamma**2 + gamma * c2 - c2, gamma**2 * xi, gamma**2]).imag.max(), 0.0)
        for xi in x
    ]) / np.pi
    assert np.max(np.abs(sp.density(x) - rho_poly)) < 1e-9


@pytest.mark.parametrize("name", ["uniform", "gaussian"])
@pytest.mark.parametrize("a", [0.03 - 0.01j, 0.09 - 0.2j, 0.3 - 0.05j, 0.7 - 0.3j, 2.5 - 0.01j, -1.4 - 0.6j])
def test_continuous_readout_transforms_against_direct_integration(name: str, a: complex) -> None:
    """φ(a) = E[v/(1 − a v)] and φ'(a) = E[v²/(1 − a v)²] from their closed forms vs adaptive quadrature."""
    if name == "uniform":
        lo, hi = -np.sqrt(3), np.sqrt(3)

        def dens(v: float) -> float:
            return 1 / (2 * np.sqrt(3))
    else:
        lo, hi = -14.0, 14.0

        def dens(v: float) -> float:
            return np.exp(-v * v / 2) / np.sqrt(2 * np.pi)

    def expect(f) -> complex:
        re = quad(lambda v: (f(v) * dens(v)).real, lo, hi, limit=500, epsabs=1e-14)[0]
        im = quad(lambda v: (f(v) * dens(v)).imag, lo, hi, limit=500, epsabs=1e-14)[0]
        return re + 1j * im

    f, df = law(name).phi_and_derivative(np.array([a]))
    assert abs(f[0] - expect(lambda v: v / (1 - a * v))) < 1e-10
    assert abs(df[0] - expect(lambda v: v * v / (1 - a * v) ** 2)) < 1e-9


def readout_quantiles(readout: str, k: int) -> np.ndarray:
    """k readouts whose empirical law is P_v up to O(1/k) (quantiles), rescaled to mean square exactly 1.

    Quantiles instead of draws remove the O(1/√k) readout noise, which for heavy laws dominates Tr Y⁴.
    """
    u = (np.arange(k) + 0.5) / k
    if readout == "ones":
        v = np.ones(k)
    elif readout == "rademacher":
        v = np.where(u < 0.5, -1.0, 1.0)
    elif readout == "four_point":
        v = np.array([-3.0, -1.0, 1.0, 3.0])[np.minimum((u * 4).astype(int), 3)] / np.sqrt(5)
    elif readout == "uniform":
        v = np.sqrt(3) * (2 * u - 1)
    else:
        v = norm.ppf(u)
    return v / np.sqrt(np.mean(v * v))


@pytest.mark.parametrize(("gamma", "readout", "lam"), [(0.5, "ones", 2.0), (1.5, "gaussian", 1.0),
                                                       (0.5, "four_point", 3.0), (0.8, "uniform", 5.0),
                                                       (0.4, "rademacher", 20.0)])
def test_spectrum_against_sampled_matrices(gamma: float, readout: str, lam: float) -> None:
    """The distribution function and resolvent of the density vs eigenvalues of sampled
    Y = √λ WᵀD_vW/√(kd) + Z (d = 500): Kolmogorov distance and (1/d) Tr (z − Y)⁻¹ at Im z = 0.5."""
    rng = np.random.default_rng(7)
    d = 500
    k = round(gamma * d)
    v = readout_quantiles(readout, k)
    eigs = []
    for _ in range(2):
        W = rng.standard_normal((k, d))
        S = (W.T * v) @ W / np.sqrt(k * d)
        A = rng.standard_normal((d, d))
        eigs.append(np.linalg.eigvalsh(np.sqrt(lam) * S + (A + A.T) / np.sqrt(2 * d)))
    ev = np.sort(np.concatenate(eigs))
    sp = spectrum(gamma, readout, lam)
    lo, hi = sp.bounds()
    x = np.linspace(lo, hi, 20001)
    rho = sp.density(x)
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (rho[1:] + rho[:-1]) * np.diff(x))])
    F = np.interp(ev, x, cdf)
    emp_hi = np.arange(1, ev.size + 1) / ev.size
    ks = max(np.max(np.abs(emp_hi - F)), np.max(np.abs(emp_hi - 1 / ev.size - F)))
    # Eigenvalues of such ensembles are rigid: the distance is ~2/d (measured 0.004–0.005 here), while
    # swapping the readout law (e.g. gaussian → uniform at the same γ) or γ by 20% gives 0.01–0.03.
    assert ks < 0.008
    s = np.sqrt(1 + lam)
    for xr in (-0.5 * s, 0.0, 0.7 * s):
        z = xr + 0.5j * s
        g_theory = np.trapezoid(rho / (z - x), x)
        g_sample = np.mean(1.0 / (z - ev))
        assert abs(g_sample - g_theory) < 5e-3 * abs(g_theory)


def test_batched_and_single_evaluations_agree() -> None:
    """The vectorised many-λ quadrature gives the same numbers as one-λ calls."""
    lams = np.array([0.05, 1.0, 30.0])
    many = mmse_points(0.5, "four_point", lams)
    for lam, p in zip(lams, many, strict=True):
        assert p.mmse == pytest.approx(mmse_point(0.5, "four_point", lam).mmse, abs=1e-13)
        assert p.fisher == pytest.approx(FOUR_PI2_3 * (1 - lam * p.mmse) / FOUR_PI2_3, abs=1e-13)
