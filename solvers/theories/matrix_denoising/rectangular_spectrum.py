"""Singular values of the rectangular observation Y = √λ·X + Z, with X = A B/√k a product of Gaussian matrices.

Shapes: X and Z are (ηd) × d, A is (ηd) × k, B is k × d, k = γd, all entries iid unit variance (X has unit
entry variance and rank min(k, ηd, d)). The law does not depend on which side is the longer one, so write
the matrices as M × P with M = min(ηd, d) ≤ P = max(ηd, d), R₁ = P/M ≥ 1, and normalise by (MP)^{1/4}:
Ŷ = Y/(MP)^{1/4} = S + Ẑ with S = √λ X/(MP)^{1/4} and Ẑ of entry variance 1/√(MP) (the normalisation of
Troiani, Erba, Krzakala, Maillard, Zdeborová 2022, with noise variance Δ = 1 after absorbing λ into S).

ν, the law of the M eigenvalues x of ŶŶᵀ, has G(z) = ∫ν(t)/(z − t) dt, ν(x) = −Im G(x + i0)/π. [derived]

* SSᵀ: its non-zero eigenvalues are those of κΠ, κ = λ√(MP)/k, with Π = (AᵀA/M)(BBᵀ/P) (k × k), a free
  product of two Marchenko–Pastur laws of ratios r = k/M and r' = k/P. With the S-transform
  S_Π(s) = 1/((1 + rs)(1 + r's)), the inverse of the moment generating function is explicit: writing
  u = wG_Π(w) − 1, w = (1 + u)(1 + ru)(1 + r'u)/u and G_Π = u/((1 + ru)(1 + r'u)). Adding the M − k zero
  eigenvalues (or removing k − M), G_{SSᵀ}(w) = (k/M)G_{κΠ}(w) + (1 − k/M)/w = u/(κ(1 + u)(1 + r'u)).
* Adding the noise (information-plus-noise, Dozier & Silverstein 2007): with σ² = √R₁ the noise variance in
  their normalisation and c = 1/R₁, G(z) = a·G_{SSᵀ}(w), a = 1/(1 + σ²c G_{SSᵀ}(w)), z = (w + aσ²(1 − c))/a².

Both steps compose into one explicit parametrisation by u ∈ ℂ (p = (1 + u)(1 + r'u), q = κp + σ²cu):

    G(u) = u / q(u),      z(u) = q(u) [(1 + ru) q(u) + σ²(1 − c) u] / (κ p(u) u).

For Im z > 0 the physical root has Im u < 0 (u ≈ κ/z as z → ∞). G(x + i0) is found by following that
root from high in the upper half plane down to the real axis (Newton on z(u) = x + iη at decreasing η,
then at η = 0 with Im u ≤ 0), as the symmetric spectrum does with its explicit inverse. Edges of the
support are critical values z(u_e) of z on the real u axis: the real roots of the numerator of z'(u), a
polynomial of degree ≤ 7, so every edge is found exactly (no scan).

Checks (pure noise, λ → 0 in S): the Dozier–Silverstein step alone gives back the Marchenko–Pastur equation
cσ²zm² + (z − σ²(1 − c))m + 1 = 0; a Gaussian X (k → ∞) gives Re G + (R₁ − 1)/(2x) = 1/(2cσ²_Y) on the
support, from which mmse = 1/(1 + λ) follows exactly (see :mod:`.rectangular_point`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.polynomial import polynomial as P

#: The homotopy starts at Im z = ETA_START × (bound on the largest eigenvalue), where u ≈ κ/z is accurate,
#: and divides Im z by ETA_RATIO per level down to ETA_END × min(E_ν x, 1) (the noise bulk has width O(1)
#: whatever λ), then solves at Im z = 0.
ETA_START = 8.0
ETA_RATIO = 2.5
ETA_END = 1e-5
NEWTON_STEPS = 6
NEWTON_STEPS_FINAL = 40


@dataclass(frozen=True)
class RectangularSpectrum:
    """Law of the eigenvalues of ŶŶᵀ for inner ratio γ = k/d, row ratio η = rows/d and SNR λ > 0."""

    gamma: float
    eta: float
    lam: float

    # ---- dimensions (in units of d) ----------------------------------------------------------------
    @cached_property
    def _dims(self) -> tuple[float, float, float]:
        return min(self.eta, 1.0), max(self.eta, 1.0), self.gamma

    @property
    def R1(self) -> float:
        """Aspect ratio P/M ≥ 1 of the observation."""
        M, Pd, _ = self._dims
        return Pd / M

    @cached_property
    def _coefficients(self) -> tuple[float, float, float, float, float]:
        """(r, r', c, κ, σ²)."""
        M, Pd, k = self._dims
        return k / M, k / Pd, M / Pd, self.lam * np.sqrt(M * Pd) / k, np.sqrt(Pd / M)

    @property
    def mean(self) -> float:
        """E_ν[x] = (1/M) Tr ŶŶᵀ = √R₁ (1 + λ)."""
        return float(np.sqrt(self.R1) * (1.0 + self.lam))

    def singular_value_bound(self) -> float:
        """An upper bound on the largest singular value of Ŷ (operator norms of the factors, 2% margin)."""
        M, Pd, k = self._dims
        quarter = (M * Pd) ** 0.25
        noise = (np.sqrt(M) + np.sqrt(Pd)) / quarter
        signal = np.sqrt(self.lam) * (np.sqrt(M) + np.sqrt(k)) * (np.sqrt(k) + np.sqrt(Pd)) / (np.sqrt(k) * quarter)
        return float(1.02 * (noise + signal))

    # ---- the parametrisation ------------------------------------------------------------------------
    # Computations use e = 1 + u: the noise bulk of a rank-deficient X (k < M, the atom of SSᵀ at 0) lives at
    # u = −1 + O(1/κ), and for square observations e → 0 as x → 0, where 1 + u would cancel.
    def at(self, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(z, dz/du, G) at u = e − 1."""
        r, rp, c, kap, s2 = self._coefficients
        e = np.asarray(e)
        if not np.iscomplexobj(e):
            e = e.astype(complex)
        u = e - 1.0
        a1 = (1.0 - rp) + rp * e  # 1 + r'u
        p = e * a1
        dp = a1 + rp * e
        q = kap * p + s2 * c * u
        dq = kap * dp + s2 * c
        ar = (1.0 - r) + r * e  # 1 + ru
        B = ar * q + s2 * (1.0 - c) * u
        dB = r * q + ar * dq + s2 * (1.0 - c)
        den = kap * p * u
        dden = kap * (dp * u + p)
        num = q * B
        dnum = dq * B + q * dB
        z = num / den
        dz = (dnum * den - num * dden) / (den * den)
        return z, dz, u / q

    def _poles(self) -> np.ndarray:
        """Poles of z in e: e = 0 (u = −1), e = 1 (u = 0), e = 1 − 1/r' (u = −1/r')."""
        return np.array([0.0, 1.0, 1.0 - 1.0 / self._coefficients[1]])

    def edge_candidates(self) -> np.ndarray:
        """Sorted positive critical values z(u_e), u_e real: every edge of the support is one of them.

        z'(u) = 0 is a polynomial equation of degree ≤ 7, but its roots cluster at the poles u = −1 and
        u = −1/r' within O(1/κ) (κ ∝ λ), where the monomial coefficients cannot resolve them. The polynomial
        is therefore built three times, exactly, in a variable centred and scaled at each pole
        (e = e₀ + v/κ) and at u = 0 (unscaled), and the real roots of all three are polished on the
        rational z'(u) itself.
        """
        r, rp, c, kap, s2 = self._coefficients
        found = []
        # (e₀, scale, 1 + u at e₀, 1 + r'u at e₀, 1 + ru at e₀), the constants exact.
        centres = ((1.0, 1.0, 1.0, 1.0, 1.0), (0.0, 1.0 / kap, 0.0, 1.0 - rp, 1.0 - r),
                   (1.0 - 1.0 / rp, 1.0 / (rp * kap), 1.0 - 1.0 / rp, 0.0, 1.0 - r / rp))
        for e0, scale, one_u, one_rpu, one_ru in centres:
            u = np.array([e0 - 1.0, scale])  # u, 1 + u, 1 + r'u, 1 + ru as polynomials in v
            p = P.polymul([one_u, scale], [one_rpu, rp * scale])
            q = P.polyadd(kap * p, s2 * c * u)
            B = P.polyadd(P.polymul([one_ru, r * scale], q), s2 * (1.0 - c) * u)
            num = P.polymul(q, B)
            den = kap * P.polymul(p, u)
            crit = np.trim_zeros(P.polysub(P.polymul(P.polyder(num), den), P.polymul(num, P.polyder(den))), "b")
            if crit.size < 2:
                continue
            roots = P.polyroots(crit)
            near_real = np.abs(roots.imag) <= 1e-6 * (1.0 + np.abs(roots))
            found.append(e0 + scale * roots[near_real].real)
        real = self._polish_critical(np.concatenate(found)) if found else np.zeros(0)
        with np.errstate(all="ignore"):
            x = self.at(real + 0j)[0].real
        # Critical values at x ≈ 0 (round-off of the pole of ν at 0 for square observations) are not edges.
        return np.unique(x[np.isfinite(x) & (x > 1e-12 * self.mean)])

    def _polish_critical(self, e: np.ndarray) -> np.ndarray:
        """Newton on z'(u) = 0 along the real axis, z'' by a central difference. Steps and the difference
        are scaled by the distance to the nearest pole, the scale on which z varies there."""
        poles = self._poles()
        e = np.asarray(e, dtype=float).copy()
        with np.errstate(all="ignore"):
            for _ in range(40):
                dist = np.min(np.abs(e[:, None] - poles[None, :]), axis=1)
                h = 1e-6 * dist
                d0 = self.at(e + 0j)[1].real
                d2 = (self.at(e + h + 0j)[1].real - self.at(e - h + 0j)[1].real) / (2.0 * h)
                step = np.where(np.isfinite(d0 / d2), d0 / d2, 0.0)
                step = np.clip(step, -0.25 * dist, 0.25 * dist)
                e = e - step
                if np.all(np.abs(step) <= 1e-15 * np.maximum(dist, 1e-300)):
                    break
        return e

    # ---- G on the real axis -------------------------------------------------------------------------
    def parameter(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The physical e = 1 + u at z = x + i0 for real x > 0 (extended precision), and |z(u) − x|."""
        x = np.asarray(x, dtype=float)
        kap = self._coefficients[3]
        start = ETA_START * max(self.singular_value_bound() ** 2, kap, self.mean)
        end = ETA_END * min(self.mean, 1.0)
        levels = np.geomspace(start, end, int(np.ceil(np.log(start / end) / np.log(ETA_RATIO))) + 1)
        e = 1.0 + kap / (x + 1j * levels[0])
        with np.errstate(all="ignore"):
            for eta in levels:
                target = x + 1j * eta
                for _ in range(NEWTON_STEPS):
                    z, dz, _ = self.at(e)
                    step = (z - target) / dz
                    new = e - step
                    # For η > 0 the physical root has Im u < 0: halve steps that leave that side.
                    for _ in range(40):
                        bad = ~np.isfinite(new) | (new.imag >= 0)
                        if not bad.any():
                            break
                        step = np.where(bad, 0.5 * step, step)
                        new = e - step
                    e = np.where(np.isfinite(new), new, e)
            # The last solve runs in extended precision (where the platform has it): near the noise bulk's
            # pole G is the ratio of small quantities.
            e = self._newton_real(e.astype(np.clongdouble), x.astype(np.longdouble))
            z, _, _ = self.at(e)
        return e, np.abs(z - x).astype(float)

    def _newton_real(self, e: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Newton at η = 0 kept in the closed lower half plane, with step halving on non-finite values."""
        e = e.copy()
        active = np.ones(e.shape, dtype=bool)
        for _ in range(NEWTON_STEPS_FINAL):
            if not active.any():
                break
            g = e[active]
            z, dz, _ = self.at(g)
            step = (z - x[active]) / dz
            new = g - step
            new = new.real + 1j * np.minimum(new.imag, 0.0)
            for _ in range(40):
                bad = ~np.isfinite(new)
                if not bad.any():
                    break
                step = np.where(bad, 0.5 * step, step)
                new = g - step
                new = new.real + 1j * np.minimum(new.imag, 0.0)
            new = np.where(np.isfinite(new), new, g)
            e[active] = new
            done = np.abs(new - g) <= 1e-17 * (np.minimum(np.abs(new), np.abs(new - 1.0)) + 1e-300)
            idx = np.flatnonzero(active)
            active[idx[done]] = False
        return e

    def stieltjes(self, x: np.ndarray) -> np.ndarray:
        """G(x + i0) for real x > 0."""
        u, _ = self.parameter(x)
        return self.at(u)[2].astype(complex)

    def density(self, x: np.ndarray) -> np.ndarray:
        """ν(x) = −Im G(x + i0)/π."""
        return np.maximum(-self.stieltjes(x).imag, 0.0) / np.pi
