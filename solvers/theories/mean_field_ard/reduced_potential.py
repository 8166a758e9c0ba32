"""The single-neuron potential of the population-limit parity problem in reduced coordinates.

With the readout integrated out (docs: "Completing the square"), one hidden unit w has the law
p_MF(w) ∝ exp(−U(w)),

    U(w) = ½ Σ_j ρ_j w_j² + ½ log(Λ(w)/A_a) − J_r(w)² / (2 κ² s Λ(w)),
    Λ(w) = A_a + Σ(w)/s,     s = κ² N^{2γ},     A_a = 1/σ_a²,

with Σ(w) = E_x φ(wᵀx)² and J_r(w) = E_x φ(wᵀx) r(x). On the symmetric and aligned branches of the
parity problem the residual is r = t χ_S and the prior treats the coordinates of S alike and those off S
alike, so U depends on w only through y = (w_S, u), u = log |w_⊥|². The density of y is the prior's
(``reduced_prior``: Gaussian with precisions ρ_rel on S and ρ_irr off S — log-Gamma in u with shape
(d − k)/2 — or the per-unit ARD prior of ``student_prior``) times exp(−½ log(Λ/A_a) + R),
R = t² J_S² / (2κ² s Λ). ``Ũ(y)`` below is minus the log of that density (normalised prior included),
so ∫ exp(−Ũ) dy = Z = E_prior[√(A_a/Λ) e^R].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from solvers.theories.mean_field_ard.network_features import Features, Network, features, small_matmul
from solvers.theories.mean_field_ard.parity_cube import ParityCube, cube
from solvers.theories.mean_field_ard.reduced_prior import GaussianPrior, ReducedPrior


@lru_cache(maxsize=8)
def _cube_moments(k: int) -> tuple[tuple[float, np.ndarray, np.ndarray], tuple[float, np.ndarray, np.ndarray]]:
    """(E[c], E[c x], E[c x xᵀ]) over the 2^k cube points for c = χ_S and for c = 1."""
    cb = cube(k)
    X = cb.points

    def of(c: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        return float(np.mean(c)), (c @ X) / X.shape[0], np.einsum("p,pi,pj->ij", c, X, X) / X.shape[0]

    return of(cb.chi), of(np.ones(X.shape[0]))


@dataclass(frozen=True)
class ParityPotential:
    """Ũ(y) at one state (t and the unit's prior) of one network."""

    net: Network
    t: float
    prior: ReducedPrior

    @classmethod
    def gaussian(cls, net: Network, t: float, rho_rel: float, rho_irr: float) -> ParityPotential:
        """The potential with Gaussian weights of precision ρ_rel on S and ρ_irr off S."""
        return cls(net, t, GaussianPrior(net.k, net.d - net.k, rho_rel, rho_irr))

    @property
    def cb(self) -> ParityCube:
        return cube(self.net.k)

    @property
    def tau(self) -> float:
        """R = τ J_S²/Λ."""
        return self.t * self.t / (2.0 * self.net.kappa**2 * self.net.s)

    def values(self, Y: np.ndarray) -> tuple[np.ndarray, Features]:
        """Ũ at the rows of Y, and the features there."""
        Y = np.atleast_2d(Y)
        f = features(self.net.activation, self.cb, Y)
        return self.from_features(f, Y), f

    def from_features(self, f: Features, Y: np.ndarray) -> np.ndarray:
        """Ũ at the rows of Y = (w_S, u) from the features there."""
        lam = self.net.A + f.Sigma / self.net.s
        k = self.net.k
        return self.prior.value(Y[:, :k], Y[:, k]) + 0.5 * np.log(lam / self.net.A) - self.tau * f.J_S * f.J_S / lam

    def local(self, y: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Ũ, its gradient and Hessian at one point."""
        U, g, H = self.local_batch(np.atleast_2d(y))
        return float(U[0]), g[0], H[0]

    def local_batch(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Ũ, gradients (n, k+1) and Hessians (n, k+1, k+1) at the rows of Y (heat-equation closed forms)."""
        net, cb = self.net, self.cb
        k = net.k
        Y = np.atleast_2d(np.asarray(Y, dtype=float))
        n = Y.shape[0]
        w, u = Y[:, :k], Y[:, k]
        q = np.exp(u)
        X = cb.points
        n_pts = X.shape[0]
        mu = small_matmul(w, X.T)  # (n, 2^k)
        s1, s2 = net.activation.smoothed(mu, q[:, None], orders=4)
        half_q = 0.5 * q

        def moments(c: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            # value, gradient, Hessian in (w, u) of mean_x c_x F(μ_x + g), g ~ N(0, e^u)
            v = small_matmul(f[0], c) / n_pts
            g = np.empty((n, k + 1))
            g[:, :k] = small_matmul(f[1] * c, X) / n_pts
            g[:, k] = half_q * small_matmul(f[2], c) / n_pts
            H = np.empty((n, k + 1, k + 1))
            H[:, :k, :k] = np.einsum("np,pi,pj->nij", f[2] * c, X, X) / n_pts
            cross = half_q[:, None] * small_matmul(f[3] * c, X) / n_pts
            H[:, :k, k] = cross
            H[:, k, :k] = cross
            H[:, k, k] = (half_q * small_matmul(f[2], c) + half_q * half_q * small_matmul(f[4], c)) / n_pts
            return v, g, H

        return self._assemble(w, u, moments(cb.chi, s1), moments(np.ones(n_pts), s2))

    def local_center(self, u: float) -> tuple[float, np.ndarray, np.ndarray]:
        """:meth:`local` at y = (0, u), the centre well, where every pre-activation mean vanishes.

        There the smoothings are one number per order, and the cube averages reduce to E[c], E[c x] and
        E[c x xᵀ] (c = χ_S or 1), computed once per k: the same moments as :meth:`local_batch` without its
        per-point arrays (the test suite checks the two against each other).
        """
        net = self.net
        k = net.k
        q = math.exp(u)
        s1, s2 = net.activation.smoothed(np.zeros(1), q, orders=4)
        half_q = 0.5 * q

        def moments(c: tuple[float, np.ndarray, np.ndarray], f: np.ndarray) -> tuple[np.ndarray, ...]:
            mc, mcx, mcxx = c
            g = np.empty((1, k + 1))
            g[0, :k] = f[1, 0] * mcx
            g[0, k] = half_q * f[2, 0] * mc
            H = np.empty((1, k + 1, k + 1))
            H[0, :k, :k] = f[2, 0] * mcxx
            H[0, :k, k] = H[0, k, :k] = half_q * f[3, 0] * mcx
            H[0, k, k] = (half_q * f[2, 0] + half_q * half_q * f[4, 0]) * mc
            return np.array([f[0, 0] * mc]), g, H

        chi, one = _cube_moments(k)
        U, g, H = self._assemble(np.zeros((1, k)), np.array([u]), moments(chi, s1), moments(one, s2))
        return float(U[0]), g[0], H[0]

    def _assemble(self, w: np.ndarray, u: np.ndarray, jm: tuple[np.ndarray, ...],
                  sm: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Ũ, gradient and Hessian from the moments of J_S = E[χ φ] (jm) and Σ = E[φ²] (sm)."""
        net = self.net
        J, dJ, HJ = jm
        S, dS, HS = sm
        lam = net.A + S / net.s
        dL, HL = dS / net.s, HS / net.s
        tau = self.tau
        U = self.prior.value(w, u) + 0.5 * np.log(lam / net.A) - tau * J * J / lam
        grad, H = self.prior.gradient_hessian(w, u)
        L1 = lam[:, None]
        grad += 0.5 * dL / L1 - tau * (2.0 * J[:, None] * dJ / L1 - (J * J)[:, None] * dL / L1**2)
        L2 = lam[:, None, None]
        Jb = J[:, None, None]
        dLdL = np.einsum("ni,nj->nij", dL, dL)
        dJdJ = np.einsum("ni,nj->nij", dJ, dJ)
        cross = np.einsum("ni,nj->nij", dJ, dL)
        cross = cross + np.swapaxes(cross, 1, 2)
        H += 0.5 * (HL / L2 - dLdL / L2**2)
        H -= tau * (
            2.0 * dJdJ / L2 + 2.0 * Jb * HJ / L2 - 2.0 * Jb * cross / L2**2 - Jb * Jb * HL / L2**2
            + 2.0 * Jb * Jb * dLdL / L2**3
        )
        return U, grad, H
