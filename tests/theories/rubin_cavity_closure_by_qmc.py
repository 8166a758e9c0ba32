"""The finite-sample tree-level closure map x ↦ G(x), x = (b, c, ℓ11, ℓ13, ℓ33, ℓ⊥), computed by quasi-Monte Carlo
over the hidden weight, with none of the solver's code (no Mehler series, no Gauss rule of the law).

The law of w = ρ e + w⊥ is the prior N(0, σ_w²/D I) tilted in ρ alone,

    p(w) ∝ p0(w) exp{D [(2u/π) t (b − 2ct)² − (κ/2) V(ρ²; ℓ)]},   t = s/h, s = ρ², h = 1 + 2(σ_w² + s),
    V(s) = v(σ_w² + s) − ℓ11 (4/π) t − 2 ℓ13 (−8/(√6 π)) t² − ℓ33 (8/(3π)) t³ − ℓ⊥ (4/π) σ_w²/h,

u = P² s_a2/(T² D), κ = s_a2 P/(T D). ρ is drawn from its 1-D law by inverting the CDF on a fine grid, w⊥ from
the prior; the first coordinate of a scrambled Sobol point gives ρ's quantile, the other D − 1 the Gaussian w⊥.
The kernel is the prior's closed form (Williams' arcsin kernel) plus the QMC estimate of the difference between
the tilted and the prior average, with the prior's ρ taken at the same quantile and the same w⊥, so that most of
the sampling error cancels. From K: r̄ = T (K + T)⁻¹ y, (b, c) its least-squares projection on [H1(z), H3(z)],
ℓ = (1/P)(EᵀE − T Eᵀ(K + T)⁻¹E) for E = [H1, H3/√6] and ℓ⊥ the same for the coordinates ⊥ e, averaged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import erf
from scipy.stats import norm, qmc

from solvers.core.blas import one_blas_thread


@dataclass(frozen=True)
class DataSet:
    X: np.ndarray  # (P, D), teacher direction e = first coordinate
    epsilon: float
    N: float
    s_a2: float
    T: float
    sigma_w2: float = 0.5

    @property
    def P(self) -> int:
        return int(self.X.shape[0])

    @property
    def D(self) -> int:
        return int(self.X.shape[1])


def _log_tilt(rho: np.ndarray, x: np.ndarray, d: DataSet) -> np.ndarray:
    """−D f(ρ) up to a constant: the prior's ρ²/(2σ_w²) plus the tilt."""
    sw2, P, D, T = d.sigma_w2, d.P, d.D, d.T
    u, kappa = P * P * d.s_a2 / (T * T * D), d.s_a2 * P / (T * D)
    b, c, l11, l13, l33, lp = x
    s = rho * rho
    h = 1.0 + 2.0 * (sw2 + s)
    t = s / h
    V = ((2.0 / math.pi) * np.arcsin(2.0 * (sw2 + s) / h) - l11 * (4.0 / math.pi) * t
         + 2.0 * l13 * 8.0 / (math.sqrt(6.0) * math.pi) * t * t - l33 * 8.0 / (3.0 * math.pi) * t**3
         - lp * (4.0 / math.pi) * sw2 / h)
    return -D * (s / (2.0 * sw2) - (2.0 * u / math.pi) * t * (b - 2.0 * c * t) ** 2 + 0.5 * kappa * V)


def _rho_quantiles(p: np.ndarray, x: np.ndarray, d: DataSet) -> np.ndarray:
    grid = np.linspace(-8.0, 8.0, 80_001)
    logp = _log_tilt(grid, x, d)
    dens = np.exp(logp - logp.max())
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]))])
    return np.interp(p, cdf / cdf[-1], grid)


def _prior_kernel(d: DataSet) -> np.ndarray:
    a = d.sigma_w2 / d.D
    n = 1.0 + 2.0 * a * np.sum(d.X * d.X, axis=1)
    return d.N * d.s_a2 * (2.0 / math.pi) * np.arcsin(2.0 * a * d.X @ d.X.T / np.sqrt(np.outer(n, n)))


def closure_map(x: np.ndarray, d: DataSet, log2_points: int = 14, seed: int = 0) -> np.ndarray:
    with one_blas_thread():  # small products: BLAS's spinning threads only slow them on shared cores
        return _closure_map(x, d, log2_points, seed)


def _closure_map(x: np.ndarray, d: DataSet, log2_points: int, seed: int) -> np.ndarray:
    U = qmc.Sobol(d.D, scramble=True, seed=seed).random_base2(log2_points)
    scale = math.sqrt(d.sigma_w2 / d.D)
    z = d.X[:, 0]
    perp = (norm.ppf(U[:, 1:]) * scale) @ d.X[:, 1:].T
    tilted = erf(np.outer(_rho_quantiles(U[:, 0], x, d), z) + perp)
    prior = erf(np.outer(norm.ppf(U[:, 0]) * scale, z) + perp)
    K = _prior_kernel(d) + d.N * d.s_a2 * (tilted.T @ tilted - prior.T @ prior) / len(U)
    C = np.linalg.inv(K + d.T * np.eye(d.P))
    y = z + d.epsilon * (z**3 - 3.0 * z)
    bc = np.linalg.lstsq(np.column_stack([z, z**3 - 3.0 * z]), d.T * C @ y, rcond=None)[0]
    E = np.column_stack([z, (z**3 - 3.0 * z) / math.sqrt(6.0)])
    ell = (E.T @ E - d.T * E.T @ C @ E) / d.P
    Xp = d.X[:, 1:]
    ell_perp = (np.sum(Xp * Xp) - d.T * np.sum(Xp * (C @ Xp))) / (d.P * Xp.shape[1])
    return np.array([bc[0], bc[1], ell[0, 0], ell[0, 1], ell[1, 1], ell_perp])
