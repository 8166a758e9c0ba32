"""One network's constants and the population averages of one hidden unit at a batch of reduced points.

:class:`Network` holds the sizes, scalings, noise and activation; :func:`features` gives J_A, Σ, |w_S|²
and q at points y = (w_S, u). Both the potential and the fixed quadrature grids are built from these.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from solvers.theories.mean_field_ard.activations import Activation
from solvers.theories.mean_field_ard.memo import Memo
from solvers.theories.mean_field_ard.parity_cube import ParityCube


def small_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b for a small inner dimension without BLAS (whose thread start-up dominates such products)."""
    if b.ndim == 1:
        return np.einsum("...i,i->...", a, b, optimize=False)
    return np.einsum("...i,ij->...j", a, b, optimize=False)


@dataclass(frozen=True)
class Network:
    """The constants of one network: sizes, scalings, noise and the activation."""

    d: int
    k: int
    N: float
    gamma: float
    kappa: float
    sigma_a2: float
    activation: Activation

    @property
    def s(self) -> float:
        """κ² N^{2γ}: Λ = A_a + Σ/s, and the reward is J_r²/(2κ² s Λ)."""
        return self.kappa**2 * self.N ** (2.0 * self.gamma)

    @property
    def A(self) -> float:
        return 1.0 / self.sigma_a2

    @property
    def ridge(self) -> float:
        """c₀ = κ² N^{2γ−1}: f̄ = (1/c₀)·(kernel operator)·r, the population ridge of the kernel regression."""
        return self.kappa**2 * self.N ** (2.0 * self.gamma - 1.0)

    @property
    def shape(self) -> float:
        """(d − k)/2, the log-Gamma shape of u = log |w_⊥|² under the prior."""
        return 0.5 * (self.d - self.k)


@dataclass(frozen=True)
class Features:
    """Population averages at a batch of points y = (w_S, u).

    ``J`` holds J_A(w) for every A ⊆ S at chaos order 0 in the irrelevant part (n, 2^k), with
    ``J[:, -1] = J_S``; the equations need only J_S, so a rule may leave ``J`` out (None).
    """

    J_S: np.ndarray  # E φ(wᵀx) χ_S(x) (n,)
    Sigma: np.ndarray  # E φ(wᵀx)² (n,)
    wS2: np.ndarray  # |w_S|² (n,)
    q: np.ndarray  # |w_⊥|² (n,)
    J: np.ndarray | None = None


def _feature_bytes(key: object, f: Features) -> int:
    arrays = (f.J_S, f.Sigma, f.wS2, f.q) + ((f.J,) if f.J is not None else ())
    return sum(a.nbytes for a in arrays) + len(key[2])  # type: ignore[index]


#: Features of fixed rules across requests, keyed by the nodes' bytes; bounded in entries and bytes.
_FEATURE_MEMO: Memo[Features] = Memo(32, max_bytes=256 * 2**20, weight=_feature_bytes)


def features(act: Activation, cb: ParityCube, Y: np.ndarray) -> Features:
    """J_A, Σ, |w_S|², q at the rows of Y (memoised: a rule whose nodes do not move is evaluated once)."""
    Y = np.ascontiguousarray(np.atleast_2d(Y), dtype=float)
    return _FEATURE_MEMO.get_or_make((act.name, cb.k, Y.tobytes()), lambda: _features(act, cb, Y))


def _features(act: Activation, cb: ParityCube, Y: np.ndarray) -> Features:
    k = cb.k
    wS, q = Y[:, :k], np.exp(Y[:, k])
    mu = small_matmul(wS, cb.points.T)  # (n, 2^k)
    s1, s2 = act.smoothed(mu, q[:, None], orders=0)
    J = small_matmul(s1[0], cb.walsh) / cb.points.shape[0]
    return Features(J_S=J[:, -1].copy(), Sigma=s2[0].mean(axis=1), wS2=np.sum(wS * wS, axis=1), q=q, J=J)


def geometry(net: Network) -> Network:
    """The network with its scalars (N, γ, κ, σ_a²) at fixed values: the key of what depends only on d, k and the
    activation (the fixed grids below), so that a sweep in κ or N reuses them at every value."""
    return replace(net, N=1.0, gamma=0.5, kappa=1.0, sigma_a2=1.0)
