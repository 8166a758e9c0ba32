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
on a log-spaced grid λ ∈ [1e-2, 1e4] and interpolated by a cubic spline in ln λ. Below the grid the series
q = 1 − κ₃²λ² + c₃λ³ + c₄λ⁴ (κ₃ = E v³/√γ known; c₃, c₄ matching the spline's value and slope) gives
m_S ≈ λ − (1 − κ₃²)λ²; above it λ·mmse_S = L∞ + B λ^{−p} with L∞ = 2γ − γ² (γ < 1) or 1 (γ ≥ 1) and B, p
matching value and slope. M(λ) integrates this same interpolant (Gauss–Legendre per grid interval plus the
closed-form tail), so dM/dλ = m_S up to round-off.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
from scipy.interpolate import CubicSpline

from solvers.theories.matrix_denoising.asymptotics import large_lambda_limit, third_free_cumulant
from solvers.theories.matrix_denoising.point import PointResult, mmse_points
from solvers.theories.matrix_denoising.readouts import READOUTS

LAM_MIN = 1e-2
LAM_MAX = 1e4
GRID_SEGMENTS = ((LAM_MIN, 1e-1), (1e-1, 1e1), (1e1, 1e2), (1e2, LAM_MAX))
GRID_POINTS_PER_DECADE = (12, 18, 12, 8)
CACHE_SIZE = 32

_GL_X, _GL_W = np.polynomial.legendre.leggauss(16)


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
        self._spline = CubicSpline(self.u_grid, q)
        self._dspline = self._spline.derivative()
        self.kappa3 = third_free_cumulant(self.gamma, readout)
        self.limit = large_lambda_limit(self.gamma)
        self._fit_small()
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

    # ---- the pieces ----------------------------------------------------------------------------
    def _fit_small(self) -> None:
        """q = 1 − κ₃²λ² + c₃λ³ + c₄λ⁴ on [0, LAM_MIN], matching value and slope of the spline."""
        l0 = self.lam_grid[0]
        k2 = self.kappa3**2
        r0 = float(self._spline(self.u_grid[0])) - 1.0 + k2 * l0**2
        s0 = float(self._dspline(self.u_grid[0])) / l0 + 2.0 * k2 * l0
        A = np.array([[l0**3, l0**4], [3 * l0**2, 4 * l0**3]])
        self.c3, self.c4 = np.linalg.solve(A, [r0, s0])

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
        q = 1.0 - self.kappa3**2 * lam**2 + self.c3 * lam**3 + self.c4 * lam**4
        return q / (1.0 + lam)

    def _dmmse_small(self, lam: np.ndarray) -> np.ndarray:
        q = 1.0 - self.kappa3**2 * lam**2 + self.c3 * lam**3 + self.c4 * lam**4
        dq = -2.0 * self.kappa3**2 * lam + 3.0 * self.c3 * lam**2 + 4.0 * self.c4 * lam**3
        return dq / (1.0 + lam) - q / (1.0 + lam) ** 2

    def _regions(self, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if np.any(~np.isfinite(lam) & ~np.isposinf(lam)) or np.any(lam < 0):
            raise ValueError("snr lambda must be >= 0 (and not NaN)")
        small = lam < self.lam_grid[0]
        tail = lam > self.lam_grid[-1]
        return small, ~small & ~tail, tail

    # ---- public API ----------------------------------------------------------------------------
    def mmse(self, lam):
        """mmse_S(λ) = 1 − m_S(λ); equals 1 at λ = 0 and behaves as L∞/λ at large λ."""
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

    def overlap(self, lam):
        """m_S(λ) = 1 − mmse_S(λ), the overlap of the Bayes-optimal estimate of S̃ with S̃ (per entry)."""
        lam, scalar = _as_array(lam)
        return _out(1.0 - np.asarray(self.mmse(lam)), scalar)

    def d_overlap(self, lam):
        """dm_S/dλ = −dmmse_S/dλ (1 at λ = 0)."""
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
        lam, scalar = _as_array(lam)
        with np.errstate(invalid="ignore"):
            return _out(lam - np.asarray(self.mmse_integral(lam)), scalar)

    def iota(self, lam):
        """ι(λ) = lim (1/d²) I(S̃; Y_λ) = (λ − M(λ))/4 = (1/4)∫_0^λ mmse_S."""
        lam, scalar = _as_array(lam)
        return _out(0.25 * np.asarray(self.mmse_integral(lam)), scalar)

    def inverse_overlap(self, m):
        """λ with m_S(λ) = m, for m in [0, 1): 0 for m ≤ 0, +inf for m ≥ 1 (m_S(∞) = 1)."""
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
                bisect = np.where(np.isinf(hi), 2.0 * lam + 1.0, 0.5 * (lo + hi))
                inside = np.isfinite(newton) & (newton > lo) & (newton < hi)
                new = np.where(inside, newton, bisect)
                if np.all(np.abs(new - lam) <= 1e-14 * np.maximum(lam, 1e-300)):
                    lam = new
                    break
                lam = new
            out[work] = lam
        return _out(out, scalar)


def lambda_grid(density: float = 1.0) -> np.ndarray:
    """Log-spaced λ grid, densest where ln λ ↦ (1 + λ)·mmse bends most (0.1 ≲ λ ≲ 10).

    ``density`` multiplies the number of points of every segment (1 → 77 points).
    """
    pieces = []
    for (a, b), per_decade in zip(GRID_SEGMENTS, GRID_POINTS_PER_DECADE, strict=True):
        n = max(2, int(round(np.log10(b / a) * per_decade * density)))
        pieces.append(np.logspace(np.log10(a), np.log10(b), n + 1)[:-1])
    return np.concatenate([*pieces, [LAM_MAX]])


def build_table(gamma: float, readout: str, density: float = 1.0) -> OverlapTable:
    """Compute a table from scratch (no cache)."""
    if not gamma > 0 or not np.isfinite(gamma):
        raise ValueError("gamma must be > 0")
    if readout not in READOUTS:
        raise ValueError(f"unknown readout {readout!r}; expected one of {READOUTS}")
    t0 = time.perf_counter()
    points = mmse_points(gamma, readout, lambda_grid(density))
    return OverlapTable(gamma, readout, points, time.perf_counter() - t0)


_cache: OrderedDict[tuple[float, str], OverlapTable] = OrderedDict()
_lock = threading.Lock()
_building: dict[tuple[float, str], threading.Lock] = {}


def cached_table(gamma: float, readout: str) -> OverlapTable | None:
    """The table for (γ, readout) if it has been built in this process, else None (never builds)."""
    with _lock:
        return _cache.get((float(gamma), str(readout)))


def get_table(gamma: float, readout: str) -> OverlapTable:
    """The table for (γ, readout), built once per process and kept in an LRU of CACHE_SIZE entries."""
    key = (float(gamma), str(readout))
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
        key_lock = _building.setdefault(key, threading.Lock())
    with key_lock:  # one build per key even when several threads ask at once
        with _lock:
            hit = _cache.get(key)
        if hit is not None:
            return hit
        table = build_table(*key)
        with _lock:
            _cache[key] = table
            _cache.move_to_end(key)
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
            _building.pop(key, None)
        return table
