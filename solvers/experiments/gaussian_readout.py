"""A linear readout with a Gaussian prior and a Gaussian likelihood, integrated out exactly.

Given the hidden weights of a network, its output on P inputs is ``f = Φ a`` with the P×N feature
matrix Φ and the N readout weights ``a ~ N(0, s I_N)``; the likelihood is ``y ~ N(f, T I_P)``. Then

    y ~ N(0, s ΦΦᵀ + T I_P)                                       (marginal likelihood)
    a | y ~ N(m, Σ),   Σ = (I_N/s + ΦᵀΦ/T)⁻¹,   m = Σ Φᵀ y / T       (conditional posterior)

so the hidden weights can be sampled from the marginal alone and every functional of the readout
is averaged in closed form per draw (Rao–Blackwellisation). One Cholesky factor serves both, of
the N×N matrix ``A = I_N/s + ΦᵀΦ/T`` when N < P and of ``B = s ΦΦᵀ + T I_P`` otherwise (Woodbury):

    log det B = P log T + N log s + log det A,     yᵀB⁻¹y = (yᵀy − yᵀΦ A⁻¹ Φᵀy/T)/T.

Everything is a pure JAX function of arrays of static shape (no physics here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax.numpy as jnp
from jax.scipy.linalg import cho_solve, solve_triangular

Array = jnp.ndarray
_LOG_2PI = math.log(2.0 * math.pi)


def _cholesky(a: Array) -> Array:
    return jnp.linalg.cholesky(0.5 * (a + a.T))


@dataclass(frozen=True)
class GaussianReadout:
    """The readout posterior given the features ``phi`` (P×N) of the training inputs.

    Attributes:
        phi: training features Φ.
        y: training targets.
        s: prior variance of each readout weight.
        T: likelihood variance (temperature).
    """

    phi: Array
    y: Array
    s: float
    T: float

    @property
    def _small_readout(self) -> bool:
        P, N = self.phi.shape
        return N < P

    def log_marginal(self) -> Array:
        """log N(y; 0, s ΦΦᵀ + T I_P), with its normalisation."""
        P, N = self.phi.shape
        y, phi, s, T = self.y, self.phi, self.s, self.T
        if self._small_readout:
            chol = _cholesky(jnp.eye(N) / s + phi.T @ phi / T)
            u = phi.T @ y
            logdet = P * jnp.log(T) + N * jnp.log(s) + 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol)))
            quad = (y @ y - u @ cho_solve((chol, True), u) / T) / T
        else:
            chol = _cholesky(s * (phi @ phi.T) + T * jnp.eye(P))
            logdet = 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol)))
            quad = y @ cho_solve((chol, True), y)
        return -0.5 * (quad + logdet + P * _LOG_2PI)

    def posterior(self) -> ReadoutPosterior:
        """The conditional posterior of the readout: mean, and what predictions need of its covariance."""
        P, N = self.phi.shape
        y, phi, s, T = self.y, self.phi, self.s, self.T
        if self._small_readout:
            chol = _cholesky(jnp.eye(N) / s + phi.T @ phi / T)
            mean = cho_solve((chol, True), phi.T @ y) / T
            return ReadoutPosterior(mean=mean, chol_precision=chol, chol_evidence=None, phi=phi, s=s, T=T)
        chol = _cholesky(s * (phi @ phi.T) + T * jnp.eye(P))
        mean = s * (phi.T @ cho_solve((chol, True), y))
        return ReadoutPosterior(mean=mean, chol_precision=None, chol_evidence=chol, phi=phi, s=s, T=T)


@dataclass(frozen=True)
class ReadoutPosterior:
    """a | y ~ N(mean, Σ); Σ is held as the Cholesky factor of Σ⁻¹ (N < P) or through that of B (N ≥ P)."""

    mean: Array
    chol_precision: Array | None
    chol_evidence: Array | None
    phi: Array
    s: float
    T: float

    def _covariance_times(self, v: Array) -> Array:
        """Σ v for v of shape (N, ...): Σ = A⁻¹, or Σ = s I − s² Φᵀ B⁻¹ Φ (Woodbury)."""
        if self.chol_precision is not None:
            return cho_solve((self.chol_precision, True), v)
        assert self.chol_evidence is not None
        return self.s * v - self.s**2 * (self.phi.T @ cho_solve((self.chol_evidence, True), self.phi @ v))

    def predict(self, phi_new: Array) -> tuple[Array, Array]:
        """Mean and variance of φᵀa at each row φ of ``phi_new`` (M×N)."""
        mean = phi_new @ self.mean
        var = jnp.sum(phi_new * self._covariance_times(phi_new.T).T, axis=1)
        return mean, jnp.maximum(var, 0.0)

    def second_moment_norm(self) -> Array:
        """E[‖a‖² | y] = ‖m‖² + tr Σ."""
        N = self.mean.shape[0]
        if self.chol_precision is not None:
            inv_l = solve_triangular(self.chol_precision, jnp.eye(N), lower=True)  # Σ = L⁻ᵀL⁻¹, tr Σ = ‖L⁻¹‖²
            trace = jnp.sum(inv_l**2)
        else:
            assert self.chol_evidence is not None
            w = solve_triangular(self.chol_evidence, self.phi, lower=True)
            trace = N * self.s - self.s**2 * jnp.sum(w**2)
        return self.mean @ self.mean + trace
