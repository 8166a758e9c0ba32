"""Scalar Gaussian channel y = √x·w0 + ξ for the weight prior P_W: free entropy ψ and overlap map.

    ψ(x)    = E ln E_w exp(−x w²/2 + x w0 w + √x ξ w)
    q(x)    = E[w0 ⟨w⟩_x] = E[⟨w⟩_x²] = 2 ψ'(x)        (Nishimori)

Gaussian N(0, 1):  ψ(x) = x/2 − ½ ln(1 + x),       q(x) = x / (1 + x).
Rademacher ±1:     ψ(x) = E_z ln cosh(√x z + x) − x/2,   q(x) = E_z tanh(√x z + x).

The Rademacher expectations use a fixed, symmetric rule (Gauss–Legendre on each half-line, to |z| = 38):
odd powers of √x cancel exactly, so both functions stay smooth (analytic) in x at 0, as they must be, and
the rule resolves the far tail z ≈ −2√x where 1 − q(x) lives at large x (Gauss–Hermite does not, and then
q' would disagree with the derivative of q).
Physical conjugates are x ≥ 0. Finite-difference Jacobians probe slightly negative x, so both maps are
continued oddly (q(−x) = −q(x), ψ(−x) = ψ(x)), which keeps q' continuous at 0 (q'(0) = 1 for both priors).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from solvers.numerics.hermite import gauss_legendre_halflines

PRIORS: tuple[str, ...] = ("gaussian", "rademacher")
#: Nodes per half-line of the Rademacher channel's rule.
RADEMACHER_ORDER = 160


def _log_cosh(y: np.ndarray) -> np.ndarray:
    a = np.abs(y)
    return a + np.log1p(np.exp(-2.0 * a)) - np.log(2.0)


@dataclass(frozen=True)
class ScalarChannel:
    """ψ_{P_W} and its overlap map for one prior."""

    prior: str

    def overlap(self, x: np.ndarray | float) -> np.ndarray:
        """q(x) = E[w0 ⟨w⟩] at signal-to-noise ratio x."""
        x = np.asarray(x, dtype=float)
        a = np.abs(x)
        if self.prior == "gaussian":
            out = a / (1.0 + a)
        else:
            z, w = gauss_legendre_halflines(RADEMACHER_ORDER)
            out = np.tanh(np.sqrt(a)[..., None] * z + a[..., None]) @ w
        return np.sign(x) * out

    def d_overlap(self, x: np.ndarray | float) -> np.ndarray:
        """q'(x): 1/(1 + x)² (Gaussian); for Rademacher the exact derivative of the quadrature sum,

        Σ w_i sech²(y_i)(z_i/(2√x) + 1), y_i = √x z_i + x, so that it matches the q actually used (the
        Stein form E[sech² y (1 − tanh y)] is equal only for the exact integral); its x → 0 limit is 1.
        """
        a = np.abs(np.asarray(x, dtype=float))
        if self.prior == "gaussian":
            return 1.0 / (1.0 + a) ** 2
        z, w = gauss_legendre_halflines(RADEMACHER_ORDER)
        root = np.sqrt(a)[..., None]
        th = np.tanh(root * z + a[..., None])
        sech2 = 1.0 - th**2
        with np.errstate(divide="ignore", invalid="ignore"):
            direct = (sech2 * (z / (2.0 * root) + 1.0)) @ w
        # For small x the z/(2√x) term cancels between ±z only up to round-off amplified by 1/√x; there the
        # integrand is so smooth that the Stein form agrees with the sum's derivative to round-off.
        stein = (sech2 * (1.0 - th)) @ w
        return np.where(a > 1e-4, direct, stein)

    def psi(self, x: np.ndarray | float) -> np.ndarray:
        """ψ_{P_W}(x)."""
        a = np.abs(np.asarray(x, dtype=float))
        if self.prior == "gaussian":
            return 0.5 * a - 0.5 * np.log1p(a)
        z, w = gauss_legendre_halflines(RADEMACHER_ORDER)
        return _log_cosh(np.sqrt(a)[..., None] * z + a[..., None]) @ w - 0.5 * a

    # ---- log-SNR coordinates y = ln(1 + Q̂) --------------------------------------------------
    # The solvers work in y rather than Q: near perfect specialisation Q = 1 − O(e^{−y}) is compressed
    # against 1 while y stays well scaled, so continuation steps and folds are resolved. Both maps are
    # continued oddly to y < 0 / Q̂ < 0 (only probed by finite differences at the universal solution).
    def overlap_from_log(self, y: np.ndarray | float) -> np.ndarray:
        """Q = q(e^y − 1)."""
        y = np.asarray(y, dtype=float)
        a = np.abs(y)
        if self.prior == "gaussian":
            return np.sign(y) * -np.expm1(-a)
        return np.sign(y) * self.overlap(np.expm1(np.minimum(a, 700.0)))

    def complement_from_log(self, y: np.ndarray | float) -> np.ndarray:
        """1 − Q without cancellation (Q → 1 exponentially fast in y for binary weights)."""
        y = np.asarray(y, dtype=float)
        a = np.abs(y)
        if self.prior == "gaussian":
            comp = np.exp(-a)
        else:
            z, w = gauss_legendre_halflines(RADEMACHER_ORDER)
            x = np.expm1(np.minimum(a, 700.0))[..., None]
            comp = (2.0 * expit(-2.0 * (np.sqrt(x) * z + x))) @ w  # E[1 − tanh(√x z + x)]
        return np.where(y >= 0, comp, 2.0 - comp)

    def overlap_complement_slope_from_log(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(Q, 1 − Q, dQ/dy) at once (for the Gaussian prior all three come from one exponential)."""
        y = np.asarray(y, dtype=float)
        if self.prior != "gaussian":
            return self.overlap_from_log(y), self.complement_from_log(y), self.d_overlap_from_log(y)
        e = np.exp(-np.abs(y))
        pos = y >= 0
        return np.where(pos, 1.0 - e, e - 1.0), np.where(pos, e, 2.0 - e), e

    def d_overlap_from_log(self, y: np.ndarray | float) -> np.ndarray:
        """dQ/dy."""
        a = np.abs(np.asarray(y, dtype=float))
        if self.prior == "gaussian":
            return np.exp(-a)
        a = np.minimum(a, 700.0)
        return self.d_overlap(np.expm1(a)) * np.exp(a)

    @staticmethod
    def log_snr(x: np.ndarray | float) -> np.ndarray:
        """y = ln(1 + Q̂), odd in Q̂."""
        x = np.asarray(x, dtype=float)
        return np.sign(x) * np.log1p(np.abs(x))

    @staticmethod
    def d_log_snr(x: np.ndarray | float) -> np.ndarray:
        return 1.0 / (1.0 + np.abs(np.asarray(x, dtype=float)))

    def log_snr_of_overlap(self, q: np.ndarray | float) -> np.ndarray:
        """y with q(e^y − 1) = Q (starting points and scans)."""
        return np.log1p(self.conjugate(q))

    def conjugate(self, q: np.ndarray | float) -> np.ndarray:
        """x with q(x) = q (used only to build starting points)."""
        q = np.clip(np.asarray(q, dtype=float), 0.0, 1.0 - 1e-12)
        if self.prior == "gaussian":
            return q / (1.0 - q)
        # Bisection on the monotone map, vectorised; starting points need no more than 1e-10.
        lo = np.zeros_like(q)
        hi = np.full_like(q, 1.0)
        while np.any(self.overlap(hi) < q):
            hi = np.where(self.overlap(hi) < q, 2.0 * hi, hi)
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            below = self.overlap(mid) < q
            lo = np.where(below, mid, lo)
            hi = np.where(below, hi, mid)
        return 0.5 * (lo + hi)


def channel(prior: str) -> ScalarChannel:
    if prior not in PRIORS:
        raise KeyError(prior)
    return ScalarChannel(prior)
