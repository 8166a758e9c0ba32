"""The fixed part of the bulk quadrature rule of one network (:class:`BulkGrid`) and the Gamma rule in q.

The grid in v = w_S/|w_⊥| depends only on d, k and the activation (:func:`bulk_grid` keys it by the
network's geometry), so a sweep in κ or N builds it once; a prior turns it into nodes in (v, q).
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

import numpy as np

from solvers.theories.mean_field_ard.network_features import Network, _features, geometry
from solvers.theories.mean_field_ard.parity_cube import cube

#: Bulk rule: nodes per relevant coordinate of v = w_S/|w_⊥| (composite Gauss–Legendre of order BULK_ORDER
#: in ξ, v = c sinh ξ, c = BULK_V_CORE/√(d − k), up to BULK_V_MAX), reduced to sign/permutation orbits.
BULK_ORDER = 5
BULK_V_CORE = 0.5
BULK_V_MAX = 6.0


def _multiset_count(combo: tuple[int, ...]) -> int:
    """Distinct orderings of a sorted tuple."""
    out = math.factorial(len(combo))
    for c in set(combo):
        out //= math.factorial(combo.count(c))
    return out


@lru_cache(maxsize=64)
def gamma_rule(shape: float, order: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss rule for E f(x), x ~ Gamma(shape, 1) (generalised Laguerre, Golub–Welsch; weights sum to 1)."""
    n = np.arange(order)
    alpha = shape - 1.0
    diag = 2.0 * n + alpha + 1.0
    off = np.sqrt(n[1:] * (n[1:] + alpha))
    x, v = np.linalg.eigh(np.diag(diag) + np.diag(off, 1) + np.diag(off, -1))
    wts = v[0] ** 2
    x.setflags(write=False)
    wts.setflags(write=False)
    return x, wts


class BulkGrid:
    """The fixed part of the bulk rule for one network: nodes in v = w_S/|w_⊥| and the features there.

    ReLU is positively homogeneous, so at w_S = √q v the features are J_A = √q J_A(v, 1) and
    Σ = q Σ(v, 1): they are computed once on a fixed v-grid and rescaled for every state. v runs
    over a sinh-mapped composite Gauss–Legendre rule per coordinate (fine near the origin, where
    the symmetric law sits, with a tail to v_max for the broad laws of MF-ARD), reduced to the
    orbits of sign flips and permutations (the integrand is invariant under both).
    """

    def __init__(self, net: Network, nodes: int, v_max: float = BULK_V_MAX):
        k = net.k
        c = BULK_V_CORE / math.sqrt(max(net.d - k, 1))
        xi_max = math.asinh(v_max / c)
        t, wt = np.polynomial.legendre.leggauss(BULK_ORDER)
        panels = max(1, nodes // BULK_ORDER)
        edges = np.linspace(0.0, xi_max, panels + 1)
        xi = np.concatenate([0.5 * (b + a) + 0.5 * (b - a) * t for a, b in itertools.pairwise(edges)])
        wxi = np.concatenate([0.5 * (b - a) * wt for a, b in itertools.pairwise(edges)])
        v1 = c * np.sinh(xi)
        lw1 = np.log(wxi * c * np.cosh(xi))
        combos = list(itertools.combinations_with_replacement(range(v1.size), k))
        self.V = np.array([[v1[i] for i in cb] for cb in combos]).reshape(len(combos), k)
        self.logw = np.array([sum(lw1[i] for i in cb) + math.log(_multiset_count(cb)) + k * math.log(2.0)
                              for cb in combos])
        self.v2 = np.sum(self.V**2, axis=1)
        unit = _features(net.activation, cube(k), np.column_stack([self.V, np.zeros(len(combos))]))
        self.J1, self.JS1, self.Sigma1 = unit.J, unit.J_S, unit.Sigma
        self._net = net
        self._blocks: np.ndarray | None = None

    def blocks(self) -> np.ndarray:
        """Kernel block powers B_ij(v, q = 1) at the v-nodes (computed on first use: only EK needs them)."""
        if self._blocks is None:
            from solvers.theories.mean_field_ard.spectrum import block_powers

            Y = np.column_stack([self.V, np.zeros(self.V.shape[0])])
            self._blocks = block_powers(self._net.activation, cube(self._net.k), Y)
        return self._blocks


@lru_cache(maxsize=16)
def _bulk_grid(net: Network, nodes: int) -> BulkGrid:
    return BulkGrid(net, nodes)


def bulk_grid(net: Network, nodes: int) -> BulkGrid:
    return _bulk_grid(geometry(net), nodes)
