"""The adapted kernel's spectrum on the hypercube, by blocks, and the equivalent-kernel (EK) closure at finite P.

On the symmetric and aligned branches p_MF is invariant under sign flips of every coordinate and under
permutations within S and within S^c, so the adapted kernel k_p(x, x') = E_p[φ(w·x)φ(w·x')/Λ(w)] is
diagonal in the Walsh basis with an eigenvalue that depends only on i = |A ∩ S| and j = |A \\ S|:

    λ_ij = E_p[B_ij(w)/Λ(w)] / (C(k, i) C(d − k, j)),   B_ij(w) = Σ_{|A∩S| = i, |A\\S| = j} J_A(w)².

With the irrelevant part g = w_⊥·x_⊥ Gaussian (the reduction's central-limit step), the degree-j Walsh
power on S^c is the j-th Wiener chaos of ξ = g/|w_⊥|: B_ij = Σ_{|A_S| = i} (E_{x_S}[χ_{A_S} c_j(w_S·x_S)])²
with c_j(μ) = E[φ(μ + √q ξ) He_j(ξ)]/√(j!). Σ_{i,j} B_ij = Σ(w) (Parseval), which fixes the power beyond
j_max (the tail, made of modes far below any ridge).

EK closure (Canatar, Bordelon & Pehlevan 2021; Simon et al. 2023) for kernel ridge regression with this
kernel on P samples and ridge δ = c₀ P: the effective ridge κ solves

    (1/P) Σ_modes λ/(λ + κ) + c₀/κ = 1,

the training residual's projection on χ_S is t̂ = c₀/(λ_S + κ), the learnability L_S = λ_S/(λ_S + κ) is the
mean predictor's overlap m_S, the test error is E₀ (1 − L_S)² with E₀ = P/(P − Σ_modes L²), and the training
error is (c₀/κ)² times it. As P → ∞, κ → c₀ and the population equations return.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from solvers.theories.mean_field_ard.activations import Activation
from solvers.theories.mean_field_ard.parity_cube import ParityCube

#: Irrelevant-chaos orders resolved one by one; the rest is one tail block.
J_MAX = 12


def block_powers(act: Activation, cb: ParityCube, Y: np.ndarray, j_max: int = J_MAX) -> np.ndarray:
    """B_ij at the rows of Y = (w_S, log q): shape (n, k + 1, j_max + 1)."""
    Y = np.atleast_2d(Y)
    k = cb.k
    wS, q = Y[:, :k], np.exp(Y[:, k])
    mu = wS @ cb.points.T  # (n, 2^k)
    c = act.chaos(mu, q[:, None], j_max)  # (j, n, 2^k)
    coef = np.einsum("jnx,xa->jna", c, cb.walsh) / cb.points.shape[0]  # Walsh coefficient on S per chaos order
    out = np.zeros((Y.shape[0], k + 1, j_max + 1))
    for i in range(k + 1):
        cols = cb.sizes == i
        out[:, i, :] = np.sum(coef[:, :, cols] ** 2, axis=2).T
    return out


def multiplicities(d: int, k: int, j_max: int = J_MAX) -> np.ndarray:
    """C(k, i) C(d − k, j) for the resolved blocks."""
    return np.array([[math.comb(k, i) * math.comb(d - k, j) for j in range(j_max + 1)] for i in range(k + 1)],
                    dtype=float)


@dataclass(frozen=True)
class EK:
    """The EK closure of one state: effective ridge, learnabilities and errors."""

    kappa: float  # effective ridge κ (≥ c₀)
    c0: float
    P: float
    lam: np.ndarray  # per-mode eigenvalues λ_ij (k+1, j_max+1)
    mult: np.ndarray
    tail: float  # power E[Σ/Λ] beyond the resolved blocks (all in modes ≪ κ)

    @property
    def L(self) -> np.ndarray:
        return self.lam / (self.lam + self.kappa)

    @property
    def E0(self) -> float:
        return self.P / (self.P - float(np.sum(self.mult * self.L**2)))


def effective_ridge(lam: np.ndarray, mult: np.ndarray, tail: float, c0: float, P: float) -> float:
    """The root κ > c₀ of (1/P)[Σ mult λ/(λ + κ) + tail/κ] + c₀/κ = 1 (decreasing in κ: one root)."""

    def h(kap: float) -> float:
        return (float(np.sum(mult * lam / (lam + kap))) + tail / kap) / P + c0 / kap - 1.0

    lo = c0
    if h(lo) <= 0.0:
        return lo
    hi = 2.0 * c0
    while h(hi) > 0.0:
        hi *= 2.0
    return float(brentq(h, lo, hi, xtol=1e-15 * hi, rtol=1e-14, maxiter=200))


def closure(block_means: np.ndarray, sigma_mean: float, d: int, k: int, c0: float, P: float) -> EK:
    """EK from E_p[B_ij/Λ] (k+1, j_max+1) and E_p[Σ/Λ].

    With fewer than j_max irrelevant coordinates the blocks j > d − k have no modes on the hypercube (C(d − k, j)
    = 0); the central-limit power the Gaussian g puts there joins the tail, and their eigenvalue is 0."""
    mult = multiplicities(d, k, block_means.shape[1] - 1)
    modes = mult > 0
    lam = np.where(modes, block_means / np.where(modes, mult, 1.0), 0.0)
    tail = max(sigma_mean - float(np.sum(block_means[modes])), 0.0)
    return EK(effective_ridge(lam, mult, tail, c0, P), c0, P, lam, mult, tail)
