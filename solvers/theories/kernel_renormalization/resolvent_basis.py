"""A basis of the resolvent vectors d = 1/(T + aκ) of one spectrum, for the many points of a sweep.

Each product that a point's observables take with d is linear in d: the N0 × N0 matrix Zᵀ diag(d) Z of the
weight correlations (X̃ᵀA⁻¹X̃ in the kernel's eigenbasis), and the predictions' k̃0 (ỹ∘d) and (k̃0∘k̃0) d. Along
a sweep in T, N1 or λ1 on one spectrum, d = (1/a)·1/(s + κ) with s = T/a runs through a Cauchy-like family of
small numerical dimension (about 25 vectors to 1e-15 for a kernel whose eigenvalues span a factor 500). The
basis keeps orthonormal columns Φ (P × q) spanning the weighted vectors v = ω∘d met so far, and, for each
registered product (a *channel*), that product of each column taken back to d (φ/ω). At a point with v = Φc + r
every product is the combination of its q rows with c: O(q·(N0² + P_test)) instead of O(P·N0²) and O(P·P_test).
The weight ω = √κ (floored) narrows the range of the entries: those of d span κ_max/κ_min at s → 0 and at
s → ∞, those of v the square root of it, which lowers the rounding floor of the certificate as much.

Certificate. With c = Φᵀv and r = v − Φc computed in floating point,

    |v_i − (Φc)_i| ≤ (1 + u)|r_i| + γ·((|Φ||c|)_i + v_i),      γ = (q + 2)·u,

u the unit roundoff (the rounding of a length-q dot product and of the subtraction). A point is taken from the
basis only when this bound is at most ``tol``·v_i for every i, that is when every d_i is reproduced to ``tol``
relative (up to a few units of rounding in forming v and φ/ω). Then, for any weights w, the combination differs
from the direct product Σ w_i d_i by at most tol·Σ_i |w_i| d_i — the form of the rounding-error bound of the
direct sum, with ``tol`` in place of P·u — and −tol·ZᵀDZ ≼ Zᵀ diag(d − d̃) Z ≼ tol·ZᵀDZ, so every eigenvalue of
the weight correlation moves by at most tol·‖pref·ZᵀDZ‖ (Weyl). The same bound caps the cancellation in the
combination, (|Φ||c|)_i ≤ (tol/γ)·v_i, so the channels' own rounding is amplified by at most that factor. A
point the certificate refuses is computed directly.

The test of the rounding term first bounds (|Φ||c|)_i by max_j |Φ_ij| · Σ_j |c_j| (it passes almost always) and
forms the exact sum only where that bound does not.

Growth. A point that is not certified adds its own v, and v at s·10³ and s/10³ where the basis does not already
represent them: a sweep moves on from the point, and the span interpolates far better than it extrapolates (on the
200-point T sweep of ``benchmarks/bench_sweep_cost.py`` the basis ends with 31 columns, against 61 with the points'
own vectors alone). Each new column is orthogonalised twice (classical Gram–Schmidt, twice is enough) and its
channels are computed once. The basis stops growing at its byte budget, or when a point stays uncertified with
its own vector in the basis (rounding, not the basis, then limits it): every later point it cannot certify is
computed directly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

#: Relative accuracy to which a point taken from the basis is certified (see the module docstring).
TOLERANCE = 1e-12
#: Bytes the columns and their channels may hold; no column is added beyond (points are then computed directly).
MAX_BYTES = 16 * 2**20
#: Factor between a growing point's s = T/a and the neighbours added with it (three decades: about the spread of a
#: kernel's eigenvalues, so that they reach where d(s) has turned into its limits 1/κ and 1/s).
NEIGHBOUR = 1e3
#: ω = √(κ + OMEGA_FLOOR·κ_max): the weight of the columns (a kernel may have zero eigenvalues).
OMEGA_FLOOR = 1e-8
#: Relative norm below which the part of a vector orthogonal to the columns is rounding, not a new direction.
NEW_DIRECTION = 1e-14
#: Points :meth:`ResolventBasis.fit_many` certifies together (those after a group that grows the basis again).
FIT_WINDOW = 16
_U = np.finfo(float).eps / 2

#: A product of the basis: columns (P, k) -> rows (k, m), one row per column.
Channel = Callable[[np.ndarray], np.ndarray]


class ResolventBasis:
    """Orthonormal columns spanning the ω∘d met so far, d = 1/(T + aκ), with the registered products of each column."""

    def __init__(self, kappa: np.ndarray, tol: float = TOLERANCE, max_bytes: int = MAX_BYTES) -> None:
        self.kappa = kappa
        self._omega = np.sqrt(kappa + OMEGA_FLOOR * float(kappa.max(initial=0.0)) + np.finfo(float).tiny)
        self.tol = tol
        self.max_bytes = max_bytes
        # columns and channel rows live in buffers that grow by doubling (a sweep adds a few at a time)
        self._cols = np.empty((kappa.size, 8))
        self._q = 0
        self._row_max = np.zeros(kappa.size)  # max_j |Φ_ij|
        self._channels: dict[str, tuple[Channel, np.ndarray]] = {}
        #: False once the basis stopped growing (budget spent, or rounding limits a point).
        self.growing = True
        #: Points taken from the basis, and points it refused (computed directly).
        self.certified = 0
        self.refused = 0

    @property
    def size(self) -> int:
        return self._q

    @property
    def _phi(self) -> np.ndarray:
        return self._cols[:, : self._q]

    @property
    def nbytes(self) -> int:
        return self._cols.nbytes + sum(rows.nbytes for _, rows in self._channels.values())

    def channel(self, name: str, product: Channel) -> None:
        """Register a product of the columns (once per name); it is computed for every column held and added."""
        if name not in self._channels:
            self._channels[name] = (product, self._rows(product, self._phi))

    def has(self, name: str) -> bool:
        return name in self._channels

    def combine(self, name: str, c: np.ndarray) -> np.ndarray:
        """The channel's product of Φc/ω ≈ d: its rows combined with the coefficients of :meth:`fit` (columns added
        since, which that fit did not use, have coefficient 0); ``c`` (k, q) gives k products at once."""
        return c @ self._channels[name][1][: c.shape[-1]]

    def fit(self, T: float, a: float) -> np.ndarray | None:
        """Coefficients c of ω∘d, d = 1/(T + aκ), when the certificate holds (the basis grows first where it does not);
        None: compute this point directly."""
        return self.fit_many([(T, a)])[0]

    def fit_many(self, points: Sequence[tuple[float, float]], groups: Sequence[int] | None = None
                 ) -> list[np.ndarray | None]:
        """:meth:`fit` of several (T, a) at once, with the outcome of fitting them one group after the other: the
        points of a group (neighbours with one label in ``groups``; default: each point alone) are certified against
        the columns as they are after the groups before it, and those that fail grow the basis in turn.

        The points are certified a window at a time (one pass over the columns for the window); after a group that
        grows the basis, the next window starts behind it."""
        vs = np.multiply.outer([a for _, a in points], self.kappa)  # one row per point
        vs += np.array([t for t, _ in points])[:, None]
        label = list(range(len(points))) if groups is None else list(groups)
        out: list[np.ndarray | None] = [None] * len(points)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            np.divide(self._omega, vs, out=vs)
            k = 0
            while k < len(points):
                # a non-finite or non-positive d fails the bound (NaN compares false)
                window = self._certified(vs[k : k + FIT_WINDOW])
                passed = next((j for j, c in enumerate(window) if c is None), len(window))
                out[k : k + passed] = window[:passed]
                self.certified += passed
                k += passed
                if passed == len(window):
                    continue
                end = k + 1
                while end < len(points) and label[end] == label[k]:
                    end += 1
                first = self._certified(vs[k:end])  # the failing point's group, against the columns before it
                for j, c in enumerate(first, start=k):
                    out[j] = c
                    if c is None and self.growing and np.all(np.isfinite(vs[j]) & (vs[j] > 0)):
                        self._grow(vs[j], points[j][0] / points[j][1])
                        out[j] = self._certified(vs[j : j + 1])[0]
                        if out[j] is None:
                            self.growing = False
                    if out[j] is None:
                        self.refused += 1
                    else:
                        self.certified += 1
                k = end
        return out

    def _certified(self, vs: np.ndarray) -> list[np.ndarray | None]:
        """c = Φᵀv for each row v of ``vs`` where the bound of the module docstring holds at every entry, else
        None."""
        q = self.size
        if q == 0:
            return [None] * vs.shape[0]
        cs = vs @ self._phi
        # (1 + u)|r| + γ(|Φ||c| + v) <= tol·v, as (1 + u)|r| + γ|Φ||c| <= (tol − γ)·v, in place
        gamma = (q + 2) * _U
        lhs = cs @ self._phi.T
        lhs -= vs
        np.abs(lhs, out=lhs)
        lhs *= 1.0 + _U
        room = (self.tol - gamma) * vs
        ok = np.all(lhs + np.multiply.outer(np.abs(cs).sum(axis=1), gamma * self._row_max) <= room, axis=1)
        for k in np.flatnonzero(~ok):
            ok[k] = bool(np.all(lhs[k] + gamma * (np.abs(self._phi) @ np.abs(cs[k])) <= room[k]))
        return [cs[k] if ok[k] else None for k in range(vs.shape[0])]

    def _grow(self, v: np.ndarray, s: float) -> None:
        """Add v and its neighbours that the columns do not represent; their channels in one pass."""
        start = self.size
        self._add(v)
        if s > 0 and np.isfinite(s):
            for f in (NEIGHBOUR, 1.0 / NEIGHBOUR):
                near = self._omega / (s * f + self.kappa)
                if np.all(np.isfinite(near)) and self._certified(near[None, :])[0] is None:
                    self._add(near)
        if self.size == start:
            return
        new = self._phi[:, start:]
        rows = {name: self._rows(product, new) for name, (product, _) in self._channels.items()}
        if self.nbytes + sum(r.nbytes for r in rows.values()) > self.max_bytes:
            self._q = start  # over budget: the basis stays as it was, and stops growing
            self.growing = False
        else:
            for name, (product, held) in self._channels.items():
                self._channels[name] = (product, _appended(held, start, rows[name]))
        self._row_max = np.abs(self._phi).max(axis=1, initial=0.0)

    def _add(self, v: np.ndarray) -> None:
        """Append the part of v orthogonal to the columns (CGS2) as a new column (its channels come after)."""
        w = v / np.linalg.norm(v)
        for _ in range(2):
            w = w - self._phi @ (w @ self._phi)
        norm = float(np.linalg.norm(w))
        if norm > NEW_DIRECTION and self.size < self.kappa.size:
            if self._q == self._cols.shape[1]:
                self._cols = np.hstack([self._cols, np.empty_like(self._cols)])
            self._cols[:, self._q] = w / norm
            self._q += 1
            self._row_max = np.maximum(self._row_max, np.abs(self._cols[:, self._q - 1]))

    def _rows(self, product: Channel, cols: np.ndarray) -> np.ndarray:
        """The product of each column, taken back from ω∘d to d."""
        if cols.shape[1] == 0:
            return np.empty((0, 0))
        return np.asarray(product(cols / self._omega[:, None]), dtype=float).reshape(cols.shape[1], -1)


def _appended(held: np.ndarray, start: int, rows: np.ndarray) -> np.ndarray:
    """``held[:start]`` followed by ``rows``, in a buffer of doubled capacity when ``held`` has no room left."""
    need = start + rows.shape[0]
    if held.shape[0] < need or held.shape[1:] != rows.shape[1:]:
        grown = np.empty((max(need, 2 * held.shape[0]), *rows.shape[1:]))
        if start:
            grown[:start] = held[:start]
        held = grown
    held[start:need] = rows
    return held
