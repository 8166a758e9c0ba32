"""Tabulated overlap m_S(λ) of extensive-rank symmetric matrix denoising, smooth for all λ ≥ 0.

Conventions (those of the HCIZ theory of extensive-width networks):

* S̃ = W^T diag(v) W / √(k d), W ∈ R^{k×d} with iid unit-variance entries, k = γ d, readouts v ~ P_v with
  E v² = 1 (``readout``). Equivalently S̃ = S₂/√d with S₂ = W^T diag(v) W/√k. Its spectral law has variance 1
  and mean √γ·E v, so (1/d) Tr S̃² → R_d = 1 + γ (E v)².
* Channel Y_λ = √λ S̃ + Z, Z from the GOE normalised to the semicircle on [−2, 2] (off-diagonal variance
  1/d, diagonal 2/d); λ ≥ 0 is the signal-to-noise ratio.
* mmse_S(λ) = lim (1/d) E‖S̃ − E[S̃|Y_λ]‖_F² = lim (1/d²) E‖S₂ − E[S₂|Y_λ]‖_F² — the error per entry in units of
  the per-entry variance 1/d. The known mean of S̃ is not counted as error, so mmse_S(0) = 1 for every readout.
  Computed as (1/λ)[1 − (4π²/3)∫ρ_{Y_λ}³].
* m_S(λ) = 1 − mmse_S(λ) ∈ [0, 1), increasing; the HCIZ overlap is R₂ = R_d − mmse_S = m_S + γ (E v)².
* M(λ) = ∫_0^λ m_S(t) dt (``integral``).
* ι(λ) = lim (1/d²) I(S̃; Y_λ) = (1/4)∫_0^λ mmse_S = (λ − M(λ))/4 (``iota``), by the I-MMSE relation 4ι' = mmse_S.

Representation: q(λ) = (1 + λ)·mmse_S(λ) (bounded: q(0) = 1, q(∞) = lim λ·mmse_S) is computed by quadrature
on a log-spaced grid λ ∈ [1e-2·min(1, 2γ), 1e4] and interpolated by a cubic spline in ln λ. Below the grid
the series q = 1 − κ₃²λ² + (3κ₃² − κ₄²)λ³ + c₄λ⁴ (free cumulants κ₃ = E v³/√γ, κ₄ = E v⁴/γ; c₄ through the
first tabulated value, the spline clamped to the series' slope there), i.e.
m_S = λ − (1 − κ₃²)λ² + (1 − 4κ₃² + κ₄²)λ³ + O(λ⁴). Above it λ·mmse_S = L∞ + B λ^{−p} with L∞ = 2γ − γ²
(γ < 1) or 1 (γ ≥ 1), B and p matching value and slope. M(λ) integrates this same interpolant
(Gauss–Legendre per grid interval plus the closed-form tail), so dM/dλ = m_S up to round-off.
"""

from __future__ import annotations

import bisect
import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.interpolate import CubicSpline

from solvers.theories.matrix_denoising.asymptotics import large_lambda_limit, small_lambda_q
from solvers.theories.matrix_denoising.build_cache import BuildOnceCache
from solvers.theories.matrix_denoising.point import PointResult, mmse_points
from solvers.theories.matrix_denoising.readouts import READOUTS

LAM_MIN = 1e-2  # first grid point for γ ≥ 1/2; smaller for narrower networks (see lambda_min)
LAM_MAX = 1e4
#: Width ratios the tables are built and tested for (narrower networks need ever more grid points).
GAMMA_RANGE = (1e-3, 1e3)
GRID_SEGMENTS = ((1e0, 1e2), (1e2, LAM_MAX))  # above λ = 1; below it, from lambda_min(γ) to 1
GRID_POINTS_PER_DECADE = (24, 8)
SMALL_POINTS_PER_DECADE = 22
CACHE_SIZE = 32

