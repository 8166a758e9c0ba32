"""Stieltjes transform of the observation Y_λ = √λ·S̃ + Z on the real axis (generic readout law).

Conventions: G(z) = ∫ρ(t)/(z − t) dt (so ρ(x) = −Im G(x + i0)/π), Z is GOE with the semicircle on [−2, 2]
(off-diagonal variance 1/d), S̃ has unit spectral variance. The R-transform of Y is
R_Y(s) = s + c·φ(c s/γ), c = √(γλ), hence the inverse of G is explicit:

    z(G) = G + 1/G + c·φ(c G/γ),        z'(G) = 1 − 1/G² + (c²/γ)·φ'(c G/γ).

G(x + i0) is found by following the physical branch down from high in the upper half plane:

1. at z = x + iη₀ (η₀ = 2·std(Y)) iterate G ← 1/(z − G − R_A(G)). For Im z > 0 this map sends the lower
   half plane strictly into a bounded part of itself, so it converges to the unique root with Im G < 0
   (the subordination argument of the two-loop scheme, with the semicircle's R-transform folded in);
2. lower η geometrically, Newton on z(G) = x + iη from the previous level. G(x + iη) is analytic for
   η > 0, so each step stays on the physical branch; near a square-root edge the local model
   z ≈ e + κ(G − G_e)² puts the old root in the basin of the new one whatever the ratio of η;
3. a last Newton solve at η = 0 (Im G clipped to ≤ 0, where the physical root lives).

``lam`` may be an array with one λ per evaluation point, so that many λ are solved in one vectorised call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.theories.matrix_denoising.readouts import ReadoutLaw

#: Imaginary parts of the homotopy, in units of std(Y) = √(1 + λ); the last level is η = 0.
ETA_LEVELS = (2.0, 0.4, 0.08, 0.016, 3e-3, 0.0)
FIXED_POINT_STEPS = 15
NEWTON_STEPS_INTERMEDIATE = 5
NEWTON_STEPS_FINAL = 40


@dataclass(frozen=True)
class ObservationSpectrum:
    """Spectral law of Y_λ = √λ·S̃ + Z for readout law ``law`` and width ratio γ = k/d.

    ``lam`` is a float, or an array giving λ point by point (then every ``x``/``G`` passed in has its shape).
    """

    law: ReadoutLaw
    gamma: float
    lam: float | np.ndarray

    @property
    def c(self) -> float | np.ndarray:
        return np.sqrt(self.gamma * np.asarray(self.lam, dtype=float))

    @property
    def scale(self) -> float | np.ndarray:
        """Standard deviation of the spectral law of Y (variance λ·1 + 1)."""
        return np.sqrt(1.0 + np.asarray(self.lam, dtype=float))

    @property
    def mean(self) -> float | np.ndarray:
        """First moment of Y: √λ·E[spec S̃] = √λ·√γ·E v."""
        return self.c * self.law.mean

    @property
    def second_moment(self) -> float | np.ndarray:
        """Second moment of Y: λ·(1 + γ (E v)²) + 1."""
        return np.asarray(self.lam, dtype=float) * (1.0 + self.gamma * self.law.mean**2) + 1.0

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """An interval containing the support (the Gaussian law: all but a negligible tail)."""
        g = self.gamma
        # ‖W^T D W / k‖ ≤ max|v|·(1 + 1/√γ)², so spec S̃ ⊂ [v_min, v_max]·(1 + √γ)²/√γ (when signs allow).
        factor = (1.0 + np.sqrt(g)) ** 2 / np.sqrt(g)
        root = np.sqrt(np.asarray(self.lam, dtype=float))
        lo = root * min(self.law.v_min, 0.0) * factor - 2.0
        hi = root * max(self.law.v_max, 0.0) * factor + 2.0
        pad = 1e-3 * (hi - lo)
        return lo - pad, hi + pad

    def at(self, index: np.ndarray) -> ObservationSpectrum:
        """The same family with λ picked point by point (``lam[index]``)."""
        lam = np.asarray(self.lam, dtype=float)
        picked = np.full(np.shape(index), float(lam)) if lam.ndim == 0 else lam[index]
        return ObservationSpectrum(self.law, self.gamma, picked)

    # ---- inverse of G ---------------------------------------------------------------------------
    def inverse(self, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(z(G), z'(G)) with z the functional inverse of the Stieltjes transform of Y."""
        G = np.asarray(G, dtype=complex)
        return _inverse(self.law, self.gamma, G, np.broadcast_to(self.c, G.shape))

    # ---- G on the real axis ---------------------------------------------------------------------
    def stieltjes(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """G(x + i0) and the final residual |z(G) − x| for real ``x`` (vectorised)."""
        x = np.asarray(x, dtype=float)
        c = np.broadcast_to(self.c, x.shape)
        s = np.broadcast_to(self.scale, x.shape)
        law, gamma = self.law, self.gamma
        z = x + 1j * ETA_LEVELS[0] * s
        G = 1.0 / (z - np.broadcast_to(self.mean, x.shape))
        with np.errstate(all="ignore"):
            for _ in range(FIXED_POINT_STEPS):
                G = 1.0 / (z - G - _r_a(law, gamma, G, c))
            for eta in ETA_LEVELS[:-1]:
                G = _newton_fixed(law, gamma, G, x + 1j * eta * s, c)
            G = _newton_final(law, gamma, G, x + 0j, c, s)
            zG, _ = _inverse(law, gamma, G, c)
        return G, np.abs(zG - x)

    def polish(self, guess: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Newton at η = 0 from nearby guesses (e.g. interpolated from neighbouring nodes): (G, residual).

        Cheaper than :meth:`stieltjes` but only as safe as the guesses: callers must check the result.
        """
        x = np.asarray(x, dtype=float)
        c = np.broadcast_to(self.c, x.shape)
        s = np.broadcast_to(self.scale, x.shape)
        with np.errstate(all="ignore"):
            G = _newton_final(self.law, self.gamma, np.asarray(guess, dtype=complex), x + 0j, c, s)
            zG, _ = _inverse(self.law, self.gamma, G, c)
        return G, np.abs(zG - x)

    def density(self, x: np.ndarray) -> np.ndarray:
        """ρ_Y(x) = −Im G(x + i0)/π."""
        G, _ = self.stieltjes(x)
        return np.maximum(-G.imag, 0.0) / np.pi


def _r_a(law: ReadoutLaw, gamma: float, G: np.ndarray, c: np.ndarray) -> np.ndarray:
    """R-transform of √λ·S̃: c·φ(c G/γ)."""
    return c * law.phi(c * G / gamma)


def _inverse(law: ReadoutLaw, gamma: float, G: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    inv = 1.0 / G
    f, df = law.phi_and_derivative(c * G / gamma)
    return G + inv + c * f, 1.0 - inv * inv + (c * c / gamma) * df


def _newton_fixed(law: ReadoutLaw, gamma: float, G: np.ndarray, target: np.ndarray, c: np.ndarray) -> np.ndarray:
    """A few Newton steps at η > 0 on the whole array (no per-point bookkeeping: cheap and quadratic)."""
    for _ in range(NEWTON_STEPS_INTERMEDIATE):
        zg, dz = _inverse(law, gamma, G, c)
        step = (zg - target) / dz
        new = G - step
        # The physical root has Im G < 0 for η > 0; halve steps that leave that side.
        for _ in range(40):
            bad = ~np.isfinite(new) | (new.imag >= 0)
            if not bad.any():
                break
            step = np.where(bad, 0.5 * step, step)
            new = np.where(bad, G - step, new)
        G = np.where(np.isfinite(new), new, G)
    return G


def _newton_final(
    law: ReadoutLaw, gamma: float, G: np.ndarray, target: np.ndarray, c: np.ndarray, scale: np.ndarray
) -> np.ndarray:
    """Newton on z(G) = target at η = 0, kept in the closed lower half plane, with step halving."""
    G = G.copy()
    active = np.ones(G.shape, dtype=bool)
    for _ in range(NEWTON_STEPS_FINAL):
        if not active.any():
            break
        g = G[active]
        ca = c[active]
        zg, dz = _inverse(law, gamma, g, ca)
        step = (zg - target[active]) / dz
        # At η = 0 the physical root lies in the closed lower half plane: clip onto it.
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
        G[active] = new
        # Stop at round-off: the step is below 1e-14 of |G| (G is O(1/std(Y)) on the support).
        done = np.abs(new - g) <= 1e-14 * (np.abs(new) + 1e-3 / scale[active])
        idx = np.flatnonzero(active)
        active[idx[done]] = False
    return G
