"""The prior of one hidden unit in the reduced coordinates y = (w_S, u), u = log |w_⊥|²: the Gaussian one.

The reduced law is p(y) ∝ prior(y) · √(A_a/Λ) e^R; everything the quadrature needs from the prior is
collected in one object, so the law does not know which prior it integrates:

* ``value(W, u)``: −log of the normalised prior density of y (rows of W are w_S);
* ``gradient_hessian(W, u)``: its first and second derivatives in y (the blocks w_S and u are independent
  under the prior, so the Hessian has no w–u cross terms);
* ``value_diagonal(s, u)``: the value on the diagonal w_S = s(1, …, 1) (the aligned-well search);
* ``u_mode()``, ``u_derivatives(u)``: the centre well's one-dimensional Newton solve at w_S = 0;
* ``curvature_at_zero()``: the w_S-curvature at w_S = 0 (the bulk's reference when the centre well is lost);
* ``bulk(grid, q_nodes)``: the prior-exact rule in (v, q), v = w_S/|w_⊥|, q = |w_⊥|²: the node positions q and
  log prior masses on the fixed v-grid, and any extra per-node statistics the prior reports (``extra_names``).

:class:`GaussianPrior` is w_j ~ N(0, 1/ρ_rel) on S and N(0, 1/ρ_irr) off S (plain MF, or MF-ARD's shared
precisions): Gaussian in w_S, log-Gamma in u with shape (d − k)/2, and in (v, q) a Gamma law of q given v
(shape d/2, rate (ρ_rel|v|² + ρ_irr)/2), integrated by a generalised Gauss–Laguerre rule. The per-unit ARD prior
is :class:`~solvers.theories.mean_field_ard.student_prior.StudentPrior`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.special import gammaln

from solvers.theories.mean_field_ard.bulk_grid import BulkGrid, gamma_rule


@dataclass(frozen=True)
class BulkNodes:
    """The bulk rule's nodes on the fixed v-grid: q (n_v, n_q), log prior mass (n_v, n_q), extra statistics."""

    q: np.ndarray
    logw: np.ndarray
    extra: np.ndarray  # (len(extra_names), n_v, n_q)


class ReducedPrior(Protocol):
    k: int
    n: int

    @property
    def extra_names(self) -> tuple[str, ...]: ...

    def value(self, W: np.ndarray, u: np.ndarray) -> np.ndarray: ...

    def value_diagonal(self, s: np.ndarray, u: np.ndarray) -> np.ndarray: ...

    def gradient_hessian(self, W: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    def u_mode(self) -> float: ...

    def u_derivatives(self, u: float) -> tuple[float, float]: ...

    def curvature_at_zero(self) -> float: ...

    def bulk(self, grid: BulkGrid, q_nodes: int) -> BulkNodes: ...

    def extra_stats(self, W: np.ndarray, u: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class GaussianPrior:
    """w_S ~ N(0, I/ρ_rel), w_⊥ ~ N(0, I/ρ_irr) with n = d − k irrelevant coordinates."""

    k: int
    n: int
    rho_rel: float
    rho_irr: float

    extra_names: tuple[str, ...] = ()

    @property
    def shape(self) -> float:
        """n/2, the log-Gamma shape of u."""
        return 0.5 * self.n

    @property
    def log_norm(self) -> float:
        a = self.shape
        return (-0.5 * self.k * math.log(self.rho_rel / (2.0 * math.pi)) - a * math.log(0.5 * self.rho_irr)
                + float(gammaln(a)))

    def _value(self, wS2: np.ndarray, u: np.ndarray) -> np.ndarray:
        return 0.5 * self.rho_rel * wS2 + 0.5 * self.rho_irr * np.exp(u) - self.shape * u + self.log_norm

    def value(self, W: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self._value(np.sum(W * W, axis=-1), u)

    def value_diagonal(self, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self._value(self.k * s * s, u)

    def gradient_hessian(self, W: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n, k = W.shape
        grad = np.empty((n, k + 1))
        grad[:, :k] = self.rho_rel * W
        grad[:, k] = 0.5 * self.rho_irr * np.exp(u) - self.shape
        H = np.zeros((n, k + 1, k + 1))
        H[:, np.arange(k), np.arange(k)] = self.rho_rel
        H[:, k, k] = 0.5 * self.rho_irr * np.exp(u)
        return grad, H

    def u_mode(self) -> float:
        return math.log(2.0 * self.shape / self.rho_irr)

    def u_derivatives(self, u: float) -> tuple[float, float]:
        q = math.exp(u)
        return 0.5 * self.rho_irr * q - self.shape, 0.5 * self.rho_irr * q

    def curvature_at_zero(self) -> float:
        return self.rho_rel

    def bulk(self, grid: BulkGrid, q_nodes: int) -> BulkNodes:
        """In (v, q) the prior density is C q^{b−1} e^{−q r(v)}, b = d/2, r(v) = (ρ_rel |v|² + ρ_irr)/2, so ∫ dq is
        Γ(b) r^{−b} E_{Gamma(b, r)}[·], done by the Gauss rule of Gamma(b, 1) rescaled by 1/r."""
        a, k = self.shape, self.k
        b = a + 0.5 * k
        x, W = gamma_rule(b, q_nodes)
        r = 0.5 * (self.rho_rel * grid.v2 + self.rho_irr)
        logC = 0.5 * k * math.log(self.rho_rel / (2.0 * math.pi)) + a * math.log(0.5 * self.rho_irr) - gammaln(a)
        q = x[None, :] / r[:, None]
        logw = (grid.logw + logC + gammaln(b) - b * np.log(r))[:, None] + np.log(W)[None, :]
        return BulkNodes(q, logw, np.zeros((0, *q.shape)))

    def extra_stats(self, W: np.ndarray, u: np.ndarray) -> np.ndarray:
        return np.zeros((0, W.shape[0]))
