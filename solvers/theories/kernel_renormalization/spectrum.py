"""One eigendecomposition per (data, activation, depth, the priors that enter the kernel), cached.

Everything the saddle point and the observables need is projected once onto the eigenbasis of
the kernel; afterwards S, dS/dQ̄ and every observable cost O(P) (O(P·P_test) for per-test-point
predictions), whatever T, N1 or λ1 a sweep visits.

Which priors enter the cached kernel:
  * relu, linear (homogeneous of degree one): none. The kernel is built at λ0 = λ1 = 1 and
    the priors return as one scalar factor, K^(L) = F^L(C|λ0=1)/(λ0 λ1^L), so sweeps in λ0 and λ1
    reuse the spectrum too.
  * erf: λ0 always (it sets the scale of C inside the arcsine); λ1 only for depth > 1, where it
    scales the input of the next arcsine. The readout's 1/λ1 is always a scalar factor.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from solvers.theories.kernel_renormalization.datasets import Dataset
from solvers.theories.kernel_renormalization.kernels import (
    HOMOGENEOUS,
    Activation,
    KernelBlocks,
    activation_mean,
    derivative_mean,
    input_covariance,
    propagate,
)
from solvers.theories.kernel_renormalization.lru import BytesLRU

#: Entries kept, and total bytes kept, by the cache shared across requests (a spectrum larger than
#: the budget is held only by the problems that use it).
CACHE_ENTRIES = 8
CACHE_BYTES = 3 * 2**30


class KernelFailure(ArithmeticError):
    """The kernel of these data cannot be formed or diagonalised in floating point (a numerical failure)."""


def _eigh(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric eigendecomposition (divide and conquer, in place). Tests count calls to this."""
    return scipy.linalg.eigh(a, overwrite_a=True, check_finite=False, driver="evd")


@dataclass(frozen=True)
class Spectrum:
    """A kernel in its own eigenbasis, with the data projected onto it (U itself is not kept).

    ``kappa`` are the eigenvalues of the *base* kernel; the readout kernel is ``scale · base`` with
    the scale of :func:`readout_scale`. With a mean mode (mean-corrected ReLU) the base kernel is
    the feature covariance K − m mᵀ and ``m_t``/``m0`` carry the mean vector.
    """

    kappa: np.ndarray  # (P,) eigenvalues, clipped at 0
    y_t: np.ndarray  # (P,) Uᵀ y
    k0_t: np.ndarray  # (P_test, P) cross kernel in the eigenbasis
    k0_t_sq: np.ndarray  # its elementwise square
    k00: np.ndarray  # (P_test,) test diagonal of the base kernel
    y_test: np.ndarray
    P: int
    m_t: np.ndarray | None = None  # (P,) Uᵀ m, mean-corrected ReLU only
    m0: np.ndarray | None = None  # (P_test,) prior mean at the test points
    u_t: np.ndarray | None = None  # (P,) Uᵀ u, class-contrast vector (depth 1 only)
    z: np.ndarray | None = None  # (P, N0) Uᵀ G X, G = diag E[σ'(h_μ)] (depth 1 only)
    z_norm2: np.ndarray | None = None  # (P,) squared row norms of z
    rank_tol: float = 0.0  # eigenvalues at or below this count as zero (T = 0 needs none)
    seconds: float = 0.0  # wall time of the build

    @property
    def singular(self) -> bool:
        return bool(self.kappa.min() <= self.rank_tol)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.kappa, self.y_t, self.k0_t, self.k0_t_sq, self.k00, self.y_test)) + sum(
            a.nbytes for a in (self.m_t, self.m0, self.u_t, self.z, self.z_norm2) if a is not None
        )


def kernel_priors(activation: Activation, depth: int, lambda0: float, lambda1: float) -> tuple[float, float]:
    """The (λ0, λ1) at which the cached base kernel is built."""
    if activation in HOMOGENEOUS:
        return 1.0, 1.0
    return lambda0, (lambda1 if depth > 1 else 1.0)


def readout_scale(activation: Activation, depth: int, lambda0: float, lambda1: float) -> float:
    """Factor turning the base kernel into the readout NNGP kernel K^(L) (1/λ1 of the readout included)."""
    if activation in HOMOGENEOUS:
        return 1.0 / (lambda0 * lambda1**depth)
    return 1.0 / lambda1


def feature_scale(activation: Activation, lambda0: float) -> float:
    """Factor turning the depth-1 base kernel into the feature kernel K = E[σ(h)σ(h')] (no 1/λ1)."""
    return 1.0 / lambda0 if activation in HOMOGENEOUS else 1.0


def base_kernel(dataset: Dataset, activation: Activation, depth: int, lambda0: float, lambda1: float) -> KernelBlocks:
    """K = F_σ(K^(L−1)) with K^(0) = C and K^(ℓ) = F_σ(K^(ℓ−1))/λ1: the readout kernel without its 1/λ1."""
    k = input_covariance(dataset.X, dataset.X_test, lambda0)
    for layer in range(depth):
        k = propagate(activation, k)
        if layer < depth - 1:
            k = k.scaled(1.0 / lambda1)
    return k


