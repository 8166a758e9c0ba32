"""Training and test sets of a spec: generated from the target's input law, or inline arrays."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from solvers.theories.mean_field_ard.activations import hermite_e
from solvers.theories.mean_field_ard.spec import ArraysData, MeanFieldARDSpec, ParityTarget, SingleIndexTarget


@dataclass(frozen=True)
class Dataset:
    X: np.ndarray  # (P, d)
    y: np.ndarray  # (P,)
    X_test: np.ndarray
    y_test: np.ndarray


def target_values(target: ParityTarget | SingleIndexTarget, X: np.ndarray) -> np.ndarray:
    """y(x): the parity of the first k coordinates, or Σ_l c_l He_l(x_1)."""
    if isinstance(target, ParityTarget):
        return np.prod(X[:, : target.k], axis=1)
    z = X[:, 0]
    return sum(c * hermite_e(l, z) for l, c in target.coefficients.items())


def draw_inputs(target: ParityTarget | SingleIndexTarget, rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    if isinstance(target, ParityTarget):
        return rng.choice(np.array([-1.0, 1.0]), size=(n, d))
    return rng.standard_normal((n, d))


def dataset(spec: MeanFieldARDSpec) -> Dataset:
    """The spec's data (``numpy.random.default_rng(seed)``: training inputs, then test inputs)."""
    if isinstance(spec.data, ArraysData):
        a = spec.data
        return Dataset(np.array(a.X, dtype=float), np.array(a.y, dtype=float),
                       np.array(a.X_test, dtype=float), np.array(a.y_test, dtype=float))
    if spec.P is None:
        raise ValueError("the population limit has no training set")
    rng = np.random.default_rng(spec.data.seed)
    X = draw_inputs(spec.target, rng, spec.P, spec.d)
    Xt = draw_inputs(spec.target, rng, spec.data.P_test, spec.d)
    return Dataset(X, target_values(spec.target, X), Xt, target_values(spec.target, Xt))


# ---- bases for the feature overlaps ----------------------------------------------------------------
def walsh(X: np.ndarray, A: tuple[int, ...]) -> np.ndarray:
    """χ_A(x) = Π_{i∈A} x_i (orthonormal under the uniform hypercube measure)."""
    return np.prod(X[:, list(A)], axis=1) if A else np.ones(X.shape[0])


def spurious_parities(d: int, k: int) -> list[tuple[int, ...]]:
    """The competing modes reported by ``m_spurious_max``: all |A| ≤ 2 and every order-k set one swap away
    from S = {0, …, k−1} (A ≠ S)."""
    S = tuple(range(k))
    out = {A for r in (1, 2) for A in itertools.combinations(range(d), r)}
    for i in range(k):
        for j in range(k, d):
            out.add(tuple(sorted((*S[:i], *S[i + 1 :], j))))
    out.discard(S)
    return sorted(out)


def hermite_normalised(l: int, z: np.ndarray) -> np.ndarray:
    """He_l(z)/√(l!) (orthonormal under N(0, 1))."""
    return hermite_e(l, z) / math.sqrt(math.factorial(l))


def spurious_hermite(d: int, target: SingleIndexTarget) -> list[tuple[str, int, int]]:
    """Competing modes of a single-index target: He_l(x_1)/√l! for degrees l ≤ degree + 2 not in the target,
    and x_j (j ≥ 2): (label, coordinate, degree)."""
    deg = target.degree
    out = [("hermite", 0, l) for l in range(deg + 3) if l not in target.coefficients]
    out += [("linear", j, 1) for j in range(1, d)]
    return out
