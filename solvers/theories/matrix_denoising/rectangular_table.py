"""Tabulated mmse_X(λ) of rectangular extensive-rank denoising, per (γ, η), with the same interface as the
symmetric table (:class:`~.table.OverlapTable`).

Channel Y = √λ X + Z, X = A B/√k with A ∈ R^{ηd×k}, B ∈ R^{k×d}, k = γd, iid unit-variance entries
(the spectral law, hence the rotation-invariant MMSE, does not depend on their distribution), Z iid
N(0, 1). Conventions:

* mmse_X(λ) = lim E‖X − E[X|Y]‖²/(ηd²) (per entry, in units of the entry variance): 1 at λ = 0;
* m_X = 1 − mmse_X (``overlap``); M(λ) = ∫_0^λ m_X (``integral``);
* ι_X(λ) = lim I(X; Y)/(ηd²) = ½∫_0^λ mmse_X = (λ − M(λ))/2 (``iota``): I-MMSE for a real channel,
  2ι' = mmse (the symmetric channel has 4ι' = mmse because its noise is GOE).

Representation as for the symmetric table: q(λ) = (1 + λ)·mmse_X on a log grid λ ∈ [λ_min, 1e4], cubic spline
in ln λ; below λ_min the series q = 1 − (η/γ²)λ³ + c₄λ⁴ (c₄ through the first grid value), above 1e4
λ·mmse = L∞ + Bλ^{−p}, L∞ = ρ(1 + η − ρ)/η, ρ = min(γ, η, 1) (:mod:`.rectangular_asymptotics`).
λ_min = 1e-2·min(1, (γ²/η)^{1/2}): the series is an expansion in λ·(η/γ²)^{1/2}.

η → 0 (a vanishing group of rows) is the iid Gaussian channel: mmse = 1/(1 + λ), ι = ½ ln(1 + λ)
(:class:`GaussianEntries`, no table).
"""

from __future__ import annotations

import math
import time

import numpy as np

from solvers.theories.matrix_denoising.build_cache import BuildOnceCache
from solvers.theories.matrix_denoising.rectangular_asymptotics import large_lambda_limit, small_lambda_q
from solvers.theories.matrix_denoising.rectangular_point import RectangularPoint, rectangular_mmse_points
from solvers.theories.matrix_denoising.table import (
    GRID_POINTS_PER_DECADE,
    LAM_MAX,
    SMALL_POINTS_PER_DECADE,
    OverlapTable,
)

#: Ratios the rectangular tables are built and tested for (γ = k/d, η = rows/d).
RATIO_RANGE = (1e-3, 1e3)
CACHE_SIZE = 32


class RectangularTable(OverlapTable):
    """mmse_X, m_X, m_X', M, ι_X = ½∫mmse_X and m_X^{-1} for one (γ, η). See the module docs."""

    IOTA_FACTOR = 0.5

    def __init__(self, gamma: float, eta: float, points: list[RectangularPoint], seconds: float = 0.0):
        self.eta = float(eta)
        super().__init__(gamma, "rectangular", points, seconds)  # type: ignore[arg-type]

    def _asymptotes(self) -> tuple[tuple[float, float], float]:
        return small_lambda_q(self.gamma, self.eta), large_lambda_limit(self.gamma, self.eta)


def lambda_min(gamma: float, eta: float) -> float:
    return 1e-2 * min(1.0, math.sqrt(gamma * gamma / eta))


def lambda_grid(gamma: float, eta: float, density: float = 1.0) -> np.ndarray:
    """Log grid: 22 points per decade up to λ = 1, 24 up to 100, 8 up to 1e4 (as the symmetric tables), the
    points below 100 multiplied by (1/(4ρ))^{1/3} ≤ 4 for a small rank ratio ρ = min(γ, η, 1)/max(η, 1):
    the noise bulk of a rank-deficient X splits off at λ ~ ρ, a weak singularity of mmse_X."""
    segments = [(lambda_min(gamma, eta), 1.0), (1.0, 1e2), (1e2, LAM_MAX)]
    rank = min(gamma, eta, 1.0) / max(eta, 1.0)
    narrow = min(4.0, max(1.0, float((0.25 / rank) ** (1.0 / 3.0))))
    per_decade = [SMALL_POINTS_PER_DECADE * narrow, GRID_POINTS_PER_DECADE[0] * narrow, GRID_POINTS_PER_DECADE[1]]
    pieces = []
    for (a, b), k in zip(segments, per_decade, strict=True):
        n = max(2, round(float(np.log10(b / a)) * k * density))
        pieces.append(np.logspace(np.log10(a), np.log10(b), n + 1)[:-1])
    return np.concatenate([*pieces, [LAM_MAX]])


def check_ratios(gamma: float, eta: float) -> None:
    lo, hi = RATIO_RANGE
    if not lo <= gamma <= hi:
        raise ValueError(f"gamma must be in [{lo:g}, {hi:g}] (inner dimension k/d)")
    if not lo <= eta <= hi:
        raise ValueError(f"eta must be in [{lo:g}, {hi:g}] (rows/d), or 0 for the iid Gaussian channel")


def build_rectangular_table(gamma: float, eta: float, density: float = 1.0) -> RectangularTable:
    """Compute a table from scratch (no cache)."""
    check_ratios(gamma, eta)
    t0 = time.perf_counter()
    points = rectangular_mmse_points(gamma, eta, lambda_grid(gamma, eta, density))
    return RectangularTable(gamma, eta, points, time.perf_counter() - t0)


_tables: BuildOnceCache[RectangularTable] = BuildOnceCache(build_rectangular_table, CACHE_SIZE)


def cached_rectangular_table(gamma: float, eta: float) -> RectangularTable | None:
    """The table for (γ, η) if it has been built in this process (never builds)."""
    return _tables.peek((float(gamma), float(eta)))


def get_rectangular_table(gamma: float, eta: float) -> RectangularTable | GaussianEntries:
    """The table for (γ, η), built once per process (LRU of CACHE_SIZE); η = 0 is the iid Gaussian channel."""
    if eta == 0.0:
        return GaussianEntries()
    return _tables.get((float(gamma), float(eta)))


class GaussianEntries:
    """The η → 0 limit: each entry an independent N(0, 1) observed at SNR λ (closed forms)."""

    IOTA_FACTOR = 0.5
    limit = 1.0

    @staticmethod
    def _arr(lam):
        arr = np.asarray(lam, dtype=float)
        if np.any(~(arr >= 0)):
            raise ValueError("snr lambda must be >= 0 (and not NaN)")
        return arr

    @staticmethod
    def _out(values: np.ndarray):
        return float(values) if np.ndim(values) == 0 else values

    def mmse(self, lam):
        return self._out(1.0 / (1.0 + self._arr(lam)))

    def overlap(self, lam):
        a = self._arr(lam)
        return self._out(a / (1.0 + a))

    def d_overlap(self, lam):
        return self._out(1.0 / (1.0 + self._arr(lam)) ** 2)

    def mmse_integral(self, lam):
        return self._out(np.log1p(self._arr(lam)))

    def integral(self, lam):
        a = self._arr(lam)
        return self._out(a - np.log1p(a))

    def iota(self, lam):
        return self._out(0.5 * np.log1p(self._arr(lam)))

    def inverse_overlap(self, m):
        m = np.asarray(m, dtype=float)
        if np.any(np.isnan(m)):
            raise ValueError("overlap must not be NaN")
        with np.errstate(divide="ignore"):
            out = np.where(m <= 0, 0.0, np.where(m >= 1, np.inf, m / np.maximum(1.0 - m, 1e-300)))
        return self._out(out)
