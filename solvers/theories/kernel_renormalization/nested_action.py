"""The "nested" deep action: Q̄_ℓ enters the kernel recursion layer by layer.

    K^(0) = C,   K^(ℓ) = (Q̄_ℓ/λ1) F_σ(K^(ℓ−1)),   K_R = K^(L)
    S = Σ_ℓ (Q̄_ℓ − log Q̄_ℓ) + (1/N1) [log det(T + K_R) + yᵀ(T + K_R)^(-1) y]

For erf, K_R depends non-linearly on Q̄_1 … Q̄_(L−1), so no eigenbasis survives a change of Q̄: each
evaluation is dense (one Cholesky and one inverse, O(P³)). The gradient in s_ℓ = log Q̄_ℓ is exact,
by forward-mode tangents dK^(ℓ)/ds_m pushed through the elementwise layer map; the engine takes
finite differences of it for Newton's Jacobian. For relu and linear F_σ is homogeneous and this
action equals the vanilla one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from solvers.theories.kernel_renormalization.kernels import (
    Activation,
    KernelBlocks,
    diagonal_kernel,
    pair_kernel,
    propagate,
    propagate_train_tangent,
)


def _layer_train(activation: Activation, c: np.ndarray) -> np.ndarray:
    d = np.diagonal(c)
    out = pair_kernel(activation, d[:, None], c, d[None, :])
    np.fill_diagonal(out, diagonal_kernel(activation, d))
    return out


@dataclass(frozen=True)
class NestedAction:
    C: np.ndarray  # (P, P) first-layer covariance (λ0 inside)
    y: np.ndarray
    activation: Activation
    lambda1: float
    T: float
    N1: float
    depth: int

    @property
    def dim(self) -> int:
        return self.depth

    def readout_kernel(self, s: np.ndarray, tangents: bool = False) -> tuple[np.ndarray, list[np.ndarray]]:
        """K_R and, if asked, dK_R/ds_m for every layer m."""
        q = np.exp(s)
        k = self.C
        dks: list[np.ndarray] = []
        for layer in range(self.depth):
            f = _layer_train(self.activation, k)
            factor = q[layer] / self.lambda1
            if tangents:
                dks = [factor * propagate_train_tangent(self.activation, k, dk) for dk in dks]
            k = factor * f
            if tangents:
                dks.append(k)
        return k, dks

    def _solve(self, k: np.ndarray) -> tuple[tuple[np.ndarray, bool], float, np.ndarray]:
        a = k + self.T * np.eye(k.shape[0])
        chol = scipy.linalg.cho_factor(a, lower=True, check_finite=False)
        logdet = 2.0 * float(np.log(np.diagonal(chol[0])).sum())
        return chol, logdet, scipy.linalg.cho_solve(chol, self.y, check_finite=False)

    def value(self, s: np.ndarray) -> float:
        k, _ = self.readout_kernel(s)
        _, logdet, alpha = self._solve(k)
        return float(np.sum(np.exp(s) - s) + (logdet + self.y @ alpha) / self.N1)

    def gradient(self, s: np.ndarray) -> np.ndarray:
        k, dks = self.readout_kernel(s, tangents=True)
        chol, _, alpha = self._solve(k)
        a_inv = scipy.linalg.cho_solve(chol, np.eye(k.shape[0]), check_finite=False)
        data = [(float(np.sum(a_inv * dk)) - float(alpha @ dk @ alpha)) / self.N1 for dk in dks]
        return np.exp(s) - 1.0 + np.array(data)

    def readout_blocks(self, C_blocks: KernelBlocks, s: np.ndarray) -> KernelBlocks:
        """K_R on train, test-train and test-diagonal blocks (for predictions at the solution)."""
        q = np.exp(s)
        k = C_blocks
        for layer in range(self.depth):
            k = propagate(self.activation, k).scaled(q[layer] / self.lambda1)
        return k
