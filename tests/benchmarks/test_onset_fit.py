"""The onset fit of benchmarks.bench_rubin_cavity_onset against closed forms.

A power law f = a P^k crosses t at P* = (t/a)^(1/k), which log-log interpolation reproduces exactly; the weighted
least-squares slope of exact data y = c + x log D is x, and its standard error is 1/√(Σ w (log D − mean)²) with
the weighted mean, computed here by hand; on data with known Gaussian noise the slope lands within its stated error
as often as a Gaussian says.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.onset_fit import Crossing, crossing, onset, weighted_slope

D = np.array([8.0, 12.0, 16.0, 24.0])


def power_law(P: np.ndarray, a: float = 2e-4, k: float = 1.6) -> np.ndarray:
    return a * P**k


def test_crossing_of_a_power_law_is_exact() -> None:
    P = np.array([32.0, 45.0, 64.0, 91.0])
    exact = (0.1 / 2e-4) ** (1 / 1.6)  # 48.6: between the second and third P
    c = crossing(P, power_law(P), np.zeros(4), 0.1)
    assert c is not None and c.bracket == (45.0, 64.0)
    assert c.P_star == pytest.approx(exact, rel=1e-12)
    # a 5 % higher threshold moves P* by 1.05^(1/k) = +3.1 %
    moved = crossing(P, power_law(P), np.zeros(4), 0.105)
    assert moved is not None and moved.P_star / c.P_star == pytest.approx(1.05 ** (1 / 1.6), rel=1e-12)
    # no bracket, no crossing
    assert crossing(P, power_law(P), np.zeros(4), 1.0) is None


def test_crossing_takes_the_first_upward_crossing_in_P_whatever_the_input_order() -> None:
    P = [64.0, 16.0, 32.0, 128.0]
    f = [0.2, 0.05, 0.08, 0.09]  # up through 0.1 between 32 and 64, back down after
    c = crossing(P, f, [0.0] * 4, 0.1)
    assert c is not None and c.bracket == (32.0, 64.0)
    assert c.P_star == pytest.approx(32 * 2 ** (math.log(0.1 / 0.08) / math.log(0.2 / 0.08)), rel=1e-12)


def test_crossing_error_is_the_delta_method_of_the_two_fractions() -> None:
    """The stated error against a finite-difference derivative of the crossing in each fraction."""
    P, f, se = [40.0, 60.0], [0.06, 0.15], [0.002, 0.003]
    c = crossing(P, f, se, 0.1)
    assert c is not None
    h = 1e-7
    d1 = (crossing(P, [f[0] + h, f[1]], se, 0.1).log_P - c.log_P) / h  # type: ignore[union-attr]
    d2 = (crossing(P, [f[0], f[1] + h], se, 0.1).log_P - c.log_P) / h  # type: ignore[union-attr]
    assert c.log_P_stderr == pytest.approx(math.hypot(d1 * se[0], d2 * se[1]), rel=1e-5)


def test_onset_is_the_mean_log_crossing_with_spread_and_monte_carlo_error() -> None:
    cs = [Crossing(math.log(p), 0.01, (0.0, 0.0)) for p in (40.0, 44.0, 50.0)]
    o = onset(cs)
    y = np.log([40.0, 44.0, 50.0])
    assert o.log_P == pytest.approx(y.mean(), rel=1e-14)
    assert o.spread == pytest.approx(math.sqrt(((y - y.mean()) ** 2).sum() / 2), rel=1e-14)
    assert o.log_P_stderr == pytest.approx(math.sqrt((o.spread**2 + 1e-4) / 3), rel=1e-14)
    with pytest.raises(ValueError):
        onset(cs[:1])


def test_weighted_slope_recovers_an_exact_power_law_with_the_closed_form_error() -> None:
    x, sigma = np.log(D), np.array([0.02, 0.03, 0.04, 0.05])
    s = weighted_slope(x, math.log(5.0) + 1.3 * x, sigma)
    assert s.slope == pytest.approx(1.3, rel=1e-12) and s.intercept == pytest.approx(math.log(5.0), rel=1e-12)
    w = 1 / sigma**2
    xbar = (w * x).sum() / w.sum()
    assert s.stderr == pytest.approx(1 / math.sqrt((w * (x - xbar) ** 2).sum()), rel=1e-12)
    assert s.chi2 == pytest.approx(0.0, abs=1e-20) and s.dof == 2 and s.stderr_scaled == s.stderr


def test_a_five_percent_change_of_one_onset_moves_the_slope_by_the_closed_form_amount() -> None:
    """Multiplying P_onset at D = 24 by 1.05 moves the slope by w₄ (x₄ − x̄) log 1.05 / Σ w (x − x̄)²: here
    0.042, more than the slope's error (0.037) at 3 % errors per point."""
    x, sigma = np.log(D), np.full(4, 0.03)
    y = math.log(5.0) + 1.0 * x
    base = weighted_slope(x, y, sigma)
    moved = weighted_slope(x, y + np.array([0, 0, 0, math.log(1.05)]), sigma)
    w = 1 / sigma**2
    xbar = x.mean()
    expected = w[3] * (x[3] - xbar) * math.log(1.05) / (w * (x - xbar) ** 2).sum()
    assert moved.slope - base.slope == pytest.approx(expected, rel=1e-10)
    assert moved.slope - base.slope > base.stderr


def test_noisy_power_laws_land_within_the_stated_error_as_often_as_a_gaussian_says() -> None:
    """2000 synthetic data sets log P = log A + x log D + N(0, σ²) with x = 1: the slope's z-scores have unit
    variance (within 0.13, four standard errors of a variance from 2000 draws) and χ²/dof averages 1 (within 0.07,
    three standard errors); with the noise twice the stated σ, both read 4."""
    rng = np.random.default_rng(0)
    x, sigma = np.log(D), np.array([0.05, 0.04, 0.06, 0.03])
    z, chi = [], []
    for _ in range(2000):
        s = weighted_slope(x, math.log(5.0) + x + rng.normal(0.0, sigma), sigma)
        z.append((s.slope - 1.0) / s.stderr)
        chi.append(s.chi2 / s.dof)
    assert np.var(z) == pytest.approx(1.0, abs=0.13)
    assert np.mean(chi) == pytest.approx(1.0, abs=0.07)
    z2, chi2 = [], []
    for _ in range(2000):
        s = weighted_slope(x, math.log(5.0) + x + rng.normal(0.0, 2 * sigma), sigma)
        z2.append((s.slope - 1.0) / s.stderr)
        chi2.append(s.chi2 / s.dof)
    assert np.var(z2) == pytest.approx(4.0, rel=0.13)
    assert np.mean(chi2) == pytest.approx(4.0, rel=0.07)
