"""Discretisation of the readout law P_v for the functional overlap Q(v).

The saddle-point equations involve v only through v² (Q̂(v) ∝ v², moment matching uses E[v² Q²]),
so Q(v) = Q(−v) and each law is reduced to atoms in v² ≥ 0 with probabilities:

- ``ones``: v = 1;  ``rademacher``: v² = 1;  ``four_point`` {±1, ±3}/√5: v² ∈ {1/5, 9/5};
- ``gaussian``: Gauss–Hermite nodes folded onto v ≥ 0;  ``uniform`` U[−√3, √3]: Gauss–Legendre on [0, √3].

Continuous laws therefore become fixed quadratures (smooth in every parameter), with E v² = 1 exactly
up to rounding. Their largest atom bounds where the first neurons specialise: in the functional theory
neurons with large |v| specialise first, so the onset of the specialised branch for a continuous law
depends on the number of atoms (see the documentation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.numerics.hermite import gauss_hermite

READOUTS: tuple[str, ...] = ("ones", "rademacher", "gaussian", "uniform", "four_point")
CONTINUOUS: tuple[str, ...] = ("gaussian", "uniform")
#: Default number of atoms (in v ≥ 0) for continuous readout laws.
DEFAULT_ATOMS = 16


@dataclass(frozen=True)
class ReadoutAtoms:
    """Atoms ``v2`` (values of v²) with probabilities ``p``; ``mean`` is E v (not E|v|)."""

    name: str
    v2: np.ndarray
    p: np.ndarray
    mean: float

    @property
    def size(self) -> int:
        return int(self.v2.size)

    @property
    def v(self) -> np.ndarray:
        """|v| at each atom (for reporting Q(v))."""
        return np.sqrt(self.v2)

    def expect(self, values: np.ndarray) -> float:
        """E_v[values(v)] for values given per atom."""
        return float(np.dot(self.p, values))


def atoms(name: str, n_continuous: int = DEFAULT_ATOMS) -> ReadoutAtoms:
    """Atoms of the law ``name``; continuous laws use ``n_continuous`` atoms on v ≥ 0."""
    if name == "ones":
        return ReadoutAtoms(name, np.array([1.0]), np.array([1.0]), 1.0)
    if name == "rademacher":
        return ReadoutAtoms(name, np.array([1.0]), np.array([1.0]), 0.0)
    if name == "four_point":
        return ReadoutAtoms(name, np.array([0.2, 1.8]), np.array([0.5, 0.5]), 0.0)
    if name == "gaussian":
        z, w = gauss_hermite(2 * n_continuous)
        keep = z > 0
        return ReadoutAtoms(name, z[keep] ** 2, 2.0 * w[keep], 0.0)
    if name == "uniform":
        t, s = np.polynomial.legendre.leggauss(n_continuous)
        v = 0.5 * np.sqrt(3.0) * (t + 1.0)
        return ReadoutAtoms(name, v**2, 0.5 * s, 0.0)
    raise KeyError(name)
