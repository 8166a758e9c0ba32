"""Observables at a saddle point: GP predictions, errors, class-manifold distance, weight correlations.

The predictive posterior is GP regression with the renormalised kernel K_R and noise T
(Pacelli et al. 2023): K_R = a·B + b·m mᵀ in the eigenbasis of B (b = 0 except for the
mean-corrected ReLU action), so every quantity below is O(P) or O(P·P_test) per evaluation.

    mean   Γ(x0)  = k_R(x0)ᵀ A^(-1) y,      A = T·I + K_R
    var    σ²(x0) = K_R(x0, x0) − k_R(x0)ᵀ A^(-1) k_R(x0)        (function variance, no +T)
    ε_g           = mean over test points of (y0 − Γ)² + σ²
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse.linalg

from solvers.theories.kernel_renormalization.spectrum import Spectrum

#: Input dimension up to which the eigenvalues of Λ1 + Λ2 come from a dense eigensolver.
DENSE_EIGEN_MAX_N0 = 400


@dataclass(frozen=True)
class Posterior:
    """GP regression with K_R = a·diag(κ) + b·m̃ m̃ᵀ and noise T, in the eigenbasis of the spectrum."""

    spectrum: Spectrum
    a: float
    b: float
    T: float

    @property
    def _rank_one(self) -> bool:
        return self.spectrum.m_t is not None and self.b != 0.0

    @cached_property
    def _pieces(self) -> tuple[np.ndarray, np.ndarray | None, float]:
        inv = 1.0 / (self.T + self.a * self.spectrum.kappa)
        if not self._rank_one:
            return inv, None, 0.0
        m = self.spectrum.m_t
        assert m is not None
        z = m * inv
        return inv, z, self.b / (1.0 + self.b * float(m @ z))

    @property
    def inverse_diagonal(self) -> np.ndarray:
        """1/(T + aκ): A^(-1) in the eigenbasis when b = 0."""
        return self._pieces[0]

    @cached_property
    def weights(self) -> np.ndarray:
        """A^(-1) ỹ."""
        return self.solve(self.spectrum.y_t)

    def solve(self, v: np.ndarray) -> np.ndarray:
        """A^(-1) v for v of shape (P,) or (n, P) (rows), by Sherman–Morrison."""
        inv, z, c = self._pieces
        out = v * inv
        if z is not None:
            out = out - c * np.multiply.outer(v @ z, z)
        return out

    # ---- predictions: products of the test kernel with a few P-vectors, then O(P_test) algebra ----
    def columns(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The P-vectors the predictions multiply by k̃0, and those they multiply by k̃0∘k̃0."""
        inv, z, _ = self._pieces
        if z is None:
            return [self.weights], [inv]
        m = self.spectrum.m_t
        assert m is not None
        return [self.weights, z, m * inv], [inv]

    def from_products(self, k0v: np.ndarray, k0sq_v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and function variance from ``k̃0 @ columns()[0]`` and ``(k̃0∘k̃0) @ columns()[1]``."""
        sp = self.spectrum
        if not self._rank_one:  # A = T + aK: the products are all it takes
            mean = self.a * k0v[:, 0]
            var = self.a * sp.k00 - self.a * self.a * k0sq_v[:, 0]
            return mean, np.maximum(var, 0.0)
        assert sp.m_t is not None and sp.m0 is not None
        inv, z, c = self._pieces
        assert z is not None
        p = self.weights
        rows_p = self.a * k0v[:, 0] + self.b * sp.m0 * float(sp.m_t @ p)
        # k_R rows = a k̃0 + b m0 m̃ᵀ;  k_Rᵀ A^(-1) k_R expanded term by term (O(P·P_test))
        k0z, k0m_inv = k0v[:, 1], k0v[:, 2]
        m_inv_m = float(sp.m_t @ (sp.m_t * inv))
        m_z = float(sp.m_t @ z)
        quad_kk = self.a**2 * (k0sq_v[:, 0] - c * k0z**2)
        quad_km = 2.0 * self.a * self.b * sp.m0 * (k0m_inv - c * k0z * m_z)
        quad_mm = self.b**2 * sp.m0**2 * (m_inv_m - c * m_z**2)
        var = self.a * sp.k00 + self.b * sp.m0**2 - (quad_kk + quad_km + quad_mm)
        return rows_p, np.maximum(var, 0.0)

    def predictive(self) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and function variance at every test point."""
        return predict_together([self])[0]

    def errors(self, predictive: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
        mean, var = self.predictive() if predictive is None else predictive
        bias2 = (self.spectrum.y_test - mean) ** 2
        n = bias2.size  # sum / n is what mean() computes, without its Python-level overhead (three per point)
        return {
            "generalization_error": float((bias2 + var).sum() / n),
            "bias2": float(bias2.sum() / n),
            "variance": float(var.sum() / n),
            "test_mean": mean,
            "test_variance": var,
        }

    def train_error(self) -> float:
        """Posterior average of (y_μ − f(x_μ))² over the training set.

        y − f̄ = T A^(-1) y and the posterior covariance on the training set is T(I − T A^(-1)), both
        basis-independent, so the average needs only traces.
        """
        sp = self.spectrum
        p = self.weights
        inv, z, c = self._pieces
        tr_inv = float(inv.sum()) - (c * float(z @ z) if z is not None else 0.0)
        return float((self.T**2 * float(p @ p) + self.T * (sp.P - self.T * tr_inv)) / sp.P)


def predict_together(posteriors: Sequence[Posterior]) -> list[tuple[np.ndarray, np.ndarray]]:
    """(mean, variance) of each posterior; those on one spectrum share one pass over its test kernel.

    The pass over the P_test×P test kernel (twice: k̃0 and k̃0∘k̃0) is what a prediction costs, so the
    vectors of every posterior on one spectrum are stacked into one matrix product.
    """
    out: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(posteriors)
    done: set[int] = set()
    for i, post in enumerate(posteriors):
        if i in done:
            continue
        group = [j for j in range(i, len(posteriors)) if posteriors[j].spectrum is post.spectrum]
        done.update(group)
        cols = [posteriors[j].columns() for j in group]
        k0v = post.spectrum.k0_t @ np.column_stack([v for c in cols for v in c[0]])
        k0sq_v = post.spectrum.k0_t_sq @ np.column_stack([v for c in cols for v in c[1]])
        a = b = 0
        for j, (c0, c1) in zip(group, cols, strict=True):
            out[j] = posteriors[j].from_products(k0v[:, a : a + len(c0)], k0sq_v[:, b : b + len(c1)])
            a, b = a + len(c0), b + len(c1)
    return [o for o in out if o is not None]


def class_distance(
    spectrum: Spectrum, qbar: float, a: float, feature_scale: float, lambda1: float, T: float, N1: float,
    inv: np.ndarray | None = None,
) -> dict[str, float] | None:
    """Squared distance between the class centroids in feature space φ/√N1 (Corti et al. 2025).

    ⟨D²⟩ = uᵀ⟨K̂⟩u = D²_NNGP + (Δ1 + Δ2)/N1 with u = 1_A/P_A − 1_B/P_B (classes by the sign of y),
    ⟨K̂⟩ = K + (Q̄/(λ1 N1)) K A^(-1)(y yᵀ − A) A^(-1) K, so
    Δ1 = −(Q̄/λ1) uᵀ K A^(-1) K u  (≤ 0),   Δ2 = (Q̄/λ1)(uᵀ K A^(-1) y)²  (≥ 0).
    ``inv`` = 1/(T + aκ) where the caller has it already.
    """
    if spectrum.u_t is None:
        return None
    if inv is None:
        inv = 1.0 / (T + a * spectrum.kappa)
    ku = feature_scale * spectrum.kappa * spectrum.u_t
    d2_nngp = float(spectrum.u_t @ ku)
    delta1 = -(qbar / lambda1) * float(ku @ (ku * inv))
    delta2 = (qbar / lambda1) * float(ku @ (spectrum.y_t * inv)) ** 2
    return {"D2": d2_nngp + (delta1 + delta2) / N1, "D2_nngp": d2_nngp, "delta1": delta1, "delta2": delta2}


def weight_correlations(
    spectrum: Spectrum,
    qbar: float,
    a: float,
    lambda0: float,
    lambda1: float,
    N0: int,
    T: float,
    N1: float,
    inv: np.ndarray | None = None,
    products: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, Any] | None:
    """First-layer weight two-point function ⟨w wᵀ⟩ = I/λ0 + (Λ1 + Λ2)/λ0 (unit-averaged).

    Λ1 = −(q/(λ0 N0 N1)) X̃ᵀ A^(-1) X̃,  Λ2 = (q/(λ0 N0 N1)) (X̃ᵀA^(-1)y)(X̃ᵀA^(-1)y)ᵀ,  q = Q̄/λ1,
    X̃ = G X, G = diag E[σ'(h_μ)] (exact for linear σ; the Gaussian-equivalence estimate otherwise).
    ``inv`` = 1/(T + aκ) where the caller has it already; ``products``: X̃ᵀA^(-1)y = Zᵀ(ỹ∘inv) and X̃ᵀA^(-1)X̃ =
    Zᵀ diag(inv) Z (its lower triangle packed row by row, :func:`packed_gram`) where the caller has them already.
    """
    z = spectrum.z
    if z is None or spectrum.z_norm2 is None:
        return None
    if inv is None:
        inv = 1.0 / (T + a * spectrum.kappa)
    pref = (qbar / lambda1) / (lambda0 * N0 * N1)
    bvec, gram = products if products is not None else (z.T @ (spectrum.y_t * inv), None)
    out: dict[str, Any] = {
        "trace_lambda1": -pref * float(spectrum.z_norm2 @ inv),
        "trace_lambda2": pref * float(bvec @ bvec),
    }
    lo, hi = _extreme_eigenvalues(z, inv, bvec, pref, gram)
    out["max_eigenvalue"], out["min_eigenvalue"] = hi, lo
    out["leading_eigenvalue"] = None if lo is None or hi is None else (hi if abs(hi) >= abs(lo) else lo)
    return out


def extreme_eigenvalues(m: np.ndarray, lower_only: bool = False) -> tuple[float, float]:
    """Smallest and largest eigenvalue of a symmetric matrix: one tridiagonal reduction, then bisection for
    the two ends only (the reduction is the part of a full eigvalsh that needs all of them). ``lower_only``:
    only the lower triangle of ``m`` is set (and ``m`` may be overwritten)."""
    n = m.shape[0]
    if n == 1:
        return float(m[0, 0]), float(m[0, 0])
    _, d, e, _, info = scipy.linalg.lapack.dsytrd(m, lower=1, lwork=max(1, 8 * n), overwrite_a=int(lower_only))
    if info != 0:
        raise np.linalg.LinAlgError(f"tridiagonal reduction failed (info = {info})")
    ends = []
    for i in (1, n):
        count, w, _, _, info = scipy.linalg.lapack.dstebz(d, e, 3, 0.0, 0.0, i, i, 0.0, "E")
        if info != 0 or count != 1:
            raise np.linalg.LinAlgError(f"bisection for eigenvalue {i} of {n} failed (info = {info})")
        ends.append(float(w[0]))
    return ends[0], ends[1]


@cache
def _tril(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.tril_indices(n)


@cache
def _tril_flat(n: int) -> np.ndarray:
    """Memory offsets of the lower triangle (row by row, as :func:`packed_gram` packs it) of a column-major n × n
    matrix."""
    rows, cols = _tril(n)
    return rows + cols * n


def packed_gram(z: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Zᵀ diag(w) Z for each column w of ``weights`` (P × k), of either sign: rows (k, N0(N0+1)/2), each the lower
    triangle packed row by row (``np.tril_indices``)."""
    n0 = z.shape[1]
    out = np.empty((weights.shape[1], n0 * (n0 + 1) // 2))
    scratch = np.empty_like(z)
    for j, w in enumerate(weights.T):
        gram = np.zeros((n0, n0), order="F")
        for sign, rows in ((1.0, np.flatnonzero(w > 0)), (-1.0, np.flatnonzero(w < 0))):
            if rows.size:
                # the rows of one sign, scaled by √|w|, gathered into the scratch (no allocation per column)
                part = np.take(z, rows, axis=0, out=scratch[: rows.size])
                part *= np.sqrt(np.abs(w[rows]))[:, None]
                gram = scipy.linalg.blas.dsyrk(sign, part.T, beta=1.0, c=gram, trans=0, lower=1, overwrite_c=1)
        out[j] = gram[_tril(n0)]
    return out


def _extreme_eigenvalues(
    z: np.ndarray, inv: np.ndarray, bvec: np.ndarray, pref: float, gram: np.ndarray | None = None
) -> tuple[float | None, float | None]:
    """Smallest and largest eigenvalue of pref·(−Zᵀ D^(-1) Z + b bᵀ) (N0 × N0); ``gram``: Zᵀ D^(-1) Z, packed
    (:func:`packed_gram`), where the caller has it."""
    n0 = z.shape[1]
    if gram is not None:
        # b bᵀ is symmetric: read column-major it is itself, and its lower triangle is where the packed gram goes
        m = np.multiply.outer(bvec, bvec)
        m.reshape(-1)[_tril_flat(n0)] -= gram
        m *= pref
        return extreme_eigenvalues(m.T, lower_only=True)
    if n0 <= DENSE_EIGEN_MAX_N0:
        # One symmetric rank-k update into the lower triangle, pref·b bᵀ − pref·wᵀw, which is all the tridiagonal
        # reduction reads: no product of the full matrix, no copy of the other triangle.
        # (wᵀ is w's own memory read column-major, and b bᵀ is symmetric: its transpose is a column-major view.)
        w = z * np.sqrt(inv)[:, None]
        m = scipy.linalg.blas.dsyrk(-pref, w.T, beta=1.0, c=(pref * np.outer(bvec, bvec)).T, trans=0, lower=1,
                                    overwrite_c=1)
        return extreme_eigenvalues(m, lower_only=True)

    def matvec(v: np.ndarray) -> np.ndarray:
        v = np.ravel(v)
        return pref * (bvec * float(bvec @ v) - z.T @ ((z @ v) * inv))

    op = scipy.sparse.linalg.LinearOperator((n0, n0), matvec=matvec, dtype=float)
    try:
        hi = scipy.sparse.linalg.eigsh(op, k=1, which="LA", tol=1e-10, return_eigenvectors=False)[0]
        lo = scipy.sparse.linalg.eigsh(op, k=1, which="SA", tol=1e-10, return_eigenvectors=False)[0]
    except scipy.sparse.linalg.ArpackNoConvergence:
        return None, None
    return float(lo), float(hi)
