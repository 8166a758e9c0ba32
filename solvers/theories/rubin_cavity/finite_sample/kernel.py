"""The adaptive kernel K_μν = N s_a2 E_w[erf(w·x_μ) erf(w·x_ν)] on a data set, for w = ρ e + w⊥.

w⊥ has the prior covariance σ_w²/D on the D − 1 directions orthogonal to e, and ρ follows the
overlap law p(ρ) ∝ exp(−D f(ρ; b, c)), which is even. Given ρ, g_μ = w·x_μ = ρ z_μ + ξ_μ with
ξ ~ N(0, C), C_μν = (σ_w²/D) x⊥μ·x⊥ν. Two closed forms make the average cheap:

* off the diagonal, the Taylor (Mehler) series in the covariance,
  E[F(g_μ) F(g_ν)] = Σ_k C_μν^k/k! E[F^(k)(g_μ)] E[F^(k)(g_ν)], with
  E[erf^(k)(a + s ξ)] = λ^k erf^(k)(λ a), λ = (1 + 2s²)^(-1/2). In terms of c̃ = 2 C_μν λ_μ λ_ν
  (|c̃| < 1 by Cauchy–Schwarz) and normalised Hermite functions it is
  K = Σ_k c̃^∘k ∘ (Φ_kᵀ Π Φ_k): one matrix product per order, summed by Horner's rule;
* on the diagonal, E[erf(a + s ξ)²] = 1 − 8 T(√2 a/√(1 + 2s²), (1 + 4s²)^(-1/2)) (Owen's T).

The ρ-average uses an n-node Gauss rule for the law in s = ρ² (Golub–Welsch from a Lanczos
reduction of a fine rule): the integrand is an entire function of s, so a few dozen nodes are
exact to round-off while the cost stays O(P² n) per order. The same nodes integrate the
derivative of the law with respect to (b, c), which gives the Jacobian.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.theories.rubin_cavity.common.erf_moments import shifted_erf_square_mean
from solvers.theories.rubin_cavity.common.erf_projections import erf_hermite_functions
from solvers.theories.rubin_cavity.finite_sample.data import SampleSet

#: Truncation target of the Mehler series (absolute, in units of the per-neuron kernel, which is O(1)).
SERIES_TOL = 1e-12
MAX_ORDER = 150
#: Rows per block of the kernel build.
BLOCK = 512


def gauss_rule(x: np.ndarray, w: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n-node Gauss rule of the discrete measure Σ w_i δ(x − x_i) (Lanczos with full reorthogonalisation)."""
    total = float(w.sum())
    q = np.sqrt(w / total)
    Q = [q]
    alpha, beta = [], []
    prev, b_prev = np.zeros_like(q), 0.0
    for i in range(n):
        v = x * Q[i]
        a = float(Q[i] @ v)
        alpha.append(a)
        v = v - a * Q[i] - b_prev * prev
        for qq in Q:  # full reorthogonalisation keeps the recurrence exact for the small n used here
            v -= (qq @ v) * qq
        b = float(np.linalg.norm(v))
        if i == n - 1 or b <= 1e-14 * max(1.0, abs(a)):
            break
        beta.append(b)
        prev, b_prev = Q[i], b
        Q.append(v / b)
    J = np.diag(alpha) + np.diag(beta, 1) + np.diag(beta, -1)
    nodes, vecs = np.linalg.eigh(J)
    return nodes, total * vecs[0] ** 2


def series_order(ct_max: float) -> int:
    """Terms of the series so that the tail bound 0.75 |c̃|^(K+1)/((K+1)(1 − |c̃|)) is below SERIES_TOL.

    From Cramér's bound |H_n(y)| e^(−y²/2) ≤ 1.0865 √(2ⁿ n!), each normalised term is at most 0.75 |c̃|^k/k.
    """
    c = min(abs(ct_max), 1.0 - 1e-12)
    for K in range(1, MAX_ORDER + 1):
        if 0.75 * c ** (K + 1) / ((K + 1) * (1.0 - c)) < SERIES_TOL:
            return K
    return MAX_ORDER


