"""Bordered linear algebra at a (nearly) singular Jacobian A = F_x.

For border vectors b, c (approximate left and right null vectors of A) the bordered matrix

    M = [[A, b], [cᵀ, 0]]

is regular at a simple singular point of A. Solving M [v; σ] = [0; 1] and Mᵀ [w; σ] = [0; 1]
gives the fold function σ (zero exactly where A is singular, smooth across), the right null
vector v (cᵀv = 1) and the left null vector w (bᵀw = 1). Its derivative along any direction is

    σ' = −wᵀ A' v,

which is what the Jacobians of the fold and branch-point systems use (Govaerts, *Numerical
Methods for Bifurcations of Dynamical Equilibria*, SIAM 2000, ch. 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import lu_factor, lu_solve


@dataclass(frozen=True)
class Bordered:
    """The fold function and the null vectors of one bordered solve."""

    sigma: float
    v: np.ndarray  # right, cᵀv = 1
    w: np.ndarray  # left, bᵀw = 1

    def unit_v(self) -> np.ndarray:
        return self.v / np.linalg.norm(self.v)

    def unit_w(self) -> np.ndarray:
        return self.w / np.linalg.norm(self.w)


def bordered_matrix(A: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    n = A.shape[0]
    M = np.zeros((n + 1, n + 1))
    M[:n, :n] = A
    M[:n, n] = b
    M[n, :n] = c
    return M


def fold_function(A: np.ndarray, b: np.ndarray, c: np.ndarray) -> Bordered:
    """σ, v, w of the bordered system; raises LinAlgError when M itself is singular or A is not finite."""
    if not np.all(np.isfinite(A)):
        raise np.linalg.LinAlgError("non-finite Jacobian")
    n = A.shape[0]
    lu = lu_factor(bordered_matrix(A, b, c), check_finite=False)
    if np.min(np.abs(np.diag(lu[0]))) == 0.0:
        raise np.linalg.LinAlgError("singular bordered matrix")
    rhs = np.zeros(n + 1)
    rhs[n] = 1.0
    right = lu_solve(lu, rhs, check_finite=False)
    left = lu_solve(lu, rhs, trans=1, check_finite=False)
    if not (np.all(np.isfinite(right)) and np.all(np.isfinite(left))):
        raise np.linalg.LinAlgError("non-finite bordered solution")
    return Bordered(float(right[n]), right[:n], left[:n])


def bordered_solve(A: np.ndarray, b: np.ndarray, c: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """y with A y + κ b = rhs, cᵀy = 0: the solution of A y = rhs projected on range(A) along b."""
    n = A.shape[0]
    sol = np.linalg.solve(bordered_matrix(A, b, c), np.concatenate([rhs, [0.0]]))
    return sol[:n]


def null_vectors(A: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Unit right and left singular vectors of the smallest singular value, that value and the largest."""
    U, s, Vt = np.linalg.svd(A)
    return Vt[-1].copy(), U[:, -1].copy(), float(s[-1]), float(s[0])


def singularity_indicator(A: np.ndarray) -> float:
    """sign(det A)·|det A|^(1/n): continuous, zero exactly where A is singular, of the size of A's entries."""
    if not np.all(np.isfinite(A)):
        return float("nan")
    sign, logdet = np.linalg.slogdet(A)
    if sign == 0:
        return 0.0
    return float(sign * np.exp(logdet / A.shape[0]))
