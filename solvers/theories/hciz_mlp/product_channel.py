"""The rectangular (product-matrix) denoising channel of one readout class, as the two-layer equations use it.

Rows of W^(2:1) = W_2 W_1/√k_1 whose readout has the value class v² form a (γ_2 P(v²) d) × d matrix with inner
dimension k_1 = γ_1 d; the theory observes it through a Gaussian channel at SNR x (adapter over
``matrix_denoising.rectangular_table``):

    mmse_v(x) (per entry, mmse_v(0) = 1),   ι_v(x) = ½ ∫_0^x mmse_v   (2ι_v' = mmse_v),
    tilt τ_v:  mmse_v(τ_v) = 1 − T_v  (moment matching, T_v = E_{v2}[Q_2(v, v2) Q_1(v2)]).

A class of vanishing mass (continuous readout laws) is the iid Gaussian channel mmse = 1/(1 + x).
Physical arguments are x ≥ 0; finite differences at the universal solution probe x slightly below 0,
where mmse is continued by its second-order Taylor polynomial at 0 (keeps the map C¹ there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

#: Relative step of the central difference giving mmse'' from the table's mmse'.
CURVATURE_STEP = 1e-4
#: Largest tilt (τ ≈ L/(1 − T) passes it only when every overlap is within ~1e-12 of 1).
TAU_MAX = 1e12


@dataclass(frozen=True)
class ProductChannel:
    """mmse_v, its first two derivatives, ι_v and the tilt for inner ratio γ_1 and row ratio η (0: Gaussian)."""

    gamma1: float
    eta: float

    @cached_property
    def table(self) -> Any:
        from solvers.theories.matrix_denoising.rectangular_table import get_rectangular_table

        return get_rectangular_table(self.gamma1, self.eta)

    @property
    def gaussian(self) -> bool:
        return self.eta == 0.0

    @cached_property
    def _origin(self) -> tuple[float, float]:
        """(mmse'(0), mmse''(0))."""
        if self.gaussian:
            return -1.0, 2.0
        d0, dh = (-float(self.table.d_overlap(h)) for h in (0.0, CURVATURE_STEP))
        return d0, (dh - d0) / CURVATURE_STEP

    @cached_property
    def _last_tilt(self) -> list[float]:
        """[1 − T, s = ln(1 + τ), d ln mmse/ds] of the previous tilt: the next one starts from its linearisation."""
        return [1.0, 0.0, -1.0]

    def mmse_and_slope(self, x: float) -> tuple[float, float]:
        if x < 0.0 or self.gaussian:
            return self.mmse(x), self.dmmse(x)
        return self.table.mmse_and_slope(float(x))

    def mmse(self, x: float) -> float:
        if x < 0.0:
            d1, d2 = self._origin
            return 1.0 + d1 * x + 0.5 * d2 * x * x
        if self.gaussian:
            return 1.0 / (1.0 + x)
        return float(self.table.mmse(float(x)))

    def dmmse(self, x: float) -> float:
        if x < 0.0:
            d1, d2 = self._origin
            return d1 + d2 * x
        if self.gaussian:
            return -1.0 / (1.0 + x) ** 2
        return -float(self.table.d_overlap(float(x)))

    def d2mmse(self, x: float) -> float:
        if x < 0.0:
            return self._origin[1]
        if self.gaussian:
            return 2.0 / (1.0 + x) ** 3
        h = CURVATURE_STEP * (1.0 + x)
        lo = max(x - h, 0.0)
        return (self.dmmse(x + h) - self.dmmse(lo)) / (x + h - lo)

    def iota(self, x: float) -> float:
        if x < 0.0:
            d1, d2 = self._origin
            return 0.5 * (x + 0.5 * d1 * x * x + d2 * x**3 / 6.0)
        if self.gaussian:
            return 0.5 * float(np.log1p(x))
        return float(self.table.iota(float(x)))

    def tilt(self, one_minus_T: float) -> float:
        """τ ≥ 0 with mmse_v(τ) = 1 − T, from 1 − T itself (no cancellation as T → 1)."""
        if one_minus_T >= 1.0:
            return 0.0
        if one_minus_T <= 0.0:
            return TAU_MAX
        guess = (1.0 - one_minus_T) / one_minus_T  # exact for the Gaussian channel
        if self.gaussian:
            return min(guess, TAU_MAX)
        # Newton in s = ln(1 + τ) on ln mmse(τ) = ln(1 − T), from the Gaussian guess, safeguarded by bisection:
        # ln mmse is nearly linear in s at both ends (≈ −s at small τ, ≈ ln L − s at large τ), and working
        # with 1 − T keeps full precision when T → 1.
        target = math.log(one_minus_T)
        lo, hi = 0.0, math.log1p(TAU_MAX)
        last = self._last_tilt
        s = last[1] - (target - math.log(last[0])) / last[2]
        if not lo <= s <= hi:
            s = min(math.log1p(guess), hi)
        slope = -1.0
        for _ in range(60):
            tau = math.expm1(s)
            m, dm = self.mmse_and_slope(tau)
            gap = math.log(m) - target if m > 0.0 else -math.inf
            if gap > 0.0:  # mmse too large: τ too small
                lo = s
            else:
                hi = s
            slope = dm * (1.0 + tau) / m if m > 0.0 else 0.0
            new = s - gap / slope if slope < 0.0 and math.isfinite(gap) else 0.5 * (lo + hi)
            if not lo <= new <= hi:
                new = 0.5 * (lo + hi)
            if abs(new - s) <= 4e-16 * (1.0 + s) or abs(gap) <= 1e-15:
                s = new
                break
            s = new
        if slope < 0.0:
            last[:] = [one_minus_T, s, slope]
        return min(math.expm1(s), TAU_MAX)
