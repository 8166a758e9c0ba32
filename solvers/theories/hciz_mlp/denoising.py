"""The matrix-denoising channel as the HCIZ equations use it (adapter over ``matrix_denoising.table``).

Conventions (symmetric denoising of S̃ = Wᵀ diag(v) W/√(kd) from √λ·S̃ + GOE, see the table's module):

    m_S(λ) = 1 − mmse_S(λ),   M(λ) = ∫_0^λ m_S,   ι(λ) = (λ − M(λ))/4   (4 ι' = mmse_S).

Physical arguments are λ ≥ 0. Central finite differences of the saddle-point map at the universal
solution (τ = 0) probe λ slightly below 0, so m_S, mmse_S and m_S' are continued to λ < 0 by their
second-order Taylor polynomial at 0 (m_S(0) = 0, m_S'(0), m_S''(0) from the table). This keeps the map
C¹ at τ = 0, where the physical branch sits on the boundary of the domain.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

#: Step of the one-sided difference giving m_S''(0) from the table's m_S'.
CURVATURE_STEP = 1e-4


def load_table(gamma: float, readout: str) -> Any:
    """The cached m_S table for (γ, readout)."""
    from solvers.theories.matrix_denoising.table import get_table

    return get_table(float(gamma), readout)


@dataclass(frozen=True)
class Denoiser:
    """Vectorised mmse_S, m_S, m_S', ι and m_S^(-1) for one (γ, readout); the table is loaded on first use.

    Theories without a quadratic channel (μ2 = 0) never touch it, so they never pay for building it.
    """

    gamma: float
    readout: str

    @cached_property
    def table(self) -> Any:
        return load_table(self.gamma, self.readout)

    @cached_property
    def _origin(self) -> tuple[float, float]:
        """(m_S'(0), m_S''(0))."""
        d0, dh = np.asarray(self.table.d_overlap(np.array([0.0, CURVATURE_STEP])), dtype=float)
        return float(d0), float((dh - d0) / CURVATURE_STEP)

    def mmse(self, lam: np.ndarray | float) -> np.ndarray:
        lam = np.asarray(lam, dtype=float)
        neg = lam < 0
        if not np.any(neg):
            return np.asarray(self.table.mmse(lam), dtype=float)
        d1, d2 = self._origin
        out = 1.0 - d1 * lam - 0.5 * d2 * lam**2
        if not np.all(neg):
            out[~neg] = self.table.mmse(lam[~neg])
        return out

    def m(self, lam: np.ndarray | float) -> np.ndarray:
        return 1.0 - self.mmse(lam)

    def dm(self, lam: np.ndarray | float) -> np.ndarray:
        lam = np.asarray(lam, dtype=float)
        neg = lam < 0
        if not np.any(neg):
            return np.asarray(self.table.d_overlap(lam), dtype=float)
        d1, d2 = self._origin
        out = d1 + d2 * lam
        if not np.all(neg):
            out[~neg] = self.table.d_overlap(lam[~neg])
        return out

    def iota(self, lam: np.ndarray | float) -> np.ndarray:
        """ι(λ) = (λ − M(λ))/4 = ¼ ∫_0^λ mmse_S."""
        lam = np.asarray(lam, dtype=float)
        neg = lam < 0
        if not np.any(neg):
            return 0.25 * (lam - np.asarray(self.table.integral(lam), dtype=float))
        d1, d2 = self._origin
        out = 0.25 * (lam - 0.5 * d1 * lam**2 - d2 * lam**3 / 6.0)
        if not np.all(neg):
            out[~neg] = 0.25 * (lam[~neg] - np.asarray(self.table.integral(lam[~neg]), dtype=float))
        return out

    def inverse(self, target: float) -> float:
        """τ ≥ 0 with m_S(τ) = target (0 for target ≤ 0)."""
        if target <= 0.0:
            return 0.0
        return float(self.table.inverse_overlap(float(target)))
