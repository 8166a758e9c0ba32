"""The onset of a learned fraction against the sample size, and its power law in D, with their errors.

Three steps, each a closed form:

* :func:`crossing`: the P where a sampled fraction f(P) first reaches a threshold, interpolating log f linearly in
  log P between the two sampled P that bracket it (a local power law f ∝ P^k, exact for one), with the Monte-Carlo
  error of log P* from the two fractions' standard errors by the delta method;
* :func:`onset`: the mean of log P* over training sets (seeds), its error from their spread plus the Monte-Carlo
  part;
* :func:`weighted_slope`: the weighted least-squares line y = a + x·log D through the per-D onsets, the slope's
  standard error from the stated errors and, when the points scatter more than those errors allow (χ²/dof > 1),
  the error scaled by √(χ²/dof).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Crossing:
    """log P* where the fraction reaches the threshold, its Monte-Carlo standard error, and the bracket used."""

    log_P: float
    log_P_stderr: float
    bracket: tuple[float, float]

    @property
    def P_star(self) -> float:
        return math.exp(self.log_P)


def crossing(P: Sequence[float], f: Sequence[float], f_stderr: Sequence[float], threshold: float) -> Crossing | None:
    """The first upward crossing of ``threshold`` by f(P) in increasing P (None when the sampled P do not bracket one).

    Between the bracketing P1 < P2 (f1 < threshold ≤ f2), log P* = log P1 + (log t − log f1) s with
    s = (log P2 − log P1)/(log f2 − log f1); with u = (log t − log f1)/(log f2 − log f1),
    ∂ log P*/∂ log f1 = −s (1 − u) and ∂ log P*/∂ log f2 = −s u, and d log f = df/f.
    """
    order = np.argsort(P)
    Ps, fs, ses = (np.asarray(v, dtype=float)[order] for v in (P, f, f_stderr))
    for i in range(len(Ps) - 1):
        f1, f2 = fs[i], fs[i + 1]
        if f1 < threshold <= f2:
            if f1 <= 0:
                raise ValueError(f"a fraction {f1:g} ≤ 0 below the crossing cannot be interpolated in log f")
            lP1, lP2, lf1, lf2 = math.log(Ps[i]), math.log(Ps[i + 1]), math.log(f1), math.log(f2)
            s = (lP2 - lP1) / (lf2 - lf1)
            u = (math.log(threshold) - lf1) / (lf2 - lf1)
            err = abs(s) * math.hypot((1 - u) * ses[i] / f1, u * ses[i + 1] / f2)
            return Crossing(lP1 + u * (lP2 - lP1), err, (float(Ps[i]), float(Ps[i + 1])))
    return None


@dataclass(frozen=True)
class Onset:
    """The mean of log P* over seeds and its standard error (seed spread and Monte-Carlo part, in quadrature)."""

    log_P: float
    log_P_stderr: float
    seeds: int
    spread: float  # the seeds' sample standard deviation of log P*

    @property
    def P_onset(self) -> float:
        return math.exp(self.log_P)


def onset(crossings: Sequence[Crossing]) -> Onset:
    """Mean log P* over the seeds; error² = (sample variance of log P* + mean Monte-Carlo variance)/n.

    The sample variance already holds the Monte-Carlo noise once; adding it again is the conservative side.
    """
    n = len(crossings)
    if n < 2:
        raise ValueError("the seed spread needs at least two seeds")
    y = np.array([c.log_P for c in crossings])
    mc = np.array([c.log_P_stderr for c in crossings])
    spread = float(np.std(y, ddof=1))
    return Onset(float(y.mean()), math.sqrt((spread**2 + float(np.mean(mc**2))) / n), n, spread)


@dataclass(frozen=True)
class Slope:
    """y = intercept + slope·x by weighted least squares."""

    slope: float
    intercept: float
    stderr: float  # from the stated errors alone
    chi2: float
    dof: int

    @property
    def stderr_scaled(self) -> float:
        """The slope's error scaled by √(χ²/dof) when the points scatter more than their errors (never below)."""
        return self.stderr * math.sqrt(max(1.0, self.chi2 / self.dof)) if self.dof > 0 else math.nan


def weighted_slope(x: Sequence[float], y: Sequence[float], sigma: Sequence[float]) -> Slope:
    """Weighted least squares with weights 1/σ²: slope = Σw(x−x̄)(y−ȳ)/Σw(x−x̄)², stderr = 1/√(Σw(x−x̄)²)."""
    xs, ys, w = np.asarray(x, float), np.asarray(y, float), 1.0 / np.asarray(sigma, float) ** 2
    if len(xs) < 2:
        raise ValueError("a slope needs at least two points")
    xbar, ybar = float(w @ xs / w.sum()), float(w @ ys / w.sum())
    sxx = float(w @ (xs - xbar) ** 2)
    slope = float(w @ ((xs - xbar) * (ys - ybar))) / sxx
    intercept = ybar - slope * xbar
    chi2 = float(w @ (ys - intercept - slope * xs) ** 2)
    return Slope(slope, intercept, 1.0 / math.sqrt(sxx), chi2, len(xs) - 2)
