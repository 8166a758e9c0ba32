"""The relevant sub-cube of a k-sparse parity: its 2^k points and its Walsh basis.

A hidden unit's pre-activation on x ∈ {±1}^d splits as ``h = μ(x_S) + g`` with
``μ(x_S) = w_Sᵀ x_S`` (k relevant coordinates) and ``g = w_⊥ᵀ x_⊥`` (d − k irrelevant ones).
For d − k ≫ 1, g is Gaussian with variance q⊥ = |w_⊥|² given w_⊥ (central limit theorem), so
every population average over x reduces to a 2^k-point sum over x_S of a Gaussian smoothing in g.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class ParityCube:
    """Points x_S ∈ {±1}^k (rows), and χ_A(x_S) for every subset A ⊆ S (bit mask ↦ column)."""

    k: int
    points: np.ndarray = field(init=False, repr=False)
    walsh: np.ndarray = field(init=False, repr=False)  # (2^k points, 2^k subsets)
    sizes: np.ndarray = field(init=False, repr=False)  # |A| per subset

    def __post_init__(self) -> None:
        pts = np.array(list(itertools.product([1.0, -1.0], repeat=self.k)), dtype=float).reshape(-1, self.k)
        masks = np.arange(2**self.k)
        bits = ((masks[:, None] >> np.arange(self.k)) & 1).astype(bool)  # (subsets, k)
        walsh = np.ones((pts.shape[0], masks.size))
        for a in range(masks.size):
            if bits[a].any():
                walsh[:, a] = np.prod(pts[:, bits[a]], axis=1)
        object.__setattr__(self, "points", pts)
        object.__setattr__(self, "walsh", walsh)
        object.__setattr__(self, "sizes", bits.sum(axis=1))

    @property
    def full(self) -> int:
        """Column of the target parity χ_S."""
        return 2**self.k - 1

    @property
    def chi(self) -> np.ndarray:
        return self.walsh[:, self.full]


@lru_cache(maxsize=16)
def cube(k: int) -> ParityCube:
    return ParityCube(k)
