"""The overlap potential of one hidden neuron against the residual b H1 + c H3, per input dimension.

Two forms share one implementation, written in ``s = rho²`` (the potential is even in rho):

* mean-field (the paper's reduced action, eq. 13 = A.8, the blog's Ũ_u/D)::

      F(s) = s/(2σ_w²) − (2u/π) g(t),        t = s/h,  h = 1 + 2(σ_w² + s),  g(t) = t (b − 2ct)²

* standard scaling (the blog's cavity U/D, keeping the ½ log L and 1/L factors)::

      F(s) = s/(2σ_w²) + log L/(2D) − (2u/π) g(t)/L,   L = 1 + λ v(σ_w² + s),  λ = s_a² P / T

  Here ``u m²/2 = (2u/π) g`` because m(rho)² = (4/π) g(t) (see erf_projections.residual_projection).

Derivatives in rho follow from f(rho) = F(rho²): f' = 2 rho F'(s), f'' = 2F'(s) + 4 s F''(s).
In the mean-field form F'(s) = P(s)/h⁴ with a quartic P, so every stationary point is a real
positive root of P: the search for wells and barriers is exhaustive and exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq

from solvers.theories.rubin_cavity.common.erf_moments import erf_variance, erf_variance_prime, erf_variance_second

#: Stationary points closer than this (in s = rho²) are one point.
ROOT_MERGE = 1e-12
#: Tail cut of the overlap law: p(rho)/p_max < exp(-TAIL) is neglected.
TAIL = 40.0


def _arr(s: np.ndarray | float) -> np.ndarray | float:
    """Plain floats stay floats (scalar arithmetic is much cheaper than 0-d arrays in the root polish)."""
    return s if isinstance(s, float) else np.asarray(s, dtype=float)


@dataclass(frozen=True)
class StationaryPoint:
    """A stationary point of the potential at rho >= 0."""

    rho: float
    depth: float  # F(rho²) − F(0)
    curvature: float  # f''(rho) = d²f/drho²
    kind: str  # "center" (rho = 0), "aligned" (minimum, rho > 0), "barrier" (maximum, rho > 0)

    @property
    def stable(self) -> bool:
        return self.curvature > 0


@dataclass(frozen=True)
class OverlapPotential:
    """f(rho) = U(rho; b, c)/D of the theory note; ``lam = None`` selects the mean-field form."""

    sigma_w2: float
    b: float
    c: float
    u: float
    lam: float | None = None
    D: float | None = None
    _h0: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_h0", 1.0 + 2.0 * self.sigma_w2)
        if self.lam is not None and self.D is None:
            raise ValueError("the standard-scaling potential needs D")

    @property
    def standard(self) -> bool:
        return self.lam is not None

    # ---- building blocks in s = rho² -------------------------------------------------------
    def _g(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """t, g(t), g'(t)·t'(s), and the pieces of the second derivative: g''(t) t'², g'(t) t''."""
        b, c, h0 = self.b, self.c, self._h0
        h = h0 + 2.0 * s
        t = s / h
        g = t * (b - 2.0 * c * t) ** 2
        g1 = (b - 2.0 * c * t) * (b - 6.0 * c * t)
        g2 = -8.0 * b * c + 24.0 * c * c * t
        # Divided step by step, never raised to a power: h**3 of a plain float raises OverflowError once s passes
        # ~1e102 (a deep potential searched far out), where the quotients are only small.
        t1 = h0 / h / h
        t2 = -4.0 * t1 / h
        return t, g, g1 * t1, g2 * t1 * t1, g1 * t2

    def _L(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        assert self.lam is not None
        q = self.sigma_w2 + s
        return (
            1.0 + self.lam * erf_variance(q),
            self.lam * erf_variance_prime(q),
            self.lam * erf_variance_second(q),
        )

    def F(self, s: np.ndarray | float) -> np.ndarray:
        s = _arr(s)
        _, g, _, _, _ = self._g(s)
        k = 2.0 * self.u / math.pi
        out = s / (2.0 * self.sigma_w2)
        if not self.standard:
            return out - k * g
        L, _, _ = self._L(s)
        assert self.D is not None
        return out + np.log(L) / (2.0 * self.D) - k * g / L

    def dF(self, s: np.ndarray | float) -> np.ndarray:
        s = _arr(s)
        _, g, gs, _, _ = self._g(s)
        k = 2.0 * self.u / math.pi
        out = 1.0 / (2.0 * self.sigma_w2) + 0.0 * s
        if not self.standard:
            return out - k * gs
        L, L1, _ = self._L(s)
        assert self.D is not None
        return out + L1 / (2.0 * self.D * L) - k * (gs / L - g * L1 / (L * L))

    def d2F(self, s: np.ndarray | float) -> np.ndarray:
        s = _arr(s)
        _, g, gs, gtt, gt2 = self._g(s)
        k = 2.0 * self.u / math.pi
        gss = gtt + gt2
        if not self.standard:
            return -k * gss
        L, L1, L2 = self._L(s)
        assert self.D is not None
        log_term = (L2 * L - L1 * L1) / (2.0 * self.D * L * L)
        reward = gss / L - 2.0 * gs * L1 / (L * L) - g * (L2 / (L * L) - 2.0 * L1 * L1 / (L * L * L))
        return log_term - k * reward

    # ---- sensitivities to the residual coefficients (for analytic Jacobians) -------------------
    def dF_dbc(self, s: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """(∂F/∂b, ∂F/∂c) at fixed s: F depends on (b, c) only through −k g(t)/L."""
        s = _arr(s)
        t = s / (self._h0 + 2.0 * s)
        e = self.b - 2.0 * self.c * t
        k = 2.0 * self.u / math.pi
        L = self._L(s)[0] if self.standard else 1.0
        return -k * 2.0 * t * e / L, k * 4.0 * t * t * e / L

    def dFprime_dbc(self, s: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
        """(∂F'/∂b, ∂F'/∂c) at fixed s."""
        s = _arr(s)
        h0 = self._h0
        h = h0 + 2.0 * s
        t = s / h
        t1 = h0 / (h * h)
        b, c = self.b, self.c
        e = b - 2.0 * c * t
        k = 2.0 * self.u / math.pi
        dg1_db, dg1_dc = 2.0 * b - 8.0 * c * t, -8.0 * b * t + 24.0 * c * t * t
        if not self.standard:
            return -k * dg1_db * t1, -k * dg1_dc * t1
        dg_db, dg_dc = 2.0 * t * e, -4.0 * t * t * e
        L, L1, _ = self._L(s)
        return (-k * (dg1_db * t1 / L - dg_db * L1 / (L * L)), -k * (dg1_dc * t1 / L - dg_dc * L1 / (L * L)))

    # ---- in rho ------------------------------------------------------------------------------
    def value(self, rho: np.ndarray | float) -> np.ndarray:
        """f(rho) = U/D (not shifted: in standard scaling f(0) = log L(0)/(2D))."""
        rho = _arr(rho)
        return self.F(rho * rho)

    def grad(self, rho: np.ndarray | float) -> np.ndarray:
        rho = _arr(rho)
        return 2.0 * rho * self.dF(rho * rho)

    def hess(self, rho: np.ndarray | float) -> np.ndarray:
        rho = _arr(rho)
        s = rho * rho
        return 2.0 * self.dF(s) + 4.0 * s * self.d2F(s)

    def center_curvature(self) -> float:
        """f''(0) = U''(0)/D; mean-field: 1/σ_w² − (4u/π) b²/(1 + 2σ_w²)."""
        return float(2.0 * self.dF(0.0))

    # ---- stationary points -------------------------------------------------------------------
    def quartic(self) -> np.ndarray:
        """Coefficients (highest power first) of P(s) with F'(s) = P(s)/h⁴ (mean-field form only).

        P(s) = (h0 + 2s)⁴/(2σ_w²) − k (α0 + α1 s)(β0 + β1 s), k = (2u/π) h0, h0 = 1 + 2σ_w²,
        α0 = β0 = b h0, α1 = 2b − 2c, β1 = 2b − 6c (from b h − 2cs and b h − 6cs).
        """
        b, c, h0 = self.b, self.c, self._h0
        k = (2.0 * self.u / math.pi) * h0
        a0, a1, b1 = b * h0, 2.0 * b - 2.0 * c, 2.0 * b - 6.0 * c
        inv = 1.0 / (2.0 * self.sigma_w2)
        return np.array(
            [
                16.0 * inv,
                32.0 * h0 * inv,
                24.0 * h0**2 * inv - k * a1 * b1,
                8.0 * h0**3 * inv - k * (a0 * b1 + a1 * a0),
                h0**4 * inv - k * a0 * a0,
            ]
        )

    def s_max(self) -> float:
        """An s beyond which p(rho) < exp(-TAIL/D_eff) relative to its maximum (TAIL/D_eff ≥ 1e-3)."""
        k = 2.0 * self.u / math.pi
        reward = 0.5 * k * max(self.b**2, (self.b - self.c) ** 2)  # g(t) <= t max|b-2ct|² with t < 1/2
        f0 = float(self.F(0.0))
        slack = TAIL / self.D if self.D else 1.0
        return 2.0 * self.sigma_w2 * (reward + max(f0, 0.0) + slack)

    def _positive_roots(self) -> list[float]:
        if not self.standard:
            coeffs = self.quartic()
            if not np.all(np.isfinite(coeffs)):
                return []  # overflowed parameters: no finite stationary point can be resolved
            roots = np.roots(coeffs)
            cands = sorted(
                float(r.real) for r in roots if abs(r.imag) <= 1e-7 * (1.0 + abs(r.real)) and r.real > ROOT_MERGE
            )
            out: list[float] = []
            for s in cands:
                s = self._polish(s)
                if s > ROOT_MERGE and not any(abs(s - t) <= 1e-10 * (1.0 + t) for t in out):
                    out.append(s)
            return sorted(out)
        return self._scan_roots()

    def _polish(self, s: float) -> float:
        """A few Newton steps on F'(s) = 0 (the quartic's roots lose digits near a fold)."""
        for _ in range(3):
            d2 = self.d2F(s)
            if d2 == 0.0:
                break
            step = self.dF(s) / d2
            if not np.isfinite(step) or abs(step) > 0.1 * (1.0 + s):
                break
            s -= step
        return s

    def _scan_roots(self, n: int = 2000) -> list[float]:
        """Sign scan of F'(s) on a grid fine in rho (uniform in rho on [0, √s_max]) plus brentq."""
        s_max = self.s_max()
        if not math.isfinite(s_max):
            return []
        rho = np.linspace(0.0, math.sqrt(s_max), n + 1)[1:]
        s = rho * rho
        d = self.dF(s)
        out = []
        for i in np.nonzero(np.sign(d[:-1]) * np.sign(d[1:]) < 0)[0]:
            out.append(float(brentq(lambda t: float(self.dF(t)), s[i], s[i + 1], xtol=1e-15, rtol=1e-15)))
        return out

    def stationary_points(self) -> list[StationaryPoint]:
        """Center (rho = 0) followed by every stationary point at rho > 0, in increasing rho."""
        f0 = float(self.F(0.0))
        pts = [StationaryPoint(0.0, 0.0, self.center_curvature(), "center")]
        for s in self._positive_roots():
            rho = math.sqrt(s)
            curv = float(4.0 * s * self.d2F(s))  # f'' = 2F' + 4sF'' and F'(s) = 0
            pts.append(StationaryPoint(rho, float(self.F(s)) - f0, curv, "aligned" if curv > 0 else "barrier"))
        return pts

    def sampled(self, n: int) -> tuple[list[float], list[float]]:
        """(ρ, f(ρ) − f(0)) in increasing ρ: ``n`` equally spaced ρ on [−ρ_max, ρ_max] (n + 1 for an even n: the
        grid is symmetric and holds ρ = 0) and every stationary point at ±ρ, so each well and barrier is a sample;
        ρ_max = max(1, 1.4 × the outermost stationary point) shows the rise beyond the outer wells."""
        pts = self.stationary_points()
        rho_max = max(1.0, 1.4 * max(p.rho for p in pts))
        half = np.linspace(0.0, rho_max, n // 2 + 1)
        grid = np.concatenate([-half[::-1], half[1:]])
        rho = np.unique(np.concatenate([grid, [p.rho for p in pts], [-p.rho for p in pts]]))
        values = np.asarray(self.value(rho), dtype=float) - float(self.value(0.0))
        return [float(r) + 0.0 for r in rho], [float(v) for v in values]

    def wells(self) -> list[StationaryPoint]:
        """Local minima: the center when it is locally stable, and every aligned well."""
        return [p for p in self.stationary_points() if p.curvature > 0]

    def global_minimum(self) -> StationaryPoint:
        """The deepest well (the center on ties, so equal depth reports the unaligned state)."""
        # A potential growing at infinity always has a minimum; if round-off hides it (a degenerate
        # fold at the center), the center stands in for it.
        wells = self.wells() or [p for p in self.stationary_points() if p.kind == "center"]
        return min(wells, key=lambda p: (p.depth, p.rho))
