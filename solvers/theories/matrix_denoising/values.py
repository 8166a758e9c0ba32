"""mmse, overlap and I-MMSE integral at one (γ, readout, λ), from the cached table or computed directly."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from solvers.core.errors import DomainError
from solvers.theories.matrix_denoising.point import mmse_points
from solvers.theories.matrix_denoising.table import GAMMA_RANGE, cached_table, get_table

#: Gauss–Legendre order of ∫_0^λ mmse in the variable u = ln(1 + t), where the integrand (1 + t)·mmse(t)
#: is bounded and smooth (between lim λ·mmse and 1).
DIRECT_IOTA_NODES = 48


@dataclass(frozen=True)
class DenoisingValues:
    mmse: float
    overlap: float
    overlap_integral: float  # M(λ) = ∫_0^λ m_S
    iota: float  # (1/d²) I(S̃; Y_λ) = (λ − M(λ))/4

    def as_observables(self) -> dict[str, float]:
        return {
            "mmse": self.mmse,
            "overlap": self.overlap,
            "iota": self.iota,
            "overlap_integral": self.overlap_integral,
        }


def direct_values(gamma: float, readout: str, snr: float) -> DenoisingValues:
    """Everything from quadratures of the spectral density at this γ (no table); memoised (lru_cache is
    thread-safe and keyed by the immutable inputs)."""
    return _direct_values(float(gamma), readout, float(snr))


@lru_cache(maxsize=4096)
def _direct_values(gamma: float, readout: str, snr: float) -> DenoisingValues:
    """Everything from quadratures of the spectral density at this γ (no table)."""
    if snr == 0:
        return DenoisingValues(1.0, 0.0, 0.0, 0.0)
    x, w = np.polynomial.legendre.leggauss(DIRECT_IOTA_NODES)
    umax = np.log1p(snr)
    u = 0.5 * umax * (x + 1.0)
    t = np.expm1(u)
    points = mmse_points(gamma, readout, np.concatenate([[snr], t]))
    mmse = points[0].mmse
    q = (1.0 + t) * np.array([p.mmse for p in points[1:]])
    integral_mmse = float(0.5 * umax * np.dot(w, q))
    return DenoisingValues(mmse, 1.0 - mmse, snr - integral_mmse, 0.25 * integral_mmse)


def table_values(gamma: float, readout: str, snr: float) -> DenoisingValues:
    t = get_table(gamma, readout)
    mmse = float(t.mmse(snr))
    M = float(t.integral(snr))
    return DenoisingValues(mmse, 1.0 - mmse, M, float(t.iota(snr)))


def values_at(gamma: float, readout: str, snr: float, use_table: bool = True) -> DenoisingValues:
    """Table values when asked for (or when the table already exists); direct quadrature otherwise."""
    if not GAMMA_RANGE[0] <= gamma <= GAMMA_RANGE[1]:
        raise DomainError(f"gamma must be in [{GAMMA_RANGE[0]:g}, {GAMMA_RANGE[1]:g}]")
    if not 0.0 <= snr < np.inf:
        raise DomainError("snr must be finite and >= 0")
    if use_table or cached_table(gamma, readout) is not None:
        return table_values(gamma, readout, snr)
    return direct_values(gamma, readout, snr)


# ---- rectangular shape ---------------------------------------------------------------------------------
def direct_rectangular_values(gamma: float, eta: float, snr: float) -> DenoisingValues:
    """Rectangular mmse_X, m_X, M and ι_X = ½∫_0^λ mmse_X from quadratures at this (γ, η) (no table); memoised
    (lru_cache is thread-safe and keyed by the immutable inputs)."""
    return _direct_rectangular_values(float(gamma), float(eta), float(snr))


@lru_cache(maxsize=4096)
def _direct_rectangular_values(gamma: float, eta: float, snr: float) -> DenoisingValues:
    from solvers.theories.matrix_denoising.rectangular_point import rectangular_mmse_points

    if snr == 0:
        return DenoisingValues(1.0, 0.0, 0.0, 0.0)
    x, w = np.polynomial.legendre.leggauss(DIRECT_IOTA_NODES)
    umax = np.log1p(snr)
    t = np.expm1(0.5 * umax * (x + 1.0))
    points = rectangular_mmse_points(gamma, eta, np.concatenate([[snr], t]))
    q = (1.0 + t) * np.array([p.mmse for p in points[1:]])
    integral_mmse = float(0.5 * umax * np.dot(w, q))
    mmse = points[0].mmse
    return DenoisingValues(mmse, 1.0 - mmse, snr - integral_mmse, 0.5 * integral_mmse)


def rectangular_values_at(gamma: float, eta: float, snr: float, use_table: bool = True) -> DenoisingValues:
    """Rectangular values from the (γ, η) table when asked for (or when it exists), else by direct quadrature."""
    from solvers.theories.matrix_denoising.rectangular_table import (
        RATIO_RANGE,
        cached_rectangular_table,
        get_rectangular_table,
    )

    lo, hi = RATIO_RANGE
    if not (lo <= gamma <= hi and lo <= eta <= hi):
        raise DomainError(f"gamma and eta must be in [{lo:g}, {hi:g}]")
    if not 0.0 <= snr < np.inf:
        raise DomainError("snr must be finite and >= 0")
    if use_table or cached_rectangular_table(gamma, eta) is not None:
        t = get_rectangular_table(gamma, eta)
        mmse = float(t.mmse(snr))
        return DenoisingValues(mmse, 1.0 - mmse, float(t.integral(snr)), float(t.iota(snr)))
    return direct_rectangular_values(gamma, eta, snr)