def series_tail_bound(ct_max: float, K: int) -> float:
    c = min(abs(ct_max), 1.0 - 1e-12)
    return 0.75 * c ** (K + 1) / ((K + 1) * (1.0 - c))


@dataclass
class KernelGeometry:
    """Everything about a pair of sample sets that the kernel needs but the overlap law does not change."""

    z_rows: np.ndarray
    z_cols: np.ndarray
    lam_rows: np.ndarray  # λ = (1 + 2 C_μμ)^(-1/2)
    lam_cols: np.ndarray
    s2_rows: np.ndarray  # C_μμ
    ct: np.ndarray  # c̃ = 2 C_μν λ_μ λ_ν (diagonal zeroed for a square training kernel)
    square: bool
    order: int
    tail_bound: float


def geometry(rows: SampleSet, cols: SampleSet, sigma_w2: float, D: int, square: bool) -> KernelGeometry:
    s = sigma_w2 / D
    s2_rows = s * rows.perp_norm2
    s2_cols = s * cols.perp_norm2
    lam_r = 1.0 / np.sqrt(1.0 + 2.0 * s2_rows)
    lam_c = 1.0 / np.sqrt(1.0 + 2.0 * s2_cols)
    ct = rows.perp_gram * (2.0 * s)
    ct *= lam_r[:, None]
    ct *= lam_c[None, :]
    if square:
        np.fill_diagonal(ct, 0.0)
    cmax = float(np.max(np.abs(ct))) if ct.size else 0.0
    K = series_order(cmax)
    return KernelGeometry(rows.z, cols.z, lam_r, lam_c, s2_rows, ct, square, K, series_tail_bound(cmax, K))


def kernels(geo: KernelGeometry, rho: np.ndarray, weight_sets: list[np.ndarray], prefactor: float) -> list[np.ndarray]:
    """prefactor · Σ_j π_j E[erf(w·x_μ) erf(w·x_ν) | ρ_j] for each weight vector π in ``weight_sets``.

    Built in row blocks (Horner's rule within a block stays in cache); a square training kernel is
    symmetric, so only the blocks on and above the diagonal are computed and then mirrored.
    """
    K = geo.order
    feat_r = erf_hermite_functions(np.outer(rho, geo.lam_rows * geo.z_rows), K)  # (K+1, n, P_rows)
    feat_c = feat_r if geo.square else erf_hermite_functions(np.outer(rho, geo.lam_cols * geo.z_cols), K)
    n_rows, n_cols = feat_r.shape[2], feat_c.shape[2]
    outs = []
    for pi in weight_sets:
        fw = feat_r * pi[None, :, None]
        out = np.empty((n_rows, n_cols))
        for i0 in range(0, n_rows, BLOCK):
            i1 = min(i0 + BLOCK, n_rows)
            j0 = i0 if geo.square else 0
            ct = geo.ct[i0:i1, j0:]
            acc = fw[K][:, i0:i1].T @ feat_c[K][:, j0:]
            for k in range(K - 1, -1, -1):
                acc *= ct
                acc += fw[k][:, i0:i1].T @ feat_c[k][:, j0:]
            out[i0:i1, j0:] = acc
            if geo.square:
                out[i1:, i0:i1] = acc[:, i1 - i0 :].T
        if geo.square:
            np.fill_diagonal(out, diagonal(geo, rho, pi))
        out *= prefactor
        outs.append(out)
    return outs


def diagonal(geo: KernelGeometry, rho: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """Exact E[erf(w·x_μ)²] averaged with weights π over the nodes (Owen's T form)."""
    return pi @ shifted_erf_square_mean(np.outer(rho, geo.z_rows), geo.s2_rows[None, :])
