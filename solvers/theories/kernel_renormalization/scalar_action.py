"""The effective action with one scalar Q̄ per hidden layer, in the eigenbasis of the kernel.

    S({Q̄_ℓ}) = Σ_ℓ (Q̄_ℓ − log Q̄_ℓ) + φ(u),   u = Π_ℓ Q̄_ℓ,
    φ(u)     = (1/N1) [ Σ_i log(T + u κ_i) + Σ_i ỹ_i² / (T + u κ_i) ]

with κ_i the eigenvalues of the readout NNGP kernel K^(L) (1/λ factors included) and ỹ = Uᵀy.
L = 1 is Pacelli et al.'s one-hidden-layer action (exponent −(N1/2) S); L > 1 is the "vanilla"
deep action. Variables are s_ℓ = log Q̄_ℓ, so the residual ∂S/∂s_ℓ = Q̄_ℓ − 1 + g(u) with
g(u) = u φ'(u) never divides by Q̄ and a root bracket in s is a bracket in log Q̄.

Since ∂S/∂s_ℓ − ∂S/∂s_m = Q̄_ℓ − Q̄_m, every stationary point is symmetric (Q̄_ℓ = q): the
exhaustive search is a 1-D sign scan of h(s) = e^s − 1 + g(e^{Ls}).

With v = u σ/T (σ the readout scale, κ = σ κ_b) the two sums of g depend on T, N1 and σ only through
v: g(u) = [A(v) − B(v)/T]/N1 with A(v) = Σ vκ_b/(1 + vκ_b) and B(v) = Σ ỹ² vκ_b/(1 + vκ_b)². A
:class:`ScanTable` holds A and B on a fixed grid of v for one spectrum, so every point of a sweep in
T, N1 or λ1 scans from the same O(P) evaluations instead of O(P) per grid point.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solvers.core.errors import DomainError
from solvers.theories.kernel_renormalization.roots import bracketed_root

#: Scan window of searches without a proven root interval (the mean-corrected action), in log Q̄.
SCAN_LOG_RANGE = (np.log(1e-10), np.log(1e10))
#: Density of every sign scan.
SCAN_POINTS_PER_DECADE = 20
#: Density of the grid of v on which a :class:`ScanTable` holds A and B (points per decade of v).
TABLE_POINTS_PER_DECADE = 80
#: A table spanning more decades than this (a sweep over absurd ranges) starts afresh.
TABLE_MAX_DECADES = 60
#: Grid points of the table evaluated together.
TABLE_BLOCK = 128
#: Root polishing in a bracket: tolerances on log Q̄ (brentq's absolute and relative), most Newton steps before
#: the bracket is searched, and most steps of that search.
ROOT_XTOL, ROOT_RTOL, NEWTON_ITERATIONS, ROOT_ITERATIONS = 1e-14, 1e-15, 8, 100


class ScanTable:
    """A(v_j) and B(v_j) of one spectrum on the grid v_j = 10^(j/TABLE_POINTS_PER_DECADE), filled as asked.

    Exact values (no interpolation): the scan only reads them at the grid points. Held by the model of one
    problem, so it needs no lock.
    """

    def __init__(self, kappa: np.ndarray, y2: np.ndarray) -> None:
        self.kappa = kappa
        self.y2 = y2
        self._j0 = 0
        self._A = np.empty(0)
        self._B = np.empty(0)
        self._scaled: tuple[float, np.ndarray] | None = None
        positive = kappa > 0
        #: Σκ, Σỹ² and Σ_{κ>0} ỹ²/κ of the table's κ (the root interval's sums, scaled by each action's σ)
        self.bounds = (float(kappa.sum()), float(y2.sum()), float(np.sum(y2[positive] / kappa[positive])))

    def scaled_kappa(self, scale: float) -> np.ndarray:
        """σ·κ for the last σ asked (a sweep in T or N1 keeps one): the actions of a sweep share it, read-only."""
        if self._scaled is None or self._scaled[0] != scale:
            kappa = self.kappa * scale
            kappa.setflags(write=False)
            self._scaled = (scale, kappa)
        return self._scaled[1]

    def _compute(self, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        A, B = np.empty(j.size), np.empty(j.size)
        for k in range(0, j.size, TABLE_BLOCK):  # blocks of grid points bound the temporaries to O(block · P)
            v = 10.0 ** (j[k : k + TABLE_BLOCK] / TABLE_POINTS_PER_DECADE)
            vk = np.multiply.outer(v, self.kappa)
            inv = 1.0 / (1.0 + vk)
            r = vk * inv
            A[k : k + TABLE_BLOCK], B[k : k + TABLE_BLOCK] = r.sum(axis=-1), (r * inv) @ self.y2
        return A, B

    def sums(self, j_lo: int, j_hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(A, B) at j = j_lo … j_hi."""
        end = self._j0 + self._A.size
        if self._A.size == 0 or max(end, j_hi + 1) - min(self._j0, j_lo) > TABLE_MAX_DECADES * TABLE_POINTS_PER_DECADE:
            self._j0, self._A, self._B = j_lo, *self._compute(np.arange(j_lo, j_hi + 1, dtype=float))
        else:
            if j_lo < self._j0:
                a, b = self._compute(np.arange(j_lo, self._j0, dtype=float))
                self._A, self._B, self._j0 = np.concatenate([a, self._A]), np.concatenate([b, self._B]), j_lo
            if j_hi >= end:
                a, b = self._compute(np.arange(end, j_hi + 1, dtype=float))
                self._A, self._B = np.concatenate([self._A, a]), np.concatenate([self._B, b])
        i0 = j_lo - self._j0
        return self._A[i0 : i0 + j_hi - j_lo + 1], self._B[i0 : i0 + j_hi - j_lo + 1]


