"""The seeded training and test sets of ``finite_sample``, with the Gram matrices the kernel reuses.

Inputs are isotropic, so the teacher direction is taken to be the first coordinate (e = e₁):
z = x₁ and x⊥ = (x₂, …, x_D). The kernel needs x⊥·x'⊥ for every pair; that Gram matrix does not
depend on any swept parameter, so it is built once per data set and cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np


def teacher(z: np.ndarray, epsilon: float) -> np.ndarray:
    """y = H1(z) + ε H3(z) with H3(z) = z³ − 3z."""
    return z + epsilon * (z**3 - 3.0 * z)


@dataclass(frozen=True)
class SampleSet:
    z: np.ndarray  # (P,) teacher coordinate
    perp_gram: np.ndarray  # (P, P) x⊥·x'⊥ (train) or (P_test, P) test x⊥ against train x⊥
    perp_norm2: np.ndarray  # (P,) |x⊥|²


@dataclass(frozen=True)
class Data:
    train: SampleSet
    test: SampleSet
    D: int

    @property
    def design(self) -> np.ndarray:
        """[H1(z), H3(z)] on the training inputs: the least-squares basis of the residual."""
        z = self.train.z
        return np.column_stack([z, z**3 - 3.0 * z])


@lru_cache(maxsize=2)
def sample(P: int, D: int, P_test: int, seed: int) -> Data:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((P, D))
    Xt = rng.standard_normal((P_test, D))
    perp, perp_t = X[:, 1:], Xt[:, 1:]
    train = SampleSet(X[:, 0].copy(), perp @ perp.T, np.einsum("ij,ij->i", perp, perp))
    test = SampleSet(Xt[:, 0].copy(), perp_t @ perp.T, np.einsum("ij,ij->i", perp_t, perp_t))
    return Data(train, test, D)
