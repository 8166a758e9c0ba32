"""The tree-level single-neuron law on a training set, in all D input dimensions.

For a kernel K on the P training inputs, with A = (K + T I)⁻¹ and t̄ = A y,

    p(w) ∝ p0(w) exp E(w),   E(w) = (s_a2/2) [(φᵀt̄)² − φᵀAφ],   φ = erf(X w),   p0 = N(0, σ_w²/D I_D),

and the closure K = N s_a2 E_p[φφᵀ]. Nothing is reduced: |w⊥|² is free, and φᵀt̄, φᵀAφ are the sums over the
actual inputs (no population replacement). E is even in w, so the law is even and only ρ = w·e ≥ 0 is sampled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.special import erf

TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@dataclass(frozen=True)
class Couplings:
    """What the law needs of a kernel: A = (K + T I)⁻¹ and t̄ = A y, with the regression it came from."""

    A: np.ndarray
    tbar: np.ndarray
    T: float
    s_a2: float

    @classmethod
    def of(cls, K: np.ndarray, y: np.ndarray, T: float, s_a2: float) -> Couplings:
        M = K + T * np.eye(K.shape[0])
        chol = cho_factor(M, lower=True, check_finite=False)
        A = cho_solve(chol, np.eye(K.shape[0]), check_finite=False)
        A = 0.5 * (A + A.T)
        return cls(A, A @ y, T, s_a2)

    def exponent(self, phi: np.ndarray) -> np.ndarray:
        """E for each row of φ (n × P)."""
        u = phi @ self.tbar
        return 0.5 * self.s_a2 * (u * u - np.einsum("ij,ij->i", phi @ self.A, phi))

    def exponent_and_gradient(self, W: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """E(w) and ∇_w E for each row of W (n × D): ∇E = s_a2 Xᵀ[erf'(g) ∘ (u t̄ − Aφ)], g = X w, u = φᵀt̄."""
        g = W @ X.T
        phi = erf(g)
        Aphi = phi @ self.A
        u = phi @ self.tbar
        E = 0.5 * self.s_a2 * (u * u - np.einsum("ij,ij->i", Aphi, phi))
        dphi = TWO_OVER_SQRT_PI * np.exp(-g * g)
        grad = self.s_a2 * ((dphi * (u[:, None] * self.tbar[None, :] - Aphi)) @ X)
        return E, grad


def nngp_kernel(X: np.ndarray, Y: np.ndarray, sigma_w2: float, N_s_a2: float) -> np.ndarray:
    """N s_a2 E_{p0}[erf(w·x) erf(w·x')] for w ~ N(0, σ_w²/D I): Williams' arcsin kernel (prior law, no learning)."""
    s = sigma_w2 / X.shape[1]
    nx = 1.0 + 2.0 * s * np.einsum("ij,ij->i", X, X)
    ny = 1.0 + 2.0 * s * np.einsum("ij,ij->i", Y, Y)
    arg = 2.0 * s * (X @ Y.T) / np.sqrt(np.outer(nx, ny))
    return N_s_a2 * (2.0 / math.pi) * np.arcsin(np.clip(arg, -1.0, 1.0))
