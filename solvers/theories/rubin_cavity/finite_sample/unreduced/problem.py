"""The tree-level closure on a fixed set of particles, as an engine :class:`Problem` in the particles' exponents.

With the particles of :mod:`.sampler` fixed, a law of the family p(w) ∝ p0(w) exp E(w) is the weighted particle set
W_i ∝ c_i exp(x_i), x_i = E(w_i), and its kernel is K(x) = N s_a2 Σ_i W_i φ_i φ_iᵀ. The closure is the fixed point

    x = G(x),   G_i(x) = (s_a2/2) [(φ_iᵀ t̄)² − φ_iᵀ A φ_i],   A = (K(x) + T I)⁻¹,   t̄ = A y,

in n coordinates (the kernel's coordinates in the span of the particles' features, n ≪ P(P + 1)/2). Its Jacobian is
analytic: with B = Φ A Φᵀ and u = Φ t̄, ∂G_i/∂W_k = (N s_a2²/2) (B_ik² − 2 u_i B_ik u_k), and ∂W/∂x = diag W − W Wᵀ.
Newton on x solves the mixture of wells as one system: the mass in the aligned wells is not iterated (a damped map
from the NNGP kernel flips between "all aligned" and "none"), it is a coordinate of the Newton step.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
from scipy.special import erf, logsumexp

from solvers.core.problem import Problem
from solvers.theories.rubin_cavity.finite_sample.unreduced.law import Couplings
from solvers.theories.rubin_cavity.finite_sample.unreduced.sampler import Particles


class ParticleClosure:
    """G(x) and its Jacobian for particles on the training inputs X with targets y, at temperature T."""

    def __init__(self, particles: Particles, X: np.ndarray, y: np.ndarray, N: float, s_a2: float):
        self.particles = particles
        self.phi = erf(particles.W @ X.T)  # (n, P), fixed with the particles
        self.log_base = particles.log_base
        self.y, self.N, self.s_a2 = y, N, s_a2

    def at(self, N: float, s_a2: float, y: np.ndarray) -> ParticleClosure:
        """The closure of the same particles for another width, readout variance or target (the prior of w, which
        the particles were drawn under, is unchanged)."""
        if N == self.N and s_a2 == self.s_a2 and y is self.y:
            return self
        out = copy.copy(self)
        out.N, out.s_a2, out.y = N, s_a2, y
        return out

    def subset(self, mask: np.ndarray, log_base: np.ndarray) -> ParticleClosure:
        """The closure on the particles selected by ``mask`` alone, with their own base weights (a complete estimate
        of the law from part of the chains, for batch-means errors)."""
        out = copy.copy(self)
        p = self.particles
        out.particles = replace(p, W=p.W[mask], node=p.node[mask], chain=p.chain[mask], E_pilot=p.E_pilot[mask])
        out.phi, out.log_base = self.phi[mask], log_base[mask]
        return out

    def weights(self, x: np.ndarray) -> np.ndarray:
        lw = self.log_base + x
        return np.exp(lw - logsumexp(lw))

    def kernel(self, x: np.ndarray) -> np.ndarray:
        W = self.weights(x)
        return self.N * self.s_a2 * (self.phi.T * W) @ self.phi

    def couplings(self, x: np.ndarray, T: float) -> Couplings:
        return Couplings.of(self.kernel(x), self.y, T, self.s_a2)

    def fixed_point(self, x: np.ndarray, T: float) -> np.ndarray:
        return self.couplings(x, T).exponent(self.phi)

    def jacobian(self, x: np.ndarray, T: float) -> np.ndarray:
        cp = self.couplings(x, T)
        B = self.phi @ cp.A @ self.phi.T
        u = self.phi @ cp.tbar
        dG_dW = 0.5 * self.N * self.s_a2**2 * (B * B - 2.0 * np.outer(u, u) * B)
        W = self.weights(x)
        J = dG_dW * W[None, :] - np.outer(dG_dW @ W, W)  # dG_dW (diag W − W Wᵀ) without the n³ product
        J[np.diag_indices_from(J)] -= 1.0
        return J

    def problem(self, start: np.ndarray) -> Problem:
        return Problem(
            residual=None,
            fixed_point=self.fixed_point,
            jacobian=self.jacobian,
            dim=len(start),
            starts=lambda T: {"pilot": start},
            names=tuple(f"E{i}" for i in range(len(start))),
        )
