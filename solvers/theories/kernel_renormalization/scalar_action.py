"""The effective action with one scalar Q̄ per hidden layer, in the eigenbasis of the kernel.

    S({Q̄_ℓ}) = Σ_ℓ (Q̄_ℓ − log Q̄_ℓ) + φ(u),   u = Π_ℓ Q̄_ℓ,
    φ(u)     = (1/N1) [ Σ_i log(T + u κ_i) + Σ_i ỹ_i² / (T + u κ_i) ]

with κ_i the eigenvalues of the readout NNGP kernel K^(L) (1/λ factors included) and ỹ = Uᵀy.
L = 1 is Pacelli et al.'s one-hidden-layer action (exponent −(N1/2) S); L > 1 is the "vanilla"
deep action. Variables are s_ℓ = log Q̄_ℓ, so the residual ∂S/∂s_ℓ = Q̄_ℓ − 1 + g(u) with
g(u) = u φ'(u) never divides by Q̄ and a root bracket in s is a bracket in log Q̄.

Since ∂S/∂s_ℓ − ∂S/∂s_m = Q̄_ℓ − Q̄_m, every stationary point is symmetric (Q̄_ℓ = q): the
exhaustive search is a 1-D sign scan of h(s) = e^s − 1 + g(e^{Ls}).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

#: Scan window of searches without a proven root interval (the mean-corrected action), in log Q̄.
SCAN_LOG_RANGE = (np.log(1e-10), np.log(1e10))
#: Density of every sign scan.
SCAN_POINTS_PER_DECADE = 20


@dataclass(frozen=True)
class ScalarAction:
    kappa: np.ndarray  # eigenvalues of K^(L), ≥ 0
    y2: np.ndarray  # ỹ²
    T: float
    N1: float
    depth: int

    @property
    def alpha(self) -> float:
        return self.kappa.size / self.N1

    # ---- φ and its log-derivatives (vectorised over u) ---------------------------------------
    def _ratios(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """r = uκ/(T + uκ) ∈ [0, 1] and 1/(T + uκ), shape (..., P)."""
        uk = np.multiply.outer(u, self.kappa)
        inv_a = 1.0 / (self.T + uk)
        return uk * inv_a, inv_a

    def phi(self, u: float | np.ndarray) -> np.ndarray:
        a = self.T + np.multiply.outer(np.asarray(u, dtype=float), self.kappa)
        return (np.log(a).sum(axis=-1) + (self.y2 / a).sum(axis=-1)) / self.N1

    def g(self, u: float | np.ndarray) -> np.ndarray:
        """u φ'(u) = (1/N1) [Σ r_i − Σ ỹ_i² r_i/a_i]."""
        r, inv_a = self._ratios(np.asarray(u, dtype=float))
        return (r.sum(axis=-1) - (self.y2 * r * inv_a).sum(axis=-1)) / self.N1

    def dg(self, u: float) -> float:
        """d g / d log u = u φ' + u² φ''."""
        r, inv_a = self._ratios(np.asarray(u, dtype=float))
        first = r.sum() - (self.y2 * r * inv_a).sum()
        second = -(r * r).sum() + 2.0 * (self.y2 * r * r * inv_a).sum()
        return float((first + second) / self.N1)

    # ---- S and its derivatives in s = log Q̄ ---------------------------------------------------
    def value(self, s: np.ndarray) -> float:
        q = np.exp(s)
        return float(np.sum(q - s) + self.phi(float(np.exp(np.sum(s)))))

    def gradient(self, s: np.ndarray) -> np.ndarray:
        return np.exp(s) - 1.0 + float(self.g(float(np.exp(np.sum(s)))))

    def hessian(self, s: np.ndarray) -> np.ndarray:
        L = s.size
        return np.diag(np.exp(s)) + self.dg(float(np.exp(np.sum(s)))) * np.ones((L, L))

    def symmetric_residual(self, s: np.ndarray | float) -> np.ndarray:
        """h(s) = e^s − 1 + g(e^{L s}): ∂S/∂s_ℓ on the symmetric line Q̄_ℓ = e^s."""
        s = np.asarray(s, dtype=float)
        return np.exp(s) - 1.0 + self.g(np.exp(self.depth * s))

    # ---- T = 0 ---------------------------------------------------------------------------------
    def closed_form(self) -> float:
        """The T = 0 root: q^(L+1) − (1 − α) q^L − c = 0, c = ỹᵀκ^(-1)ỹ/N1; one positive root (Descartes)."""
        c = float(np.sum(self.y2 / self.kappa)) / self.N1
        b = 1.0 - self.alpha
        if self.depth == 1:
            root = np.sqrt(b * b + 4.0 * c)
            # the two algebraically equal forms; each avoids cancellation on its side of b = 0
            return float(0.5 * (b + root)) if b >= 0 else float(2.0 * c / (root - b))
        L = self.depth

        def poly(s: float) -> float:  # in s = log q, divided by q^L: q − (1 − α) − c q^(−L)
            return np.exp(s) - b - c * np.exp(-L * s)

        lo, hi = -1.0, 1.0
        while poly(lo) > 0:
            lo *= 2.0
        while poly(hi) < 0:
            hi *= 2.0
        return float(np.exp(brentq(poly, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps)))

    # ---- exhaustive search ----------------------------------------------------------------------
    def root_interval(self) -> tuple[float, float]:
        """An interval of log Q̄ outside which h(s) has no root (T > 0), with h(lo) < 0 < h(hi).

        Below: g(u) ≤ u Σκ/(N1 T) and u = q^L ≤ q for q ≤ 1, so h < 0 for q < 1/(1 + Σκ/(N1 T)).
        Above: ỹ² r/a ≤ ỹ² min(1/(4T), 1/(uκ)), so h > 0 for q > 1 + min(Σỹ²/(4 N1 T), Σ_{κ>0} ỹ²/(N1 κ)).
        """
        positive = self.kappa > 0
        t = float(self.kappa.sum()) / (self.N1 * self.T)
        c = float(np.sum(self.y2[positive] / self.kappa[positive])) / self.N1
        top = 1.0 + min(float(self.y2.sum()) / (4.0 * self.N1 * self.T), c)
        return float(np.log(0.5 / (1.0 + t))), float(np.log(2.0 * top))

    def stationary_points(self) -> list[float]:
        """All roots s* of the symmetric residual, ascending: a sign scan over the whole interval where
        roots can lie (:meth:`root_interval`, 20 points per decade), then brentq on each sign change."""
        if self.T == 0.0:
            return [float(np.log(self.closed_form()))]
        lo, hi = self.root_interval()
        n = max(40, int(np.ceil((hi - lo) / np.log(10) * SCAN_POINTS_PER_DECADE)) + 1)
        grid = np.linspace(lo, hi, n)
        with np.errstate(over="ignore", under="ignore"):
            h = self.symmetric_residual(grid)
        roots = [float(x) for x, v in zip(grid, h, strict=True) if v == 0.0]
        sign = np.sign(h)
        for i in np.flatnonzero(sign[:-1] * sign[1:] < 0):
            roots.append(
                float(brentq(lambda x: float(self.symmetric_residual(x)), grid[i], grid[i + 1], xtol=1e-14, rtol=1e-15))
            )
        return sorted(roots)
