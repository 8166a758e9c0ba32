"""Two-order-parameter action for activations with a non-zero prior mean (ReLU), one hidden layer.

With m_μ = E[σ(h_μ)] the readout f = v·σ(h)/√N1 has, given v, mean (Σ_i v_i/√N1) m and covariance
(‖v‖²/N1)(K − m mᵀ). Imposing q = ‖v‖²/N1 with a conjugate Q and integrating v exactly gives

    S(Q̄, Q) = −Q̄ Q + log(1 + Q) + (1/N1) [log det A + yᵀ A^(-1) y],   A = T·I + K_R,
    K_R      = (Q̄/λ1)(K − m mᵀ) + m mᵀ / (λ1 (1 + Q))

(Pacelli et al. 2023 SI; the authors' code writes K_R = (Q̄/λ1)K − (Q̄ − 1/(1+Q)) M/λ1, the same
matrix). With m = 0 the Q saddle gives Q̄ = 1/(1 + Q) and the one-variable action minus 1.

Numerics: in the eigenbasis of B = K − m mᵀ, A = D + b m̃ m̃ᵀ with D = T + aβ, a = Q̄σ, b = σ/(1+Q)
(σ = 1/(λ0λ1) the readout scale of the homogeneous ReLU kernel), so Sherman–Morrison keeps every
evaluation O(P). Variables x = (s, t) = (log Q̄, log(1 + Q)).

S is minimised in s and maximised in t (the −Q̄Q coupling), so the stability margin is the
curvature of the reduced action S(s, t*(s)): S_ss − S_st²/S_tt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.core.errors import DomainError
from solvers.theories.kernel_renormalization.roots import bracketed_root
from solvers.theories.kernel_renormalization.scalar_action import SCAN_LOG_RANGE, SCAN_POINTS_PER_DECADE


@dataclass(frozen=True)
class _Parts:
    """φ(a, b) = (1/N1)[log det A + yᵀA^(-1)y] with its first and second derivatives in (a, b)."""

    phi: float
    pa: float
    pb: float
    paa: float
    pab: float
    pbb: float


@dataclass(frozen=True)
class MeanCorrectedAction:
    beta: np.ndarray  # eigenvalues of the base feature covariance K − m mᵀ
    m_t: np.ndarray  # the mean vector in that eigenbasis
    y_t: np.ndarray
    scale: float  # σ: K_R = a B_base + b m mᵀ with a = Q̄σ, b = σ/(1 + Q)
    T: float
    N1: float

    dim = 2

    def parts(self, a: float, b: float) -> _Parts:
        beta, m, y = self.beta, self.m_t, self.y_t
        inv = 1.0 / (self.T + a * beta)
        z = m * inv
        u, w = float(m @ z), float(y @ z)
        den = 1.0 + b * u
        c = b / den
        p = y * inv - c * w * z  # A^(-1) ỹ
        r = z / den  # A^(-1) m̃
        mp, mr = w / den, u / den  # m̃ᵀA^(-1)ỹ, m̃ᵀA^(-1)m̃
        bz2 = float(beta @ (z * z))
        bp = beta * p
        logdet = float(np.log(self.T + a * beta).sum() + np.log(den))
        quad = float(y @ (y * inv)) - c * w * w
        la = float(beta @ inv) - c * bz2
        ya = -float(bp @ p)
        laa = -(float(((beta * inv) ** 2).sum()) - 2.0 * c * float((beta * beta * z * z) @ inv) + c * c * bz2 * bz2)
        yaa = 2.0 * (float(bp @ (bp * inv)) - c * float(z @ bp) ** 2)
        lab = -float(beta @ (r * r))
        yab = 2.0 * mp * float(r @ bp)
        n = self.N1
        return _Parts(
            phi=(logdet + quad) / n,
            pa=(la + ya) / n,
            pb=(mr - mp * mp) / n,
            paa=(laa + yaa) / n,
            pab=(lab + yab) / n,
            pbb=(-mr * mr + 2.0 * mp * mp * mr) / n,
        )

    def _ab(self, x: np.ndarray) -> tuple[float, float, float, float]:
        s, t = float(x[0]), float(x[1])
        qbar, e_t = np.exp(s), np.exp(t)
        return qbar, e_t, qbar * self.scale, self.scale / e_t

    def value(self, x: np.ndarray) -> float:
        qbar, e_t, a, b = self._ab(x)
        return float(-qbar * (e_t - 1.0) + x[1] + self.parts(a, b).phi)

    def gradient(self, x: np.ndarray) -> np.ndarray:
        qbar, e_t, a, b = self._ab(x)
        d = self.parts(a, b)
        return np.array([-qbar * (e_t - 1.0) + a * d.pa, -qbar * e_t + 1.0 - b * d.pb])

    def hessian(self, x: np.ndarray) -> np.ndarray:
        qbar, e_t, a, b = self._ab(x)
        d = self.parts(a, b)
        ss = -qbar * (e_t - 1.0) + a * d.pa + a * a * d.paa
        st = -qbar * e_t - a * b * d.pab
        tt = -qbar * e_t + b * d.pb + b * b * d.pbb
        return np.array([[ss, st], [st, tt]])

    def stability(self, x: np.ndarray) -> float:
        """Curvature of the reduced action (> 0: a minimum in Q̄ once Q sits at its saddle)."""
        h = self.hessian(x)
        if h[1, 1] == 0.0:
            return float("nan")
        return float(h[0, 0] - h[0, 1] ** 2 / h[1, 1])

    # ---- exhaustive search: eliminate Q exactly, then sign-scan Q̄ ---------------------------
    def conjugate_roots(self, s: float) -> np.ndarray:
        """All τ = 1/(1 + Q) > 0 solving ∂S/∂t = 0 at Q̄ = e^s: the roots of a cubic.

        Q̄/τ = 1 − bφ_b with bφ_b = (1/N1)[x/(1+x) − b w²/(1+x)²], x = b u, b = στ, and u, w fixed by Q̄.
        """
        qbar = np.exp(s)
        inv = 1.0 / (self.T + qbar * self.scale * self.beta)
        u = float(self.m_t @ (self.m_t * inv))
        w = float(self.y_t @ (self.m_t * inv))
        k1, k2, n = self.scale * u, self.scale * w * w, self.N1
        coeffs = [-k1 * k1 * (1.0 - 1.0 / n), qbar * k1 * k1 - 2.0 * k1 + (k1 - k2) / n, 2.0 * qbar * k1 - 1.0, qbar]
        if not np.all(np.isfinite(coeffs)):
            raise DomainError(f"the conjugate equation at log Q̄ = {s:g} overflows double precision")
        roots = np.roots(coeffs)
        real = roots[np.abs(roots.imag) <= 1e-9 * np.maximum(1.0, np.abs(roots))].real
        return np.sort(real[real > 0])

    def conjugate_at(self, s: float) -> float:
        """t = log(1 + Q) on the physical branch: the root τ nearest to the m = 0 value τ = Q̄."""
        taus = self.conjugate_roots(s)
        if taus.size == 0:
            return float("nan")
        tau = taus[np.argmin(np.abs(np.log(taus) - s))]
        return float(-np.log(tau))

    def reduced_residual(self, s: float) -> float:
        t = self.conjugate_at(s)
        return float(self.gradient(np.array([s, t]))[0]) if np.isfinite(t) else float("nan")

    def stationary_points(self) -> list[np.ndarray]:
        lo, hi = SCAN_LOG_RANGE
        n = int(np.ceil((hi - lo) / np.log(10) * SCAN_POINTS_PER_DECADE)) + 1
        grid = np.linspace(lo, hi, n)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            h = np.array([self.reduced_residual(s) for s in grid])
        roots: list[np.ndarray] = []
        for i in range(n - 1):
            if np.isfinite(h[i]) and np.isfinite(h[i + 1]) and h[i] * h[i + 1] < 0:
                s = bracketed_root(self.reduced_residual, grid[i], grid[i + 1], xtol=1e-14, rtol=1e-15)
                roots.append(np.array([s, self.conjugate_at(s)]))
        return roots

    def several_conjugate_roots(self, s: float) -> bool:
        return self.conjugate_roots(s).size > 1
