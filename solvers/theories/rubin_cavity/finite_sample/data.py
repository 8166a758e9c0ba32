"""The seeded training and test sets of ``finite_sample``, with the Gram matrices the kernel reuses.

Inputs are isotropic, so the teacher direction is taken to be the first coordinate (e = e₁):
z = x₁ and x⊥ = (x₂, …, x_D). The kernel needs x⊥·x'⊥ for every pair; that Gram matrix does not
depend on any swept parameter, so it is built once per data set. Data sets are kept across
requests in a small cache keyed by (P, D, P_test, seed), bounded in bytes and safe under threads;
their arrays are read-only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from solvers.theories.rubin_cavity.common.erf_projections import h1, h3

#: Bytes of data sets kept across requests (the one in use is always kept, however large).
CACHE_BYTES = 512 * 2**20


@dataclass(frozen=True)
class SampleSet:
    z: np.ndarray  # (P,) teacher coordinate
    perp_gram: np.ndarray  # (P, P) x⊥·x'⊥ (train) or (P_test, P) test x⊥ against train x⊥
    perp_norm2: np.ndarray  # (P,) |x⊥|²

    @property
    def nbytes(self) -> int:
        return self.z.nbytes + self.perp_gram.nbytes + self.perp_norm2.nbytes


@dataclass(frozen=True)
class Data:
    train: SampleSet
    test: SampleSet
    D: int

    @property
    def design(self) -> np.ndarray:
        """[H1(z), H3(z)] on the training inputs: the least-squares basis of the residual."""
        z = self.train.z
        return np.column_stack([h1(z), h3(z)])

    @property
    def nbytes(self) -> int:
        return self.train.nbytes + self.test.nbytes


def _read_only(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.setflags(write=False)


def draw_inputs(P: int, D: int, P_test: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Training inputs (P x D) then test inputs (P_test x D), x ~ N(0, I_D), from one seeded stream."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((P, D)), rng.standard_normal((P_test, D))


def draw(P: int, D: int, P_test: int, seed: int) -> Data:
    """Training then test inputs x ~ N(0, I_D) from ``numpy.random.default_rng(seed)``."""
    X, Xt = draw_inputs(P, D, P_test, seed)
    perp, perp_t = X[:, 1:], Xt[:, 1:]
    train = SampleSet(X[:, 0].copy(), perp @ perp.T, np.einsum("ij,ij->i", perp, perp))
    test = SampleSet(Xt[:, 0].copy(), perp_t @ perp.T, np.einsum("ij,ij->i", perp_t, perp_t))
    for s in (train, test):
        _read_only(s.z, s.perp_gram, s.perp_norm2)
    return Data(train, test, D)


_LOCK = threading.Lock()
_CACHE: OrderedDict[tuple[int, int, int, int], Data] = OrderedDict()


def sample(P: int, D: int, P_test: int, seed: int) -> Data:
    """:func:`draw` through the bounded cache (two requests for the same new key may both draw it)."""
    key = (P, D, P_test, seed)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    data = draw(P, D, P_test, seed)
    with _LOCK:
        _CACHE[key] = data
        _CACHE.move_to_end(key)
        while len(_CACHE) > 1 and sum(d.nbytes for d in _CACHE.values()) > CACHE_BYTES:
            _CACHE.popitem(last=False)
    return data
