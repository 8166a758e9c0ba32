"""The per-unit ARD prior of one hidden unit in the reduced coordinates y = (w_S, u), u = log |w_⊥|².

Every unit carries its own precision ρ_ij per input coordinate, ρ_ij ~ Gamma(α₀, β₀), w_ij | ρ_ij ~ N(0, 1/ρ_ij).
The mean-field law factorises over units, and within a unit the precisions are integrated out exactly:

    p(w_j) = ∫ N(w_j; 0, 1/ρ) Gamma(ρ; α₀, β₀) dρ = Γ(α₀ + ½) / (Γ(α₀) √(2πβ₀)) · (1 + w_j²/(2β₀))^{−(α₀+½)},

a Student-t with 2α₀ degrees of freedom and scale √(β₀/α₀), independent across coordinates. Given w_j the
precision is Gamma(α₀ + ½, β₀ + w_j²/2), so its posterior mean is (α₀ + ½)/(β₀ + w_j²/2): the ARD precisions
this reading reports are the law's averages of that (``rho_rel`` over S; ``rho_irr`` off S, where the law
knows only q = |w_⊥|², so E[ρ_j | q] is needed).

Off S the law needs the density of q = 2β₀ Σ_{j∉S} B_j, B_j = w_j²/(2β₀) ~ BetaPrime(½, α₀), from
:mod:`~solvers.theories.mean_field_ard.beta_prime_sums` (log-scale log-density G_n). E[ρ_j | q] follows from
the identity f_{BetaPrime(½,α)}(b)/(1 + b) = (α/(α + ½)) f_{BetaPrime(½,α+1)}(b):

    E[ρ_j | Σ B = S] = (α₀ + ½)/β₀ · E[1/(1 + B_j) | S] = (α₀/β₀) · e^{H_n(log S) − G_n(log S)},

H_n the log-scale log-density of the same sum with one term from BetaPrime(½, α₀ + 1).

The bulk rule in (v, q): for each node v of the fixed grid the prior's log-density in u,
ℓ_v(u) = Σ_j log p(e^{u/2} v_j) + (k/2) u + G_n(u − log 2β₀) (w_S = e^{u/2} v), is unimodal; its mode u*_v and
curvature fix the map u = u*_v + σ_v sinh τ, and the trapezoidal rule in τ (step ``TAU_STEP``) integrates it —
geometric convergence for this smooth, doubly exponentially decaying integrand. The reach covers the heavy right
tail (q's prior tail ∝ q^{−α₀−1}) until its first moment is below e^{−REACH}. The nodes depend on the prior
alone, so the rule is fixed for a network and the law is a smooth function of the state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.special import gammaln

from solvers.theories.mean_field_ard.beta_prime_sums import LogScaleDensity, sum_density, sum_density_one_shifted
from solvers.theories.mean_field_ard.bulk_grid import BulkGrid
from solvers.theories.mean_field_ard.reduced_prior import BulkNodes

#: Trapezoidal step in τ of the bulk rule's u-nodes.
TAU_STEP = 0.25
#: Neglected prior mass (and first moment) of each tail: e^{−REACH}.
REACH = 28.0
#: Newton iterations for each v-node's mode in u.
MODE_ITERATIONS = 40


@dataclass(frozen=True)
class StudentPrior:
    """Student-t weights (2α₀ degrees of freedom, scale √(β₀/α₀)) on k relevant and n irrelevant coordinates."""

    k: int
    n: int
    alpha0: float
    beta0: float

    extra_names: tuple[str, ...] = ("rho_rel", "rho_irr")

    @property
    def c(self) -> float:
        """α₀ + ½: the exponent of (1 + w²/(2β₀)) and the precision's posterior shape."""
        return self.alpha0 + 0.5

    @property
    def shift(self) -> float:
        """log 2β₀: u = log q = log Σ B + shift."""
        return math.log(2.0 * self.beta0)

    @cached_property
    def log_norm_one(self) -> float:
        """log of one coordinate's normaliser √(2πβ₀) Γ(α₀)/Γ(α₀ + ½)."""
        return 0.5 * math.log(2.0 * math.pi * self.beta0) + float(gammaln(self.alpha0) - gammaln(self.c))

    @cached_property
    def G(self) -> LogScaleDensity:
        return sum_density(self.alpha0, self.n)

    @cached_property
    def H(self) -> LogScaleDensity:
        return sum_density_one_shifted(self.alpha0, self.n)

    # ---- the density ------------------------------------------------------------------------------
    def _relevant(self, W: np.ndarray) -> np.ndarray:
        return self.c * np.sum(np.log1p(W * W / (2.0 * self.beta0)), axis=-1) + self.k * self.log_norm_one

    def value(self, W: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self._relevant(W) - self.G(np.asarray(u) - self.shift)

    def value_diagonal(self, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        return (self.k * (self.c * np.log1p(s * s / (2.0 * self.beta0)) + self.log_norm_one)
                - self.G(np.asarray(u) - self.shift))

    def gradient_hessian(self, W: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n, k = W.shape
        den = self.beta0 + 0.5 * W * W
        grad = np.empty((n, k + 1))
        grad[:, :k] = self.c * W / den
        x = np.asarray(u) - self.shift
        grad[:, k] = -self.G(x, 1)
        H = np.zeros((n, k + 1, k + 1))
        H[:, np.arange(k), np.arange(k)] = self.c * (self.beta0 - 0.5 * W * W) / den**2
        H[:, k, k] = -self.G(x, 2)
        return grad, H

    def u_mode(self) -> float:
        i = int(np.argmax(self.G.g))
        return float(self.G.x[i]) + self.shift

    def u_derivatives(self, u: float) -> tuple[float, float]:
        x = np.array([u - self.shift])
        return float(-self.G(x, 1)[0]), float(-self.G(x, 2)[0])

    def curvature_at_zero(self) -> float:
        return self.c / self.beta0

    # ---- precisions -------------------------------------------------------------------------------
    def extra_stats(self, W: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Per point: the mean over S of E[ρ_j | w_j], and E[ρ_j | q] off S."""
        rel = np.mean(self.c / (self.beta0 + 0.5 * W * W), axis=-1)
        x = np.asarray(u) - self.shift
        irr = (self.alpha0 / self.beta0) * np.exp(self.H(x) - self.G(x))
        return np.stack([rel, irr])

    # ---- the bulk rule ----------------------------------------------------------------------------
    def _ell(self, V: np.ndarray, u: np.ndarray, nu: int) -> np.ndarray:
        """ℓ_v(u) (nu = 0) or its u-derivatives, without the constant −k log_norm_one; V (n_v, k), u (n_v, m)."""
        z = np.exp(u)[..., None] * (V * V)[:, None, :] / (2.0 * self.beta0)  # (n_v, m, k)
        x = u - self.shift
        if nu == 0:
            return -self.c * np.sum(np.log1p(z), axis=-1) + 0.5 * self.k * u + self.G(x)
        if nu == 1:
            return -self.c * np.sum(z / (1.0 + z), axis=-1) + 0.5 * self.k + self.G(x, 1)
        return -self.c * np.sum(z / (1.0 + z) ** 2, axis=-1) + self.G(x, 2)

    def bulk(self, grid: BulkGrid, q_nodes: int) -> BulkNodes:
        """The sinh-trapezoid rule in u for every v-node (``q_nodes`` is the Gaussian rule's order, unused)."""
        V = grid.V
        u = np.full((V.shape[0], 1), self.u_mode())
        for _ in range(MODE_ITERATIONS):
            g1, g2 = self._ell(V, u, 1), self._ell(V, u, 2)
            step = np.clip(-g1 / np.minimum(g2, -1e-12), -2.0, 2.0)
            u = u + step
            if float(np.max(np.abs(step))) < 1e-12:
                break
        sigma = 1.0 / np.sqrt(np.maximum(-self._ell(V, u, 2), 1e-12))  # (n_v, 1)
        s_min = float(np.min(sigma))
        # left tail ∝ e^{(n + k)/2 · Δu} at most, right tail's first moment ∝ e^{−(α₀ − 1) Δu} at most; and at least
        # the reach of a Gaussian of the mode's width (a large α₀ or n makes the law Gaussian near its mode)
        left, right = 2.0 * REACH / (self.n + self.k), REACH / max(self.alpha0 - 1.0, 0.25)
        gauss = math.sqrt(2.0 * REACH)
        t_lo, t_hi = -math.asinh(max(left / s_min, gauss)), math.asinh(max(right / s_min, gauss))
        tau = np.arange(math.floor(t_lo / TAU_STEP), math.ceil(t_hi / TAU_STEP) + 1) * TAU_STEP
        U = u + sigma * np.sinh(tau)[None, :]
        logw = (grid.logw[:, None] + self._ell(V, U, 0) - self.k * self.log_norm_one
                + np.log(TAU_STEP * sigma * np.cosh(tau)[None, :]))
        q = np.exp(U)
        rel = np.mean(self.c / (self.beta0 + 0.5 * q[..., None] * (V * V)[:, None, :]), axis=-1)
        x = U - self.shift
        irr = (self.alpha0 / self.beta0) * np.exp(self.H(x) - self.G(x))
        return BulkNodes(q, logw, np.stack([rel, irr]))