@dataclass(frozen=True)
class ScalarAction:
    kappa: np.ndarray  # eigenvalues of K^(L), ≥ 0
    y2: np.ndarray  # ỹ²
    T: float
    N1: float
    depth: int
    #: The spectrum's scan table and the readout scale σ with kappa = σ·(the table's κ_b), when the model has one.
    table: ScanTable | None = field(default=None, compare=False, repr=False)
    table_scale: float = 1.0
    #: u -> the four sums of :meth:`_sums` at the last u asked for (Newton asks for g and then dg at one point)
    _last: dict[float, tuple[float, float, float, float]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    #: s -> S(s) at the last s asked for (the engine ranks a solution by −S, its report gives S)
    _last_value: dict[tuple[float, ...], float] = field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def alpha(self) -> float:
        return self.kappa.size / self.N1

    # ---- φ and its log-derivatives (vectorised over u) ---------------------------------------
    def _ratios(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """r = uκ/(T + uκ) ∈ [0, 1] and 1/(T + uκ), shape (..., P)."""
        uk = np.multiply.outer(u, self.kappa)
        inv_a = 1.0 / (self.T + uk)
        return uk * inv_a, inv_a

    def phi(self, u: float | np.ndarray) -> np.ndarray:
        a = self.T + np.multiply.outer(np.asarray(u, dtype=float), self.kappa)
        return (np.log(a).sum(axis=-1) + (self.y2 / a).sum(axis=-1)) / self.N1

    def _sums(self, u: float) -> tuple[float, float, float, float]:
        """(Σ r_i, Σ w_i, Σ r_i², Σ r_i w_i) with w_i = ỹ_i² r_i/a_i, at one u (remembered for the last u)."""
        hit = self._last.get(u)
        if hit is not None:
            return hit
        uk = u * self.kappa
        inv_a = 1.0 / (self.T + uk)
        r = uk * inv_a
        w = self.y2 * r * inv_a
        sums = (float(r.sum()), float(w.sum()), float(r @ r), float(r @ w))
        self._last.clear()
        self._last[u] = sums
        return sums

    def g(self, u: float | np.ndarray) -> np.ndarray:
        """u φ'(u) = (1/N1) [Σ r_i − Σ ỹ_i² r_i/a_i]."""
        if isinstance(u, float) or np.ndim(u) == 0:
            r_sum, w_sum, _, _ = self._sums(float(u))
            return np.float64((r_sum - w_sum) / self.N1)
        r, inv_a = self._ratios(np.asarray(u, dtype=float))
        return (r.sum(axis=-1) - (self.y2 * r * inv_a).sum(axis=-1)) / self.N1

    def dg(self, u: float) -> float:
        """d g / d log u = u φ' + u² φ''."""
        r_sum, w_sum, r2_sum, rw_sum = self._sums(float(u))
        return float((r_sum - w_sum - r2_sum + 2.0 * rw_sum) / self.N1)

    # ---- S and its derivatives in s = log Q̄ ---------------------------------------------------
    def value(self, s: np.ndarray) -> float:
        key = tuple(float(v) for v in np.ravel(s))
        hit = self._last_value.get(key)
        if hit is not None:
            return hit
        q = np.exp(s)
        out = float(np.sum(q - s) + self.phi(float(np.exp(np.sum(s)))))
        self._last_value.clear()
        self._last_value[key] = out
        return out

    def gradient(self, s: np.ndarray) -> np.ndarray:
        s = np.asarray(s, dtype=float)
        return np.exp(s) - 1.0 + float(self.g(float(np.exp(s.sum()))))

    def hessian(self, s: np.ndarray) -> np.ndarray:
        s = np.asarray(s, dtype=float)
        L = s.size
        h = np.full((L, L), self.dg(float(np.exp(s.sum()))))
        h[np.diag_indices(L)] += np.exp(s)
        return h

    def smallest_curvature(self, s: np.ndarray) -> float:
        """Smallest eigenvalue of the Hessian (for one layer, its one entry dg + e^s)."""
        s = np.asarray(s, dtype=float)
        if s.size == 1:
            return float(self.dg(float(np.exp(s[0]))) + np.exp(s[0]))
        return float(np.linalg.eigvalsh(self.hessian(s))[0])

    def symmetric_residual(self, s: np.ndarray | float) -> np.ndarray:
        """h(s) = e^s − 1 + g(e^{L s}): ∂S/∂s_ℓ on the symmetric line Q̄_ℓ = e^s."""
        s = np.asarray(s, dtype=float)
        return np.exp(s) - 1.0 + self.g(np.exp(self.depth * s))

    # ---- T = 0 ---------------------------------------------------------------------------------
    def closed_form(self) -> float:
        """The T = 0 root: q^(L+1) − (1 − α) q^L − c = 0, c = ỹᵀκ^(-1)ỹ/N1; one positive root (Descartes)."""
        c = float(np.sum(self.y2 / self.kappa)) / self.N1
        if not np.isfinite(c):
            raise DomainError("yᵀK⁻¹y overflows double precision: the T = 0 closed form has no finite value")
        b = 1.0 - self.alpha
        if self.depth == 1:
            root = np.sqrt(b * b + 4.0 * c)
            # the two algebraically equal forms; each avoids cancellation on its side of b = 0
            return float(0.5 * (b + root)) if b >= 0 else float(2.0 * c / (root - b))
        L = self.depth

        def poly(s: float) -> float:  # in s = log q, divided by q^L: q − (1 − α) − c q^(−L)
            return np.exp(s) - b - c * np.exp(-L * s)

        lo, hi = -1.0, 1.0
        while poly(lo) > 0:
            lo *= 2.0
        while poly(hi) < 0:
            hi *= 2.0
        return float(np.exp(bracketed_root(poly, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps)))

    # ---- exhaustive search ----------------------------------------------------------------------
    def root_interval(self) -> tuple[float, float]:
        """An interval of log Q̄ outside which h(s) has no root (T > 0), with h(lo) < 0 < h(hi).

        Below: g(u) ≤ u Σκ/(N1 T) and u = q^L ≤ q for q ≤ 1, so h < 0 for q < 1/(1 + Σκ/(N1 T)).
        Above: ỹ² r/a ≤ ỹ² min(1/(4T), 1/(uκ)), so h > 0 for q > 1 + min(Σỹ²/(4 N1 T), Σ_{κ>0} ỹ²/(N1 κ)).
        """
        if self.table is not None:  # the sums of the table's κ_b, with κ = σ κ_b
            k_sum, y2_sum, y2_over_k = self.table.bounds
            k_sum, y2_over_k = self.table_scale * k_sum, y2_over_k / self.table_scale
        else:
            positive = self.kappa > 0
            k_sum, y2_sum = float(self.kappa.sum()), float(self.y2.sum())
            y2_over_k = float(np.sum(self.y2[positive] / self.kappa[positive]))
        t = k_sum / (self.N1 * self.T)
        c = y2_over_k / self.N1
        top = 1.0 + min(y2_sum / (4.0 * self.N1 * self.T), c)
        lo, hi = float(np.log(0.5 / (1.0 + t))), float(np.log(2.0 * top))
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise DomainError("the interval holding every root of dS/dlog Q̄ overflows double precision")
        return lo, hi

    def stationary_points(self) -> list[float]:
        """All roots s* of the symmetric residual, ascending: a sign scan over the whole interval where
        roots can lie (:meth:`root_interval`, at least 20 points per decade and 40 points), then brentq on
        each sign change. The scan reads the model's :class:`ScanTable` where its grid is at least as fine."""
        if self.T == 0.0:
            return [float(np.log(self.closed_form()))]
        lo, hi = self.root_interval()
        n = max(40, int(np.ceil((hi - lo) / np.log(10) * SCAN_POINTS_PER_DECADE)) + 1)
        scanned = self._table_scan(lo, hi, (hi - lo) / (n - 1))
        if scanned is None:
            grid = np.linspace(lo, hi, n)
            with np.errstate(over="ignore", under="ignore"):
                h = self.symmetric_residual(grid)
        else:
            grid, h = scanned
        roots = [float(x) for x in grid[h == 0.0]]
        sign = np.sign(h)
        for i in np.flatnonzero(sign[:-1] * sign[1:] < 0):
            roots.append(self._root_between(float(grid[i]), float(grid[i + 1]), float(h[i]), float(h[i + 1])))
        return sorted(roots)

    def _root_between(self, a: float, b: float, ha: float, hb: float) -> float:
        """The root in a bracket [a, b] of the scan (scanned residuals ha, hb of opposite signs).

        Newton's method with the slope that the residual's sums give at no extra cost, from the secant point: it
        stops when a step is below brentq's tolerances 1e-14 + 1e-15·|s|, in about three residuals. Should it
        leave the bracket or not settle, the bracket is searched with the exact residual at its ends (a table
        value and the exact residual may differ in the last bits; where that flips a sign, the end whose residual
        is smaller is a root to rounding) and bisection wherever a Newton step would leave it.
        """
        x = a - ha * (b - a) / (hb - ha)
        for _ in range(NEWTON_ITERATIONS):
            h, slope = self._h_and_slope(x)
            if not (np.isfinite(h) and np.isfinite(slope)) or slope == 0.0:
                break
            nxt = x - h / slope
            if not a <= nxt <= b:
                break
            if h == 0.0 or abs(nxt - x) <= ROOT_XTOL + ROOT_RTOL * abs(nxt):
                return float(nxt)
            x = nxt
        return self._bracketed_root(a, b)

    def _bracketed_root(self, a: float, b: float) -> float:
        ha, hb = self._h_and_slope(a)[0], self._h_and_slope(b)[0]
        if ha == 0.0 or hb == 0.0 or ha * hb > 0:
            return a if abs(ha) <= abs(hb) else b
        lo, hi, h_lo = a, b, ha
        x = a - ha * (b - a) / (hb - ha)
        for _ in range(ROOT_ITERATIONS):
            h, slope = self._h_and_slope(x)
            if np.isnan(h):
                raise DomainError(f"the residual is not a number at {x!r}")
            if h == 0.0:
                return x
            if (h < 0) == (h_lo < 0):
                lo, h_lo = x, h
            else:
                hi = x
            step = h / slope if slope != 0.0 and np.isfinite(slope) else np.inf
            nxt = x - step
            if not lo < nxt < hi:
                nxt = 0.5 * (lo + hi)
            if abs(nxt - x) <= ROOT_XTOL + ROOT_RTOL * abs(nxt) or hi - lo <= ROOT_XTOL + ROOT_RTOL * abs(nxt):
                return float(nxt)
            x = nxt
        return float(x)

    def _h_and_slope(self, s: float) -> tuple[float, float]:
        """h(s) (as :meth:`symmetric_residual`) and dh/ds = e^s + L·dg(u), from one evaluation of the sums."""
        r_sum, w_sum, r2_sum, rw_sum = self._sums(float(np.exp(self.depth * s)))
        q = np.exp(s)
        return (float(q - 1.0 + np.float64((r_sum - w_sum) / self.N1)),
                float(q + self.depth * (r_sum - w_sum - r2_sum + 2.0 * rw_sum) / self.N1))

    def _table_scan(self, lo: float, hi: float, spacing: float) -> tuple[np.ndarray, np.ndarray] | None:
        """(grid, h) over [lo, hi] from the scan table, or None when there is none or its grid would be coarser."""
        if self.table is None:
            return None
        L = self.depth
        step = np.log(10.0) / (TABLE_POINTS_PER_DECADE * L)  # table spacing in s
        if step > spacing:
            return None
        # v = u σ/T, u = e^{L s}: log10 v = (L s + log(σ/T))/ln 10
        shift = float(np.log(self.table_scale / self.T))
        to_j = TABLE_POINTS_PER_DECADE / np.log(10.0)
        j_lo, j_hi = np.floor((L * lo + shift) * to_j), np.ceil((L * hi + shift) * to_j)
        if not (np.isfinite(j_lo) and np.isfinite(j_hi) and abs(j_lo) < 1e6 and abs(j_hi) < 1e6):
            return None
        j_lo, j_hi = int(j_lo), int(j_hi)
        A, B = self.table.sums(j_lo, j_hi)
        grid = (np.arange(j_lo, j_hi + 1) / to_j - shift) / L
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            h = np.exp(grid) - 1.0 + (A - B / self.T) / self.N1
        if not np.all(np.isfinite(h)):
            return None
        return grid, h
