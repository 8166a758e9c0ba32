"""NNGP kernels of one fully connected layer, applied blockwise to train/test covariances.

A layer maps the covariance ``C`` of its Gaussian pre-activations to ``K_μν = E[σ(h_μ) σ(h_ν)]``,
``(h_μ, h_ν) ~ N(0, [[C_μμ, C_μν], [C_μν, C_νν]])``. Every entry depends only on the triple
``(C_μμ, C_μν, C_νν)``, so the map is elementwise given the diagonals; that is what lets us carry
the train block, the test-train cross block and the test diagonal through a deep recursion without
ever forming the test-test block.

Closed forms (erf uses the variance parameter ½ of erf, hence the factors 2):
    erf    K = (2/π) arcsin(2C_μν / √((1 + 2C_μμ)(1 + 2C_νν)))
    relu   K = √(C_μμ C_νν)/(2π) [sin θ + (π − θ) cos θ],  cos θ = C_μν/√(C_μμ C_νν);  K_μμ = C_μμ/2
    linear K = C
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import erf as _erf

Activation = Literal["erf", "relu", "linear"]

#: Activations with σ(c h) = c σ(h) for c > 0: their kernel is homogeneous of degree one in C, so
#: the priors λ0, λ1 enter every result only through the product λ0 λ1 (per layer).
HOMOGENEOUS: frozenset[str] = frozenset({"relu", "linear"})


@dataclass(frozen=True)
class KernelBlocks:
    """A kernel restricted to what the theory needs: train block, test-train block, test diagonal."""

    train: np.ndarray  # (P, P)
    cross: np.ndarray  # (P_test, P)
    test_diag: np.ndarray  # (P_test,)

    @property
    def train_diag(self) -> np.ndarray:
        return np.diagonal(self.train)

    def scaled(self, c: float) -> KernelBlocks:
        return KernelBlocks(self.train * c, self.cross * c, self.test_diag * c)


def input_covariance(X: np.ndarray, X_test: np.ndarray, lambda0: float) -> KernelBlocks:
    """C_μν = x_μ·x_ν / (λ0 N0): covariance of first-layer pre-activations under w ~ N(0, 1/λ0)."""
    norm = 1.0 / (lambda0 * X.shape[1])
    return KernelBlocks(
        train=(X @ X.T) * norm,
        cross=(X_test @ X.T) * norm,
        test_diag=np.einsum("ij,ij->i", X_test, X_test) * norm,
    )


# ---- elementwise maps ------------------------------------------------------------------------
def pair_kernel(activation: Activation, cii: np.ndarray, cij: np.ndarray, cjj: np.ndarray) -> np.ndarray:
    """E[σ(h_i) σ(h_j)] for broadcastable arrays of (C_ii, C_ij, C_jj)."""
    if activation == "linear":
        return np.array(cij, dtype=float, copy=True)
    if activation == "erf":
        z = 2.0 * cij / np.sqrt((1.0 + 2.0 * cii) * (1.0 + 2.0 * cjj))
        return (2.0 / np.pi) * np.arcsin(np.clip(z, -1.0, 1.0))
    if activation == "relu":
        norm = np.sqrt(cii * cjj)
        with np.errstate(invalid="ignore", divide="ignore"):
            cos = np.where(norm > 0, cij / np.where(norm > 0, norm, 1.0), 0.0)
        cos = np.clip(cos, -1.0, 1.0)
        theta = np.arccos(cos)
        return norm / (2.0 * np.pi) * (np.sqrt(1.0 - cos * cos) + (np.pi - theta) * cos)
    raise ValueError(f"unknown activation {activation!r}")


def diagonal_kernel(activation: Activation, c: np.ndarray) -> np.ndarray:
    """E[σ(h)²] for h ~ N(0, c), exactly (no arcsin/arccos round-off at cos θ = 1)."""
    if activation == "linear":
        return np.array(c, dtype=float, copy=True)
    if activation == "erf":
        return (2.0 / np.pi) * np.arcsin(2.0 * c / (1.0 + 2.0 * c))
    if activation == "relu":
        return 0.5 * np.asarray(c, dtype=float)
    raise ValueError(f"unknown activation {activation!r}")


def pair_kernel_partials(
    activation: Activation, cii: np.ndarray, cij: np.ndarray, cjj: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(∂K/∂C_ii, ∂K/∂C_ij, ∂K/∂C_jj) of :func:`pair_kernel` (for forward-mode tangents)."""
    if activation == "linear":
        zero = np.zeros(np.broadcast(cii, cij, cjj).shape)
        return zero, np.ones_like(zero), zero
    if activation == "erf":
        di, dj = 1.0 + 2.0 * cii, 1.0 + 2.0 * cjj
        root = np.sqrt(di * dj)
        z = np.clip(2.0 * cij / root, -1.0, 1.0)
        pref = (2.0 / np.pi) / np.sqrt(np.maximum(1.0 - z * z, 1e-300))
        return -pref * z / di, pref * 2.0 / root, -pref * z / dj
    if activation == "relu":
        norm = np.sqrt(cii * cjj)
        with np.errstate(invalid="ignore", divide="ignore"):
            cos = np.clip(np.where(norm > 0, cij / np.where(norm > 0, norm, 1.0), 0.0), -1.0, 1.0)
            sin = np.sqrt(1.0 - cos * cos)
            d_ii = np.where(cii > 0, sin * np.sqrt(cjj / np.where(cii > 0, cii, 1.0)), 0.0) / (4.0 * np.pi)
            d_jj = np.where(cjj > 0, sin * np.sqrt(cii / np.where(cjj > 0, cjj, 1.0)), 0.0) / (4.0 * np.pi)
        return d_ii, (np.pi - np.arccos(cos)) / (2.0 * np.pi), d_jj
    raise ValueError(f"unknown activation {activation!r}")