def spectrum_of(
    blocks: KernelBlocks,
    y: np.ndarray,
    y_test: np.ndarray,
    *,
    mean: tuple[np.ndarray, np.ndarray] | None = None,
    features: np.ndarray | None = None,
) -> Spectrum:
    """Diagonalise ``blocks.train`` (minus m mᵀ when ``mean`` = (m, m0) is given) and project the data.

    ``features`` (P×N0, = G X) adds the class-contrast vector and the weight-correlation projections.
    """
    t0 = time.perf_counter()
    train, cross, k00 = blocks.train, blocks.cross, blocks.test_diag
    if mean is not None:
        m, m0 = mean
        train = train - np.outer(m, m)
        cross = cross - np.outer(m0, m)
        k00 = k00 - m0 * m0
    P = train.shape[0]
    try:
        kappa, U = _eigh(np.array(train, dtype=float, order="F", copy=True))
    except np.linalg.LinAlgError as exc:
        raise KernelFailure(f"eigendecomposition of the kernel failed: {exc}") from exc
    kappa = np.maximum(kappa, 0.0)  # a kernel is PSD; negative values are round-off
    k0_t = cross @ U
    extra: dict[str, np.ndarray | None] = {}
    if mean is not None:
        extra["m_t"], extra["m0"] = U.T @ mean[0], np.array(mean[1], dtype=float)
    if features is not None:
        u = np.where(y > 0, 1.0, 0.0) / max(1, int((y > 0).sum())) - np.where(y < 0, 1.0, 0.0) / max(
            1, int((y < 0).sum())
        )
        z = U.T @ features
        extra.update(u_t=U.T @ u, z=z, z_norm2=np.einsum("ij,ij->i", z, z))
    return Spectrum(
        kappa=kappa,
        y_t=U.T @ y,
        k0_t=k0_t,
        k0_t_sq=k0_t * k0_t,
        k00=np.array(k00, dtype=float),
        y_test=np.array(y_test, dtype=float),
        P=P,
        rank_tol=float(kappa.max(initial=0.0)) * P * np.finfo(float).eps * 10,
        seconds=time.perf_counter() - t0,
        **extra,
    )


def build_spectrum(
    dataset: Dataset, activation: Activation, depth: int, lambda0: float, lambda1: float, mean_mode: bool
) -> Spectrum:
    """The spectrum of the readout base kernel (priors as returned by :func:`kernel_priors`)."""
    with np.errstate(over="ignore", invalid="ignore"):
        blocks = base_kernel(dataset, activation, depth, lambda0, lambda1)
        label_norms = (float(dataset.y @ dataset.y), float(dataset.y_test @ dataset.y_test))
    if not all(np.all(np.isfinite(a)) for a in (blocks.train, blocks.cross, blocks.test_diag, label_norms)):
        raise KernelFailure("the kernel or the squared labels overflow double precision (inputs too large?)")
    c_diag = np.einsum("ij,ij->i", dataset.X, dataset.X) / (lambda0 * dataset.N0)
    mean = None
    if mean_mode:
        ct_diag = np.einsum("ij,ij->i", dataset.X_test, dataset.X_test) / (lambda0 * dataset.N0)
        mean = (activation_mean(activation, c_diag), activation_mean(activation, ct_diag))
    features = None
    if depth == 1 and not mean_mode:
        features = derivative_mean(activation, c_diag)[:, None] * dataset.X
    return spectrum_of(blocks, dataset.y, dataset.y_test, mean=mean, features=features)


# ---- the cache shared across requests ---------------------------------------------------------
_CACHE: BytesLRU[Spectrum] = BytesLRU(CACHE_BYTES, CACHE_ENTRIES, lambda sp: sp.nbytes)
#: Kernels that failed, so that a failing kernel is not rebuilt at every request (messages only).
_FAILED: BytesLRU[str] = BytesLRU(2**20, CACHE_ENTRIES, len)


def spectrum_key(
    dataset: Dataset, activation: Activation, depth: int, lambda0: float, lambda1: float, mean_mode: bool
) -> tuple:
    """The data hash and the priors that enter the base kernel: equal keys, equal spectra."""
    l0, l1 = kernel_priors(activation, depth, lambda0, lambda1)
    return (dataset.digest, activation, depth, l0, l1, mean_mode)


def cached_spectrum(
    dataset: Dataset, activation: Activation, depth: int, lambda0: float, lambda1: float, mean_mode: bool
) -> Spectrum:
    """:func:`build_spectrum` through the shared LRU keyed by :func:`spectrum_key`."""
    key = spectrum_key(dataset, activation, depth, lambda0, lambda1, mean_mode)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    failed = _FAILED.get(key)
    if failed is not None:
        raise KernelFailure(failed)
    l0, l1 = key[3], key[4]
    try:
        spec = build_spectrum(dataset, activation, depth, l0, l1, mean_mode)
    except KernelFailure as exc:
        _FAILED.put(key, str(exc))
        raise
    _CACHE.put(key, spec)
    return spec


def clear_cache() -> None:
    _CACHE.clear()
    _FAILED.clear()
