"""The reduced population-limit equations for a k-sparse parity: residual, Jacobian, free entropy.

Order parameters (a flat vector x):

* plain MF, and MF-ARD with per-unit precisions: x = (t), the residual's coefficient on the target parity,
  r = t χ_S (per-unit precisions are integrated out inside each unit's law: a Student-t prior, fixed);
* MF-ARD with shared precisions: x = (t, log ρ_rel, log ρ_irr).

By the sign-flip symmetry of the law (U is even in every w_j) the adapted kernel is diagonal in the
Walsh basis, so the population residual of a parity target stays on χ_S: r = t χ_S exactly and
every spurious overlap vanishes. The equations are

    t = 1 − m_S,   m_S = t λ_S / c₀,   λ_S = ⟨J_S²/Λ⟩,   c₀ = κ² N^{2γ−1},
    ρ_rel = ARD(⟨|w_S|²⟩/k),   ρ_irr = ARD(⟨|w_⊥|²⟩/(d − k)),

written as the residual F = (t(1 + λ_S/c₀) − 1, log ρ − log ARD(…)). They are the stationarity
conditions of the free entropy (the mean-field evidence lower bound, ρ point-estimated)

    Φ(t, ρ) = N log Z(t, ρ) − (2t − t²)/(2κ²) − Σ_j [β₀ ρ_j − a log ρ_j],

Z = E_prior[√(A_a/Λ) e^{t² J_S²/(2κ² s Λ)}]: ∇Φ = D·F with D = diag(1/κ², −k(N/2 + a), −(d − k)(N/2 + a)).
Φ is convex in t whatever the (fixed) prior — log Z is a log-partition function of t², increasing — so plain
MF and per-unit MF-ARD have exactly one solution, and a shared-precision branch is stable when it is a local
maximum in ρ of min_t Φ.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from solvers.core.blas import one_blas_thread
from solvers.core.roots import bracketed_root
from solvers.theories.mean_field_ard.ard import ARD
from solvers.theories.mean_field_ard.bulk_grid import bulk_grid
from solvers.theories.mean_field_ard.events import bracketable
from solvers.theories.mean_field_ard.memo import Memo
from solvers.theories.mean_field_ard.reduced_law import Law, find_wells, law, prior_bulk
from solvers.theories.mean_field_ard.reduced_potential import Network, ParityPotential
from solvers.theories.mean_field_ard.specialisation import best_correlation
from solvers.theories.mean_field_ard.spectrum import EK, closure
from solvers.theories.mean_field_ard.student_prior import StudentPrior
from solvers.theories.mean_field_ard.wells import ALIGNED_NODES, BULK_NODES, BULK_Q_NODES

#: Bulk nodes (v-nodes × q-nodes) from which the compiled reduction is used: below it the compiled call's
#: dispatch costs more than the arithmetic (per law, ReLU, default rule, k = 2, 1 260 nodes: NumPy 0.66 ms,
#: compiled 0.90 ms). At k = 4 (53 136 nodes) the two cost the same per law, but a 20-point κ sweep took 98 s
#: compiled against 239 s in NumPy, where the forward-difference Jacobian on NumPy's sums also traced a
#: spurious pair of folds 5·10⁻⁵ apart (central differences or the compiled sums: none).
JAX_MIN_NODES = 5_000
#: States kept per problem (Newton, the Jacobian and the observables revisit the same x).
MEMO = 64
#: Relative step of the forward-difference Jacobian (about the square root of the rule's rounding error).
FORWARD_STEP = 1e-7
#: Residuals t = 1/ONSET_SCAN, 2/ONSET_SCAN, … scanned upwards for the first aligned well deeper than the central one.
ONSET_SCAN = 20


def first_crossing(gap: Callable[[float], float], tol: float = 1e-12) -> float | None:
    """The residual t in (0, 1] at which ``gap`` — falling with t, +inf where there is no aligned well — reaches
    zero, or None where it stays positive up to t = 1.

    Located from below: a scan of ONSET_SCAN residuals upwards to the first non-positive value, then Brent's
    method in that step. A gap that reads +inf again at larger t (a well beyond the search grid) cannot fool it.
    """

    def finite(t: float) -> float:
        return bracketable(gap(t))

    lo = 0.0
    for t in np.linspace(0.0, 1.0, ONSET_SCAN + 1)[1:]:
        if finite(float(t)) <= 0.0:
            return bracketed_root(finite, lo, float(t), xtol=tol, rtol=4 * np.finfo(float).eps, probe=False).x
        lo = float(t)
    return None


@dataclass(frozen=True)
class Quadrature:
    """Orders of the well rules (see :mod:`~solvers.theories.mean_field_ard.wells`)."""

    bulk: int = BULK_NODES
    bulk_q: int = BULK_Q_NODES
    aligned: int = ALIGNED_NODES


class PopulationParity:
    """The reduced equations of one network; ``ard`` None is plain MF with ρ_j = d/σ_w² pinned, or, with
    ``unit_prior``, per-unit MF-ARD (each unit's precisions integrated out: that fixed prior instead)."""

    def __init__(self, net: Network, sigma_w2: float, ard: ARD | None, quad: Quadrature | None = None,
                 compiled: bool | None = None, P: float | None = None, unit_prior: StudentPrior | None = None):
        if ard is not None and unit_prior is not None:
            raise ValueError("shared and per-unit precisions exclude each other")
        self.net = net
        self.sigma_w2 = sigma_w2
        self.ard = ard
        self.unit_prior = unit_prior
        self.quad = quad or Quadrature()
        self.rho0 = net.d / sigma_w2
        self._memo: Memo[Law] = Memo(MEMO)
        self._jacobians: Memo[np.ndarray] = Memo(MEMO)
        #: training-set size of the equivalent-kernel closure (None: population limit)
        self.P = P
        #: the compiled (JAX, float64) bulk reduction; False selects the NumPy one; None (default) the faster of
        #: the two for this rule's size (see JAX_MIN_NODES). The per-unit prior's rule has its own u-nodes per
        #: v-node (28 at d = 20, k = 2: 22 960 nodes, compiled 12 ms per law against NumPy's 23 ms), not bulk_q.
        self.compiled = compiled if compiled is not None else self._bulk_nodes() >= JAX_MIN_NODES
        #: a unit is specialised when its target correlation reaches half the best a single unit can
        self.threshold = 0.5 * best_correlation(net.activation.name, net.k)

    def _bulk_nodes(self) -> int:
        """Nodes of the bulk rule: the fixed prior's own rule where the precisions are per unit (memoised there)."""
        if self.unit_prior is not None:
            return int(prior_bulk(self.unit_prior, self.net, self.quad.bulk, self.quad.bulk_q).q.size)
        return bulk_grid(self.net, self.quad.bulk).v2.size * self.quad.bulk_q

    # ---- layout ---------------------------------------------------------------------------------
    @property
    def dim(self) -> int:
        return 1 if self.ard is None else 3

    @property
    def names(self) -> tuple[str, ...]:
        return ("t",) if self.ard is None else ("t", "log_rho_relevant", "log_rho_irrelevant")

    def unpack(self, x: np.ndarray) -> tuple[float, float, float]:
        x = np.asarray(x, dtype=float)
        if self.ard is None:
            return float(x[0]), self.rho0, self.rho0
        return float(x[0]), math.exp(float(x[1])), math.exp(float(x[2]))

    # ---- the law at a state ---------------------------------------------------------------------
    def potential(self, x: np.ndarray) -> ParityPotential:
        t, rr, ri = self.unpack(x)
        if self.unit_prior is not None:
            return ParityPotential(self.net, t, self.unit_prior)
        return ParityPotential.gaussian(self.net, t, rr, ri)

    def state(self, x: np.ndarray, central_basin: bool = False) -> Law:
        """The law at x (memoised); ``central_basin`` restricts it to the central well's basin."""
        key = np.asarray(x, dtype=float).tobytes() + (b"c" if central_basin else b"")
        return self._memo.get_or_make(key, lambda: self._law(np.asarray(x, dtype=float), central_basin))

    def _law(self, x: np.ndarray, central_basin: bool) -> Law:
        pot = self.potential(x)
        with one_blas_thread(), np.errstate(over="ignore", invalid="ignore"):
            wells = find_wells(pot, math.sqrt(self.sigma_w2), lone_center=False)
            return law(pot, wells, (self.quad.bulk, self.quad.bulk_q, self.quad.aligned), compiled=self.compiled,
                       threshold=self.threshold, central_basin=central_basin, spectrum=self.P is not None)

    # ---- moments ----------------------------------------------------------------------------------
    def moments(self, L: Law) -> dict[str, float]:
        net = self.net
        return {
            "lambda_S": L.mean("g"),
            "m2_rel": L.mean("wS2") / net.k,
            "m2_irr": L.mean("q") / (net.d - net.k),
        }

    def precisions(self, x: np.ndarray) -> tuple[float, float]:
        """(ρ_rel, ρ_irr): the state's shared precisions, d/σ_w² (plain MF), or the law's average posterior mean
        of each unit's own precision (per-unit)."""
        if self.unit_prior is None:
            return self.unpack(x)[1:]
        L = self.state(x)
        return L.mean("rho_rel"), L.mean("rho_irr")

    # ---- equations ----------------------------------------------------------------------------------
    def ek(self, L: Law) -> EK | None:
        """The finite-P equivalent-kernel closure of a state (None in the population limit)."""
        if self.P is None:
            return None
        assert L.blocks is not None
        return closure(L.blocks, L.mean("SL"), self.net.d, self.net.k, self.net.ridge, self.P)

    def ridge_ratio(self, L: Law) -> float:
        """u = κ_eff/c₀: 1 in the population limit, > 1 at finite P."""
        ek = self.ek(L)
        return 1.0 if ek is None else ek.kappa / self.net.ridge

    def residual(self, x: np.ndarray) -> np.ndarray:
        L = self.state(x)
        m = self.moments(L)
        t = float(np.asarray(x)[0])
        # t = c₀/(λ_S + κ_eff): at P = ∞, κ_eff = c₀ and this is t (1 + λ_S/c₀) = 1
        F = [t * (m["lambda_S"] / self.net.ridge + self.ridge_ratio(L)) - 1.0]
        if self.ard is not None:
            F.append(float(x[1]) - math.log(self.ard.precision(m["m2_rel"])))
            F.append(float(x[2]) - math.log(self.ard.precision(m["m2_irr"])))
        return np.array(F)

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        """dF/dx from the covariance identity ∂⟨g⟩/∂x_j = −Cov(g, ∂Ũ/∂x_j) (analytic)."""
        L = self.state(x)
        net = self.net
        m = self.moments(L)
        coords = self.names
        t = float(np.asarray(x)[0])
        J = np.zeros((self.dim, self.dim))
        J[0, :] = [-(t / net.ridge) * L.cov_score("g", c) for c in coords]
        J[0, 0] += 1.0 + m["lambda_S"] / net.ridge
        if self.ard is not None:
            ard = self.ard
            for row, stat, norm, key in ((1, "wS2", net.k, "m2_rel"), (2, "q", net.d - net.k, "m2_irr")):
                dm = np.array([-L.cov_score(stat, c) / norm for c in coords])
                J[row, :] = (0.5 * ard.N / (ard.beta0 + 0.5 * ard.N * m[key])) * dm
                J[row, row] += 1.0
        return J

    def jacobian_fd(self, x: np.ndarray, h: float = 1e-6, central: bool = True) -> np.ndarray:
        """dF/dx by finite differences of the rule itself (central, or forward with ``central=False``).

        The analytic :meth:`jacobian` differentiates the exact integral; where an aligned well has a
        rule of its own (centred on the moving minimum, tapered when shallow) the rule's derivative
        differs from it (k = 4: by 13 % of the largest entry, more while the well is tapered), while
        this one is consistent with the residual Newton drives to zero. Forward differences cost
        ``dim`` laws instead of ``2 dim`` (F(x) is the memoised law of Newton's own iterate) and are
        accurate to O(h), which Newton, the continuation's tangent and the stability margin need (the
        folds, where the margin changes sign, are located on the tangent, which uses the same
        Jacobian). :meth:`rule_jacobian` chooses between the two forms.
        """
        x = np.asarray(x, dtype=float)
        J = np.empty((self.dim, self.dim))
        F0 = None if central else self.residual(x)
        for j in range(self.dim):
            e = np.zeros(self.dim)
            e[j] = h * max(1.0, abs(x[j]))
            if F0 is None:
                J[:, j] = (self.residual(x + e) - self.residual(x - e)) / (2.0 * e[j])
            else:
                J[:, j] = (self.residual(x + e) - F0) / e[j]
        return J

    def smooth_rule(self, x: np.ndarray) -> bool:
        """True where the rule is one fixed-order quadrature whose derivative is the analytic one.

        Without an aligned well the law is the bulk rule alone (fixed v-nodes, q-nodes rescaled smoothly
        with ρ), which differentiates like the exact integral up to its quadrature error. An aligned
        well's own rule (and its taper) moves with the state, and at finite P the equivalent-kernel
        closure enters the residual; :meth:`jacobian` covers neither.
        """
        return self.P is None and not any(w.kind == "aligned" for w in self.state(x).wells)

    def rule_jacobian(self, x: np.ndarray, h: float = FORWARD_STEP) -> np.ndarray:
        """The rule's own dF/dx: analytic where :meth:`smooth_rule` holds (no further law), else by forward
        differences of step ``h`` (memoised: the continuation's tangent and the stability margin at a point
        share one)."""
        x = np.asarray(x, dtype=float)
        if self.smooth_rule(x):
            return self.jacobian(x)
        key = (x.tobytes(), h)
        return self._jacobians.get_or_make(key, lambda: self.jacobian_fd(x, h, central=False)).copy()

    def free_entropy(self, x: np.ndarray) -> float:
        L = self.state(x)
        t, rr, ri = self.unpack(x)
        net = self.net
        # finite P (EK): the data-fit value is replaced by its equivalent-kernel form (u = κ_eff/c₀ frozen)
        phi = net.N * L.log_Z - (2.0 * t - self.ridge_ratio(L) * t * t) / (2.0 * net.kappa**2)
        if self.ard is not None:
            phi -= net.k * float(self.ard.objective(rr)) + (net.d - net.k) * float(self.ard.objective(ri))
        return float(phi)

    def gradient_scale(self) -> np.ndarray:
        """D with ∇Φ = D·F at a solution (exact for the mean/map forms; see the module docstring)."""
        if self.ard is None:
            return np.array([1.0 / self.net.kappa**2])
        a = self.ard.shape + 0.5 * self.ard.N
        return np.array([1.0 / self.net.kappa**2, -self.net.k * a, -(self.net.d - self.net.k) * a])

    def stability(self, x: np.ndarray) -> float:
        """> 0 when the solution is a local maximum in ρ of min_t Φ (plain MF: Φ_tt > 0, always).

        Hessian of Φ = D·J at the solution (symmetrised); the ρ-block's Schur complement after
        minimising over t must be negative definite. Returned in units of the t-curvature.
        """
        H = self.gradient_scale()[:, None] * self.rule_jacobian(x)
        H = 0.5 * (H + H.T)
        htt = H[0, 0]
        if self.ard is None:
            return float(htt * self.net.kappa**2)
        schur = H[1:, 1:] - np.outer(H[1:, 0], H[0, 1:]) / htt
        scale = np.sqrt(np.abs(np.diag(schur))) + 1e-300
        return float(-np.max(np.linalg.eigvalsh(schur / np.outer(scale, scale))))

    # ---- the unaligned (central-basin) state of plain MF ---------------------------------------------
    def central_basin_map(self, t: float) -> float:
        """c₀/(λ_S + κ_eff) of the law at residual t restricted to the central basin: t ↦ 1/(1 + λ_S/c₀) in the
        population limit (κ_eff = c₀), the equivalent-kernel ridge of the restricted law at finite P."""
        L = self.state(np.array([t]), central_basin=True)
        return 1.0 / (L.mean("g") / self.net.ridge + self.ridge_ratio(L))

    def central_basin_solution(self, tol: float = 1e-12) -> float:
        """t of the law restricted to the central basin: t = :meth:`central_basin_map` (t), the equation of the
        full solution with λ_S (and, at finite P, the equivalent-kernel ridge) from that law alone.

        Plain MF has a single solution; this restricted one is the unaligned metastable state (what a
        sampler started at the prior finds before any unit crosses into an aligned well).

        On a fixed region λ_S grows with t (dλ_S/dτ = Var(J_S²/Λ), τ ∝ t²), so h(t) = t − map(t) increases,
        negative at t = 0 and non-negative at t = 1: one root, bracketed. The map is no contraction near the
        onset (its slope falls below −1 as the aligned wells form, and its iterates settle on a two-cycle), so
        the root is found by Brent's method. The central basin is a partition of unity around moving wells, not
        a fixed region: where an aligned well is many units deeper than the central one its mass outweighs the
        partition's tails and h need not be monotone (per-unit priors at k = 2); :meth:`onset_indicator` reads
        the restricted law only where it is meaningful.
        """

        def h(t: float) -> float:
            return t - self.central_basin_map(t)

        if h(1.0) <= 0.0:
            return 1.0
        return bracketed_root(h, 0.0, 1.0, xtol=tol, rtol=4 * np.finfo(float).eps, probe=False).x

    def depth_gap_at(self, t: float) -> float:
        """Deepest aligned minus central depth of Ũ at residual t (+inf without an aligned well).

        Only the well search (no law). The central well sits at w_S = 0, where J_S = 0: its depth does not
        depend on t. An aligned minimum's depth falls with t (dŨ*/dτ = −J_S²/Λ < 0 at the minimum, τ ∝ t²),
        so the gap decreases with t.
        """
        wells = find_wells(self.potential(np.array([t])), math.sqrt(self.sigma_w2), lone_center=False)
        center = [w.U for w in wells if w.kind == "center"]
        aligned = [w.U for w in wells if w.kind == "aligned"]
        return float(min(aligned) - center[0]) if (center and aligned) else math.inf

    def equal_depth_residual(self, tol: float = 1e-12) -> float | None:
        """t* in (0, 1] at which the deepest aligned well of Ũ is exactly as deep as the central one (None: the
        central well is the deepest up to t = 1).

        The gap falls with t (:meth:`depth_gap_at`), so t* is unique. It is located from below
        (:func:`first_crossing`) because deep aligned wells far beyond the equal-depth point can leave the well
        search's grid (per-unit priors: at t near 1 the aligned minimum of a Student-t prior lies beyond
        |w_S| = 30 σ_w) and would read as "no well".
        """
        return first_crossing(self.depth_gap_at, tol)

    def onset_indicator(self, gap: Callable[[float], float] | None = None) -> float:
        """> 0 while the unaligned state's central well is its deepest, < 0 once an aligned well is deeper.

        The onset condition — the deepest aligned well of the unaligned state as deep as its central well — is
        gap(t_c) = 0 with t_c the unaligned state's residual (:meth:`central_basin_solution`). As gap(t) falls
        with t and h(t) = t − map(t) of the central-basin law rises (:meth:`central_basin_solution`), gap(t_c)
        and h(t*) have the same sign: t_c < t* exactly when h(t*) > 0. h(t*) is what is returned (+inf when there
        is no t*: the central well is deepest at any residual). It evaluates the central-basin law only where no
        aligned well is deeper than the central one, where the restriction to the central basin is meaningful:
        an aligned well many units deeper outweighs the partition's tails and leaks into the "central" share,
        which can make h non-monotone above t* (per-unit priors at k = 2) and its roots spurious.

        ``gap`` replaces the depth gap by another criterion of the same kind (a function of t that falls with
        it, +inf while there is no aligned well), e.g. a comparison of well masses.
        """
        ts = first_crossing(gap, 1e-12) if gap is not None else self.equal_depth_residual()
        if ts is None:
            return math.inf
        return float(ts - self.central_basin_map(ts))

    def onset_gap(self) -> float:
        """Deepest aligned minus central depth on the unaligned state (+inf: no aligned well): the onset condition
        read directly (:meth:`onset_indicator` has its sign and is what the onset event uses)."""
        return self.depth_gap_at(self.central_basin_solution())

    # ---- starts ---------------------------------------------------------------------------------
    def symmetric_start(self) -> np.ndarray:
        """The kernel-ridge (NNGP) solution: the law at t = 0 is the prior's (ρ = d/σ_w²)."""
        x0 = np.array([0.0]) if self.ard is None else np.array([0.0, math.log(self.rho0), math.log(self.rho0)])
        lam = self.moments(self.state(x0))["lambda_S"]
        x0[0] = 1.0 / (1.0 + lam / self.net.ridge)
        return x0

    def aligned_start(self, seed: float = 0.05) -> np.ndarray:
        """A seeded asymmetry: relevant prior variance enlarged by 1/seed (ARD), residual lowered; a few
        damped map iterations then bring the start near the aligned branch."""
        if self.ard is None:
            return np.array([0.5 * self.symmetric_start()[0]])
        x = np.array([0.5, math.log(self.rho0 * seed), math.log(self.rho0)])
        for _ in range(30):
            F = self.residual(x)
            slope = 1.0 + self.moments(self.state(x))["lambda_S"] / self.net.ridge
            x = x - 0.5 * np.array([F[0] / slope, F[1], F[2]])
        return x