_GL_X, _GL_W = np.polynomial.legendre.leggauss(16)
_GL_XL, _GL_WL = [float(v) for v in _GL_X], [float(v) for v in _GL_W]


@dataclass(frozen=True)
class TableDiagnostics:
    """How the table was built and how well its quadratures passed their own checks."""

    seconds: float
    points: int
    all_points_ok: bool
    worst_mass_error: float
    worst_second_moment_error: float
    tail_exponent: float
    tail_matched: bool
    failed_lambdas: tuple[float, ...] = field(default_factory=tuple)


def _as_array(lam) -> tuple[np.ndarray, bool]:
    arr = np.asarray(lam, dtype=float)
    return arr, arr.ndim == 0


def _out(values: np.ndarray, scalar: bool):
    return float(values) if scalar else values


class OverlapTable:
    """m_S(λ), mmse_S(λ), dm_S/dλ, M(λ) = ∫_0^λ m_S, ι(λ) and m_S^{-1} for one (γ, readout). See module docs."""

    def __init__(self, gamma: float, readout: str, points: list[PointResult], seconds: float = 0.0):
        self.gamma = float(gamma)
        self.readout = readout
        self.points = points
        lam = np.array([p.lam for p in points])
        self.lam_grid = lam
        self.u_grid = np.log(lam)
        q = (1.0 + lam) * np.array([p.mmse for p in points])
        self.q_grid = q
        self.small_q, self.limit = self._asymptotes()
        self._fit_small(float(lam[0]), float(q[0]))
        # Clamp the spline's slope at the first point to that of the small-λ series: the two pieces then
        # join with a continuous first derivative, and the spline's end slope is not left to extrapolation.
        slope_u = float(lam[0] * self._dq_small(lam[0]))
        self._spline = CubicSpline(self.u_grid, q, bc_type=((1, slope_u), "not-a-knot"))
        self._dspline = self._spline.derivative()
        # Plain-Python copies for the scalar fast path (a CubicSpline call costs ~20 µs of overhead).
        self._knots = [float(u) for u in self.u_grid]
        self._coef = [tuple(float(c) for c in col) for col in self._spline.c.T]
        self._fit_tail()
        self._cumulate()
        bad = [p.lam for p in points if not p.ok]
        self.diagnostics = TableDiagnostics(
            seconds=seconds,
            points=len(points),
            all_points_ok=not bad,
            worst_mass_error=float(max(abs(p.mass_error) for p in points)),
            worst_second_moment_error=float(max(abs(p.second_moment_error) / (1 + p.lam) for p in points)),
            tail_exponent=self.tail_p,
            tail_matched=self.tail_matched,
            failed_lambdas=tuple(bad),
        )

    #: ι = IOTA_FACTOR·∫_0^λ mmse (I-MMSE: 4ι' = mmse for the symmetric channel).
    IOTA_FACTOR = 0.25

    def _asymptotes(self) -> tuple[tuple[float, float], float]:
        """((a₂, a₃) of q = (1 + λ)mmse = 1 − a₂λ² + a₃λ³ + …, lim λ·mmse): the pieces beyond the grid."""
        return small_lambda_q(self.gamma, self.readout), large_lambda_limit(self.gamma)

    # ---- the pieces ----------------------------------------------------------------------------
    def _fit_small(self, l0: float, q0: float) -> None:
        """q = 1 − a₂λ² + a₃λ³ + c₄λ⁴ below the grid: a₂, a₃ from the free cumulants (see
        :mod:`.asymptotics`), c₄ so that the series passes through the first tabulated value."""
        a2, a3 = self.small_q
        self.c4 = (q0 - (1.0 - a2 * l0**2 + a3 * l0**3)) / l0**4

    def _q_small(self, lam):
        a2, a3 = self.small_q
        return 1.0 - a2 * lam**2 + a3 * lam**3 + self.c4 * lam**4

    def _dq_small(self, lam):
        a2, a3 = self.small_q
        return -2.0 * a2 * lam + 3.0 * a3 * lam**2 + 4.0 * self.c4 * lam**3

    def _fit_tail(self) -> None:
        """λ·mmse = L∞ + B λ^{−p} beyond the grid, matching value and slope at the last point."""
        l1 = self.lam_grid[-1]
        q1 = float(self._spline(self.u_grid[-1]))
        dq1 = float(self._dspline(self.u_grid[-1])) / l1
        A = l1 * q1 / (1.0 + l1)
        dA = q1 / (1.0 + l1) ** 2 + l1 * dq1 / (1.0 + l1)
        gap = A - self.limit
        p = -dA * l1 / gap if gap != 0 else np.nan
        self.tail_matched = bool(np.isfinite(p) and 0.05 < p < 5.0)
        self.tail_p = float(p) if self.tail_matched else 1.0
        self.tail_B = gap * l1**self.tail_p

    def _cumulate(self) -> None:
        """∫_0^{λ_i} mmse at every grid point (Gauss–Legendre on each interval of the interpolant)."""
        l0 = self.lam_grid[0]
        first = float(np.sum(0.5 * l0 * _GL_W * self._mmse_small(0.5 * l0 * (_GL_X + 1.0))))
        u = self.u_grid
        h = np.diff(u)
        uu = u[:-1, None] + 0.5 * h[:, None] * (_GL_X[None, :] + 1.0)
        ll = np.exp(uu)
        integrand = self._spline(uu) / (1.0 + ll) * ll
        pieces = (0.5 * h[:, None] * _GL_W[None, :] * integrand).sum(1)
        self._cum = np.concatenate([[first], first + np.cumsum(pieces)])

    def _mmse_small(self, lam: np.ndarray) -> np.ndarray:
        return self._q_small(lam) / (1.0 + lam)

    def _dmmse_small(self, lam: np.ndarray) -> np.ndarray:
        return self._dq_small(lam) / (1.0 + lam) - self._q_small(lam) / (1.0 + lam) ** 2

    def _regions(self, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if np.any(~np.isfinite(lam) & ~np.isposinf(lam)) or np.any(lam < 0):
            raise ValueError("snr lambda must be >= 0 (and not NaN)")
        small = lam < self.lam_grid[0]
        tail = lam > self.lam_grid[-1]
        return small, ~small & ~tail, tail

    # ---- scalar fast path ------------------------------------------------------------------------
    def _q_scalar(self, u: float) -> tuple[float, float]:
        """(q, dq/du) of the spline at one u = ln λ inside the grid."""
        i = min(max(bisect.bisect_right(self._knots, u) - 1, 0), len(self._coef) - 1)
        h = u - self._knots[i]
        c0, c1, c2, c3 = self._coef[i]
        return ((c0 * h + c1) * h + c2) * h + c3, (3.0 * c0 * h + 2.0 * c1) * h + c2

    @staticmethod
    def _check_scalar(lam: float) -> float:
        lam = float(lam)
        if not lam >= 0.0:
            raise ValueError("snr lambda must be >= 0 (and not NaN)")
        return lam

    def _mmse_scalar(self, lam: float) -> tuple[float, float]:
        """(mmse, dmmse/dλ) at one λ ≥ 0."""
        if lam < self.lam_grid[0]:
            q, dq = self._q_small(lam), self._dq_small(lam)
        elif lam > self.lam_grid[-1]:
            if math.isinf(lam):
                return 0.0, 0.0
            p, B, L = self.tail_p, self.tail_B, self.limit
            return (L + B * lam ** (-p)) / lam, -L / lam**2 - (1.0 + p) * B * lam ** (-p - 2.0)
        else:
            q, dq_du = self._q_scalar(math.log(lam))
            dq = dq_du / lam
        return q / (1.0 + lam), dq / (1.0 + lam) - q / (1.0 + lam) ** 2

    def _mmse_integral_scalar(self, lam: float) -> float:
        l0, l1 = float(self.lam_grid[0]), float(self.lam_grid[-1])
        if lam < l0:
            return sum(
                0.5 * lam * w * self._mmse_scalar(0.5 * lam * (x + 1.0))[0] for x, w in zip(_GL_XL, _GL_WL, strict=True)
            )
        if lam > l1:
            if math.isinf(lam):
                return math.inf if self.limit > 0 else float(self._cum[-1])
            p, B, L = self.tail_p, self.tail_B, self.limit
            return float(self._cum[-1]) + L * math.log(lam / l1) + (B / p) * (l1 ** (-p) - lam ** (-p))
        u = math.log(lam)
        i = min(max(bisect.bisect_right(self._knots, u) - 1, 0), len(self._coef) - 1)
        u0 = self._knots[i]
        h = u - u0
        acc = 0.0
        for x, w in zip(_GL_XL, _GL_WL, strict=True):
            uu = u0 + 0.5 * h * (x + 1.0)
            ll = math.exp(uu)
            acc += w * self._q_scalar(uu)[0] / (1.0 + ll) * ll
        return float(self._cum[i]) + 0.5 * h * acc

    # ---- public API ----------------------------------------------------------------------------
    def mmse(self, lam):
        """mmse_S(λ) = 1 − m_S(λ); equals 1 at λ = 0 and behaves as L∞/λ at large λ."""
        if _is_scalar(lam):
            return self._mmse_scalar(self._check_scalar(lam))[0]
        lam, scalar = _as_array(lam)
        small, mid, tail = self._regions(lam)
        out = np.empty_like(lam)
        out[small] = self._mmse_small(lam[small])
        lm = lam[mid]
        out[mid] = self._spline(np.log(lm)) / (1.0 + lm)
        lt = lam[tail]
        with np.errstate(divide="ignore", invalid="ignore"):
            out[tail] = np.where(np.isinf(lt), 0.0, (self.limit + self.tail_B * lt ** (-self.tail_p)) / lt)
        return _out(out, scalar)

    def mmse_and_slope(self, lam: float) -> tuple[float, float]:
        """(mmse(λ), dmmse/dλ) at one λ ≥ 0 in one evaluation (the inner loops of moment matching)."""
        return self._mmse_scalar(self._check_scalar(lam))

    def overlap(self, lam):
        """m_S(λ) = 1 − mmse_S(λ), the overlap of the Bayes-optimal estimate of S̃ with S̃ (per entry)."""
        if _is_scalar(lam):
            return 1.0 - self._mmse_scalar(self._check_scalar(lam))[0]
        lam, scalar = _as_array(lam)
        return _out(1.0 - np.asarray(self.mmse(lam)), scalar)

    def d_overlap(self, lam):
        """dm_S/dλ = −dmmse_S/dλ (1 at λ = 0)."""
        if _is_scalar(lam):
            return -self._mmse_scalar(self._check_scalar(lam))[1]
        lam, scalar = _as_array(lam)
        small, mid, tail = self._regions(lam)
        out = np.empty_like(lam)
        out[small] = -self._dmmse_small(lam[small])
        lm = lam[mid]
        um = np.log(lm)
        q = self._spline(um)
        dq = self._dspline(um) / lm
        out[mid] = -(dq / (1.0 + lm) - q / (1.0 + lm) ** 2)
        lt = lam[tail]
        p, B, L = self.tail_p, self.tail_B, self.limit
        with np.errstate(divide="ignore", invalid="ignore"):
            out[tail] = np.where(np.isinf(lt), 0.0, L / lt**2 + (1.0 + p) * B * lt ** (-p - 2.0))
        return _out(out, scalar)

    def mmse_integral(self, lam):
        """∫_0^λ mmse_S(t) dt (= 4 ι(λ))."""
        if _is_scalar(lam):
            return self._mmse_integral_scalar(self._check_scalar(lam))
        lam, scalar = _as_array(lam)
        small, mid, tail = self._regions(lam)
        out = np.empty_like(lam)
        ls = lam[small]
        if ls.size:
            t = 0.5 * ls[:, None] * (_GL_X[None, :] + 1.0)
            out[small] = (0.5 * ls[:, None] * _GL_W[None, :] * self._mmse_small(t)).sum(1)
        lm = lam[mid]
        if lm.size:
            um = np.log(lm)
            i = np.clip(np.searchsorted(self.u_grid, um, side="right") - 1, 0, self.u_grid.size - 2)
            u0 = self.u_grid[i]
            h = um - u0
            uu = u0[:, None] + 0.5 * h[:, None] * (_GL_X[None, :] + 1.0)
            ll = np.exp(uu)
            integrand = self._spline(uu) / (1.0 + ll) * ll
            out[mid] = self._cum[i] + (0.5 * h[:, None] * _GL_W[None, :] * integrand).sum(1)
        lt = lam[tail]
        if lt.size:
            l1 = self.lam_grid[-1]
            p, B, L = self.tail_p, self.tail_B, self.limit
            with np.errstate(divide="ignore", invalid="ignore"):
                out[tail] = self._cum[-1] + L * np.log(lt / l1) + (B / p) * (l1 ** (-p) - lt ** (-p))
        return _out(out, scalar)

    def integral(self, lam):
        """M(λ) = ∫_0^λ m_S(t) dt = λ − ∫_0^λ mmse_S."""
        if _is_scalar(lam):
            lam = self._check_scalar(lam)
            return lam - self._mmse_integral_scalar(lam) if not math.isinf(lam) else math.inf
        lam, scalar = _as_array(lam)
        with np.errstate(invalid="ignore"):
            return _out(lam - np.asarray(self.mmse_integral(lam)), scalar)

    def iota(self, lam):
        """ι(λ) = lim (1/d²) I(S̃; Y_λ) = (λ − M(λ))/4 = (1/4)∫_0^λ mmse_S."""
        if _is_scalar(lam):
            return self.IOTA_FACTOR * self._mmse_integral_scalar(self._check_scalar(lam))
        lam, scalar = _as_array(lam)
        return _out(self.IOTA_FACTOR * np.asarray(self.mmse_integral(lam)), scalar)

    def inverse_overlap(self, m):
        """λ with m_S(λ) = m, for m in [0, 1): 0 for m ≤ 0, +inf for m ≥ 1 (m_S(∞) = 1)."""
        if _is_scalar(m):
            return self._inverse_scalar(float(m))
        m, scalar = _as_array(m)
        if np.any(np.isnan(m)):
            raise ValueError("overlap must not be NaN")
        out = np.zeros_like(m)
        inf = m >= 1.0
        out[inf] = np.inf
        work = (m > 0.0) & ~inf
        target = m[work]
        if target.size:
            lam = target / (1.0 - target)  # exact for a Gaussian (GOE) prior, a good start otherwise
            lo = np.zeros_like(target)
            hi = np.full_like(target, np.inf)
            for _ in range(200):
                f = np.asarray(self.overlap(lam)) - target
                lo = np.where(f < 0, lam, lo)
                hi = np.where(f >= 0, lam, hi)
                d = np.asarray(self.d_overlap(lam))
                with np.errstate(divide="ignore", invalid="ignore"):
                    newton = lam - f / d
                halved = np.where(np.isinf(hi), 2.0 * lam + 1.0, 0.5 * (lo + hi))
                inside = np.isfinite(newton) & (newton > lo) & (newton < hi)
                new = np.where(inside, newton, halved)
                if np.all(np.abs(new - lam) <= 1e-14 * np.maximum(lam, 1e-300)):
                    lam = new
                    break
                lam = new
            out[work] = lam
        return _out(out, scalar)

    def _inverse_scalar(self, target: float) -> float:
        if math.isnan(target):
            raise ValueError("overlap must not be NaN")
        if target <= 0.0:
            return 0.0
        if target >= 1.0:
            return math.inf
        lam, lo, hi = target / (1.0 - target), 0.0, math.inf
        for _ in range(200):
            mmse, dmmse = self._mmse_scalar(lam)
            f = (1.0 - mmse) - target
            if f < 0:
                lo = lam
            else:
                hi = lam
            new = lam + f / dmmse if dmmse != 0 else math.nan  # Newton on m_S, m_S' = −mmse'
            if not (lo < new < hi):
                new = 2.0 * lam + 1.0 if math.isinf(hi) else 0.5 * (lo + hi)
            if abs(new - lam) <= 1e-14 * lam:
                return new
            lam = new
        return lam


def _is_scalar(value) -> bool:
    return isinstance(value, (float, int)) and not isinstance(value, bool)


def lambda_min(gamma: float) -> float:
    """First grid point. The small-λ series is an expansion in λ/γ (κ_n(S̃) ∝ γ^{1−n/2}), so it starts at
    1e-2·min(1, 2γ); the direct formula there still has an absolute error ≲ 1e-12/λ."""
    return LAM_MIN * min(1.0, 2.0 * gamma)


def lambda_grid(gamma: float = 1.0, density: float = 1.0) -> np.ndarray:
    """Log-spaced λ grid, densest where ln λ ↦ (1 + λ)·mmse bends most (more so as γ decreases, the free
    cumulants of S̃ growing like γ^{1−n/2}) and where the support of ρ_Y splits into several intervals
    (1 ≲ λ ≲ 100); for γ < 1/4 the points below λ = 100 grow like γ^{−1/3}. ``density`` scales every segment
    (γ ≥ 1/4: 109 points)."""
    segments = [(lambda_min(gamma), 1e0), *GRID_SEGMENTS]
    # Narrow networks: the components of ρ_Y split off at λ ~ γ, each split a weak singularity of mmse.
    # More points there (×(1/4γ)^{1/3}, capped at 4: beyond that builds get long and accuracy degrades).
    narrow = min(4.0, max(1.0, float((0.25 / gamma) ** (1.0 / 3.0))))
    per_decade = [SMALL_POINTS_PER_DECADE * narrow, GRID_POINTS_PER_DECADE[0] * narrow, GRID_POINTS_PER_DECADE[1]]
    pieces = []
    for (a, b), k in zip(segments, per_decade, strict=True):
        n = max(2, round(float(np.log10(b / a)) * k * density))
        pieces.append(np.logspace(np.log10(a), np.log10(b), n + 1)[:-1])
    return np.concatenate([*pieces, [LAM_MAX]])


def build_table(gamma: float, readout: str, density: float = 1.0) -> OverlapTable:
    """Compute a table from scratch (no cache)."""
    if not GAMMA_RANGE[0] <= gamma <= GAMMA_RANGE[1]:
        raise ValueError(f"gamma must be in [{GAMMA_RANGE[0]:g}, {GAMMA_RANGE[1]:g}] (width ratio k/d)")
    if readout not in READOUTS:
        raise ValueError(f"unknown readout {readout!r}; expected one of {READOUTS}")
    t0 = time.perf_counter()
    points = mmse_points(gamma, readout, lambda_grid(gamma, density))
    return OverlapTable(gamma, readout, points, time.perf_counter() - t0)


_tables: BuildOnceCache[OverlapTable] = BuildOnceCache(build_table, CACHE_SIZE)


def cached_table(gamma: float, readout: str) -> OverlapTable | None:
    """The table for (γ, readout) if it has been built in this process, else None (never builds)."""
    return _tables.peek((float(gamma), str(readout)))


def get_table(gamma: float, readout: str) -> OverlapTable:
    """The table for (γ, readout), built once per process and kept in an LRU of CACHE_SIZE entries."""
    return _tables.get((float(gamma), str(readout)))
