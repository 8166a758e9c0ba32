"""mmse_S(λ) at one signal-to-noise ratio, directly from the spectral density of Y_λ = √λ S̃ + Z:

    mmse_S(λ) = (1/λ)·[1 − (4π²/3) ∫ ρ_{Y_λ}(x)³ dx]

(the error of the optimal rotation-invariant estimator, Bun–Bouchaud–Potters; in noise-variance units
Δ = 1/λ it reads Δ − (4π²/3) Δ² ∫ρ³ for S̃ + √Δ Z). The bracket cancels as λ → 0, so this direct
formula loses accuracy like (quadrature error)/λ; the table uses the small-λ series below 1e-2·min(1, 2γ).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from solvers.theories.matrix_denoising.quadrature import PowerIntegrals, integrate_powers_many
from solvers.theories.matrix_denoising.readouts import law
from solvers.theories.matrix_denoising.stieltjes import ObservationSpectrum

FOUR_PI2_3 = 4.0 * np.pi**2 / 3.0


@dataclass(frozen=True)
class PointResult:
    """mmse_S at one λ with the checks that come for free from the same quadrature."""

    lam: float
    mmse: float
    fisher: float  # (4π²/3)∫ρ³, the free Fisher information of Y_λ
    mass_error: float  # ∫ρ − 1
    mean_error: float  # ∫xρ − √(λγ) E v
    second_moment_error: float  # ∫x²ρ − [λ(1 + γ (E v)²) + 1]
    converged: bool
    evaluations: int
    seconds: float

    @property
    def overlap(self) -> float:
        return 1.0 - self.mmse

    @property
    def ok(self) -> bool:
        """Quadrature converged and the density integrates to one with the right first two moments."""
        scale = 1.0 + self.lam
        return (
            self.converged
            and abs(self.mass_error) < 1e-9
            and abs(self.mean_error) < 1e-8 * np.sqrt(scale)
            and abs(self.second_moment_error) < 1e-7 * scale
        )


def spectrum(gamma: float, readout: str, lam: float | np.ndarray) -> ObservationSpectrum:
    return ObservationSpectrum(law(readout), float(gamma), lam)


def _result(sp: ObservationSpectrum, r: PowerIntegrals, seconds: float) -> PointResult:
    lam = float(sp.lam)
    fisher = FOUR_PI2_3 * r.cube
    return PointResult(
        lam=lam,
        mmse=float(1.0 if lam == 0 else (1.0 - fisher) / lam),
        fisher=float(fisher),
        mass_error=r.mass - 1.0,
        mean_error=r.first - float(sp.mean),
        second_moment_error=r.second - float(sp.second_moment),
        converged=r.converged,
        evaluations=r.evaluations,
        seconds=seconds,
    )


def mmse_points(gamma: float, readout: str, lams: np.ndarray, rel_tol: float = 1e-12) -> list[PointResult]:
    """mmse_S at many λ ≥ 0 in one vectorised quadrature (``seconds`` is the share of the batch's time)."""
    t0 = time.perf_counter()
    lams = np.asarray(lams, dtype=float).ravel()
    if np.any(~(lams >= 0)):
        raise ValueError("lam must be >= 0")
    family = spectrum(gamma, readout, lams)
    integrals = integrate_powers_many(family, rel_tol)
    share = (time.perf_counter() - t0) / max(lams.size, 1)
    return [_result(spectrum(gamma, readout, float(lam)), r, share) for lam, r in zip(lams, integrals, strict=True)]


def mmse_point(gamma: float, readout: str, lam: float, rel_tol: float = 1e-12) -> PointResult:
    """mmse_S(λ) by quadrature of ρ_Y³ (λ > 0; λ = 0 gives exactly 1)."""
    return mmse_points(gamma, readout, np.array([lam]), rel_tol)[0]