# ---- blockwise layer maps --------------------------------------------------------------------
def propagate(activation: Activation, c: KernelBlocks) -> KernelBlocks:
    """F_σ(C) on the three blocks."""
    d = c.train_diag
    train = pair_kernel(activation, d[:, None], c.train, d[None, :])
    np.fill_diagonal(train, diagonal_kernel(activation, d))
    cross = pair_kernel(activation, c.test_diag[:, None], c.cross, d[None, :])
    return KernelBlocks(train, cross, diagonal_kernel(activation, c.test_diag))


def propagate_train_tangent(activation: Activation, c: np.ndarray, dc: np.ndarray) -> np.ndarray:
    """Directional derivative of F_σ(C) (train block) along dC: the forward-mode tangent."""
    d, dd = np.diagonal(c), np.diagonal(dc)
    fi, fij, fj = pair_kernel_partials(activation, d[:, None], c, d[None, :])
    out = fi * dd[:, None] + fij * dc + fj * dd[None, :]
    # On the diagonal all three arguments are C_ii; the exact total derivative avoids arcsin'(1).
    np.fill_diagonal(out, diagonal_derivative(activation, d) * dd)
    return out


def diagonal_derivative(activation: Activation, c: np.ndarray) -> np.ndarray:
    """d E[σ(h)²]/dc for h ~ N(0, c)."""
    c = np.asarray(c, dtype=float)
    if activation == "linear":
        return np.ones_like(c)
    if activation == "erf":
        d = 1.0 + 2.0 * c
        z = 2.0 * c / d
        return (2.0 / np.pi) * (2.0 / (d * d)) / np.sqrt(1.0 - z * z)
    if activation == "relu":
        return np.full_like(c, 0.5)
    raise ValueError(f"unknown activation {activation!r}")


# ---- one-point functions ---------------------------------------------------------------------
def activation_mean(activation: Activation, c: np.ndarray) -> np.ndarray:
    """m = E[σ(h)], h ~ N(0, c): zero for odd σ, √(c/(2π)) for ReLU."""
    c = np.asarray(c, dtype=float)
    if activation == "relu":
        return np.sqrt(c / (2.0 * np.pi))
    return np.zeros_like(c)


def derivative_mean(activation: Activation, c: np.ndarray) -> np.ndarray:
    """E[σ'(h)], h ~ N(0, c): the Stein/Gaussian-equivalence slope of each input."""
    c = np.asarray(c, dtype=float)
    if activation == "erf":
        return (2.0 / np.sqrt(np.pi)) / np.sqrt(1.0 + 2.0 * c)
    if activation == "relu":
        return np.full_like(c, 0.5)
    return np.ones_like(c)


def activation_function(activation: Activation) -> Callable[[np.ndarray], np.ndarray]:
    """σ itself (used to sample networks)."""
    if activation == "erf":
        return _erf
    if activation == "relu":
        return lambda h: np.maximum(h, 0.0)
    return lambda h: np.asarray(h, dtype=float)
