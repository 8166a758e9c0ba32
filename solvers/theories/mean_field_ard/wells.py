"""Fixed-order quadrature of the reduced single-neuron law: a bulk rule plus one rule per aligned well.

p_MF(y) ∝ exp(−Ũ(y)), y = (w_S, u), has a central well at w_S = 0 (the prior's, possibly broad and
bumpy under ARD) and, once the reward is strong enough, aligned wells at w_S ≈ ±s(1, …, 1) that are
narrow (their transverse widths shrink with the noise |w_⊥|) and far out in the prior's tail. No
fixed tensor grid resolves both, so:

* the *bulk* is integrated on a fixed grid in v = w_S/|w_⊥| (ReLU homogeneity makes its features
  state-independent) times a Gauss–Laguerre rule in q = |w_⊥|² on the prior's own law of q given v;
* each *aligned well* gets a Gauss–Hermite product rule centred at its minimum y* with axes
  L = H^{−1/2} (H the Hessian there): ∫ f dy = |det L| Σ_i ω_i e^{|z_i|²/2} (2π)^{n/2} f(y* + L z_i),
  times the size of the well's orbit under sign flips and permutations (Ũ is invariant under both);
* a partition of unity (:func:`partition`) splits e^{−Ũ} between the pieces, so each rule integrates
  only its own well's mass.

Every rule has a fixed order; centres and axes are smooth functions of the state (y* is a Newton root
of ∇Ũ = 0 to round-off), so the integrals are smooth in the state and Newton can differentiate them.
The centring changes only the discretisation error, never the integral. Mass on the barriers between
wells is e^{−barrier}; wells with low barriers are tapered out smoothly (:func:`taper`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from solvers.theories.mean_field_ard.bulk_grid import BulkGrid, _multiset_count
from solvers.theories.mean_field_ard.network_features import Features, Network, geometry, small_matmul
from solvers.theories.mean_field_ard.reduced_potential import ParityPotential
from solvers.theories.mean_field_ard.reduced_prior import BulkNodes

#: Bulk rule: nodes per relevant coordinate of v = w_S/|w_⊥| (the grid's layout: :mod:`bulk_grid`).
BULK_NODES = 20
#: Gauss–Laguerre nodes in q = |w_⊥|² for each v (weight: the prior's law of q given v).
BULK_Q_NODES = 6
#: Width factor of the central well's Gaussian in the partition between the bulk and the aligned wells.
BULK_INFLATE = 3.0
#: Gauss–Hermite nodes per axis of an aligned well (reduced to permutation orbits on the diagonal).
ALIGNED_NODES = 7
#: The search grid for aligned wells on the diagonal w_S = s(1, …, 1): s/σ_w in [1e-3, 30] (geometric,
#: SCAN_S points), |w_⊥|²/σ_w² in [1e-8, 10] (geometric, SCAN_U_POINTS).
SCAN_S = 112
SCAN_U_POINTS = 64
#: Barrier (in units of the single-neuron potential) below which an aligned well is tapered out.
TAPER_BARRIER = 1.0
NEWTON_TOL = 1e-12


def _log_gh(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and log-weights of the n-point rule for ∫ dz (Gauss–Hermite times e^{z²/2})."""
    x, wts = np.polynomial.hermite_e.hermegauss(n)  # weights integrate against e^{−z²/2}
    return x, np.log(wts) + 0.5 * x * x


@lru_cache(maxsize=32)
def gh_tensor(counts: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Hermite product rule for ∫ f(z) dz over R^dim: nodes (n, dim) and log-weights."""
    axes = [_log_gh(c) for c in counts]
    z = np.stack([g.ravel() for g in np.meshgrid(*[a[0] for a in axes], indexing="ij")], axis=1)
    logw = sum(lg.ravel() for lg in np.meshgrid(*[a[1] for a in axes], indexing="ij"))
    z.setflags(write=False)
    logw.setflags(write=False)
    return z, logw


@lru_cache(maxsize=32)
def gh_permutation_orbits(n: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """The n^dim Gauss–Hermite product rule reduced to permutation orbits (for integrands symmetric in z)."""
    x, lw = _log_gh(n)
    combos = list(itertools.combinations_with_replacement(range(n), dim))
    z = np.array([[x[i] for i in c] for c in combos]).reshape(len(combos), dim)
    logw = np.array([sum(lw[i] for i in c) + math.log(_multiset_count(c)) for c in combos])
    z.setflags(write=False)
    logw.setflags(write=False)
    return z, logw


@lru_cache(maxsize=32)
def gh_hyperoctahedral_orbits(n: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """The product rule reduced to orbits of sign flips and permutations (n odd; integrands even in each z_j)."""
    if n % 2 == 0:
        raise ValueError("the sign-symmetric reduction needs an odd number of nodes (one at the origin)")
    x, lw = _log_gh(n)
    half = n // 2
    mags, lmag = x[half:], lw[half:]  # x is sorted and symmetric; x[half] = 0
    combos = list(itertools.combinations_with_replacement(range(mags.size), dim))
    z = np.array([[mags[i] for i in c] for c in combos]).reshape(len(combos), dim)
    logw = np.array(
        [sum(lmag[i] for i in c) + math.log(_multiset_count(c)) + math.log(2.0) * sum(1 for i in c if i > 0)
         for c in combos]
    )
    z.setflags(write=False)
    logw.setflags(write=False)
    return z, logw


@dataclass(frozen=True)
class Well:
    """One well: its minimum, Hessian, orbit size and name ('center' or 'aligned')."""

    kind: str
    y: np.ndarray
    H: np.ndarray
    U: float
    multiplicity: int
    weight: float = 1.0  # taper of a shallow well (see :func:`taper`)


def orbit_size(w: np.ndarray, tol: float = 1e-9) -> int:
    """Number of distinct images of w_S under sign flips and permutations."""
    a = np.sort(np.abs(w))[::-1]
    nonzero = int(np.sum(a > tol))
    count = math.factorial(len(a))
    # divide by the permutations among equal magnitudes
    i = 0
    while i < len(a):
        j = i
        while j + 1 < len(a) and abs(a[j + 1] - a[i]) <= tol * max(1.0, a[i]):
            j += 1
        count //= math.factorial(j - i + 1)
        i = j + 1
    return count * 2**nonzero


def _newton_min(pot: ParityPotential, y0: np.ndarray, max_iter: int = 60) -> tuple[np.ndarray, float, np.ndarray, bool]:
    """Damped Newton for a local minimum of Ũ (Hessian shifted to be positive definite where it is not).

    Converged when the Newton step is at round-off; ``ok`` also requires a positive definite Hessian.
    """
    y = np.array(y0, dtype=float)
    U, g, H = pot.local(y)
    for _ in range(max_iter):
        lo = float(np.linalg.eigvalsh(H)[0])
        shift = 0.0 if lo > 0 else abs(lo) * 1.5 + 1e-6
        step = -np.linalg.solve(H + shift * np.eye(y.size), g)
        # Newton decrement below round-off of Ũ, or a step at round-off of y: converged.
        if -float(g @ step) < 1e-15 * (1.0 + abs(U)) or float(np.max(np.abs(step))) < NEWTON_TOL * (
            1.0 + float(np.max(np.abs(y)))
        ):
            break
        alpha = 1.0
        while True:
            yn = y + alpha * step
            Un, gn, Hn = pot.local(yn)
            if np.isfinite(Un) and Un <= U + 1e-4 * alpha * float(g @ step):
                break
            alpha *= 0.5
            if alpha < 1e-8:
                # No descent left: at a minimum to round-off if the full step was already tiny.
                small = float(np.max(np.abs(step))) < 1e-7 * (1.0 + float(np.max(np.abs(y))))
                return y, U, H, small and lo > 0
        y, U, g, H = yn, Un, gn, Hn
    ok = bool(np.all(np.isfinite(H)) and np.linalg.eigvalsh(H)[0] > 0)
    return y, U, H, ok


def center_well(pot: ParityPotential) -> Well | None:
    """The well at w_S = 0: a 1-D Newton solve in u (∇_w Ũ = 0 there by symmetry).

    At w_S = 0, J_S = 0 and Ũ(0, u) = (prior's −log density of u) + ½ log(Λ(0, u)/A) + const with
    Λ = A + Σ(0, u)/s — convex in u for the Gaussian prior (½ρ_irr e^u − a u) and for the per-unit one
    (minus a log-concave density), so Newton converges from the prior's mode.
    """
    net = pot.net
    k = net.k
    u = pot.prior.u_mode()
    relu = net.activation.name == "relu"
    for _ in range(50):
        q = math.exp(u)
        if relu:  # at mu = 0 the ReLU smoothings are exact: S = q/2, S2 = 2 Phi(0) = 1, S4 = -2 He_1(0) phi/q = 0
            S, S2, S4 = 0.5 * q, 1.0, 0.0
        else:
            _, s2 = net.activation.smoothed(np.zeros(1), q, orders=4)
            S, S2, S4 = float(s2[0, 0]), float(s2[2, 0]), float(s2[4, 0])
        # heat equation: d/du E F(√q ξ) = (q/2) E F^(2); d²/du² = (q/2) E F^(2) + (q²/4) E F^(4)
        dS, d2S = 0.5 * q * S2, 0.5 * q * S2 + 0.25 * q * q * S4
        lam = net.A + S / net.s
        gp, hp = pot.prior.u_derivatives(u)
        g = gp + 0.5 * dS / (net.s * lam)
        h = hp + 0.5 * (d2S / (net.s * lam) - (dS / (net.s * lam)) ** 2)
        step = -g / h if h > 0 else -math.copysign(0.5, g)
        step = max(-1.0, min(1.0, step))
        u += step
        if abs(step) < 1e-13 * (1.0 + abs(u)):
            break
    y = np.zeros(k + 1)
    y[k] = u
    U, _, H = pot.local_center(u)
    H = 0.5 * (H + H.T)
    if np.linalg.eigvalsh(H)[0] <= 0:
        return None
    return Well("center", y, H, float(U), 1)


def barrier_estimate(pot: ParityPotential, y: np.ndarray, H: np.ndarray) -> float:
    """Barrier of a well from its softest direction: (2/3) λ³/T² for Ũ ≈ λx²/2 + T x³/6 along it.

    Exact to leading order near the well's birth (a saddle-node, where λ → 0); a large number
    for a well far from it.
    """
    evals, evecs = np.linalg.eigh(H)
    lam, v = float(evals[0]), evecs[:, 0]
    h = 1e-4 / math.sqrt(max(lam, 1e-12))
    Hp = pot.local(y + h * v)[2]
    Hm = pot.local(y - h * v)[2]
    T = float(v @ (Hp - Hm) @ v) / (2.0 * h)
    if T == 0.0:
        return math.inf
    return (2.0 / 3.0) * lam**3 / (T * T)


def taper(barrier: float) -> float:
    """Weight of a well of this barrier: 1 for separated wells, → 0 smoothly (∝ b⁴) at a well's birth."""
    return 1.0 - math.exp(-((barrier / TAPER_BARRIER) ** 4))


class DiagonalScan:
    """Ũ on a fixed grid of the diagonal plane w_S = s(1, …, 1), u = log|w_⊥|², for one network.

    On the diagonal the 2^k relevant points give only k + 1 distinct pre-activation means
    s(k − 2m) (m minus signs, multiplicity C(k, m), χ_S = (−1)^m), and the grid does not depend on
    the state, so J_S and Σ are computed once; each search then costs a few array operations.
    """

    def __init__(self, net: Network, scale: float):
        k = net.k
        self.s = scale * np.geomspace(1e-3, 30.0, SCAN_S)
        self.u = 2.0 * math.log(scale) + np.linspace(math.log(1e-8), math.log(10.0), SCAN_U_POINTS)
        S, U = np.meshgrid(self.s, self.u, indexing="ij")
        m = np.arange(k + 1)
        mult = np.array([math.comb(k, int(i)) for i in m], dtype=float) / 2.0**k
        mu = S[..., None] * (k - 2.0 * m)
        s1, s2 = net.activation.smoothed(mu, np.exp(U)[..., None], orders=0)
        self.J = s1[0] @ (mult * (-1.0) ** m)
        self.Sigma = s2[0] @ mult
        self.S, self.U = S, U

    def profile_minima(self, pot: ParityPotential) -> list[np.ndarray]:
        """Interior local minima in s of min_u Ũ(s·1, u) (u may jump between a noisy and a quiet branch)."""
        net = pot.net
        lam = net.A + self.Sigma / net.s
        V = (
            pot.prior.value_diagonal(self.S, self.U)
            + 0.5 * np.log(lam / net.A)
            - pot.tau * self.J**2 / lam
        )
        j = np.argmin(V, axis=1)
        P = V[np.arange(self.s.size), j]
        interior = np.nonzero((P[1:-1] < P[:-2]) & (P[1:-1] < P[2:]))[0] + 1
        return [np.r_[self.s[i] * np.ones(net.k), self.u[j[i]]] for i in interior]


@lru_cache(maxsize=16)
def _diagonal_scan(net: Network, scale: float) -> DiagonalScan:
    return DiagonalScan(net, scale)


def diagonal_scan(net: Network, scale: float) -> DiagonalScan:
    return _diagonal_scan(geometry(net), scale)


def aligned_wells(pot: ParityPotential, scale: float) -> list[Well]:
    """Aligned minima: local minima of the diagonal profile of Ũ, polished by Newton in all coordinates.

    The search depends only on the state (no warm starts), so Ũ's wells — and the integrals over
    them — are functions of the state alone. ``scale`` (σ_w) sets the fixed search grid.
    """
    net = pot.net
    k = net.k
    starts = diagonal_scan(net, scale).profile_minima(pot)
    wells: list[Well] = []
    for y0 in starts:
        y, U, H, ok = _newton_min(pot, y0)
        if not ok:
            continue
        w = y[:k]
        if np.min(np.abs(w)) * math.sqrt(pot.prior.curvature_at_zero()) < 0.05:
            continue  # fell back into the central well (or onto a coordinate plane, where J_S vanishes)
        canon = np.sort(np.abs(w))[::-1]
        if any(np.allclose(canon, np.sort(np.abs(v.y[:k]))[::-1], rtol=1e-6) for v in wells):
            continue
        H = 0.5 * (H + H.T)
        weight = taper(barrier_estimate(pot, y, H))
        if weight <= 0.0:
            continue
        wells.append(Well("aligned", y, H, float(U), orbit_size(w), weight))
    return wells


def bulk_rule(pot: ParityPotential, grid: BulkGrid, nodes: BulkNodes) -> tuple[np.ndarray, np.ndarray, Features,
                                                                            np.ndarray]:
    """The prior-exact bulk rule as explicit nodes: the fixed v-grid × the prior's q-rule ``nodes`` for each v
    (``ReducedPrior.bulk``). Returns Y = (w_S, u), log weights in the convention mass = exp(logw − Ũ), the
    features and the prior's extra statistics (m, n) at the nodes."""
    n_q = nodes.q.shape[1]
    nv = grid.V.shape[0]
    rep = np.repeat(np.arange(nv), n_q)
    qf = nodes.q.ravel()
    sq = np.sqrt(qf)
    wS = grid.V[rep] * sq[:, None]
    u = np.log(qf)
    f = Features(J_S=grid.JS1[rep] * sq, Sigma=grid.Sigma1[rep] * qf, wS2=grid.v2[rep] * qf, q=qf)
    Y = np.column_stack([wS, u])
    # mass = prior mass × e^{−½ log(Λ/A) + R}; the rule's convention is mass = exp(logw − Ũ)
    return Y, nodes.logw.ravel() + pot.prior.value(wS, u), f, nodes.extra.reshape(nodes.extra.shape[0], -1)


def well_rule(well: Well, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Hermite rule centred at the well, axes H^{-1/2}; permutation-reduced for a diagonal well."""
    k = well.y.size - 1
    w = np.abs(well.y[:k])
    diagonal = bool(np.all(np.abs(w - w[0]) <= 1e-9 * max(1.0, w[0])))
    if diagonal:
        zw, lw = gh_permutation_orbits(n, k)
        zu, lu = _log_gh(n)
        z = np.column_stack([np.repeat(zw, n, axis=0), np.tile(zu, zw.shape[0])])
        logw = (lw[:, None] + lu[None, :]).ravel()
    else:
        z, logw = gh_tensor((n,) * (k + 1))
    evals, evecs = np.linalg.eigh(well.H)
    # The symmetric root H^{-1/2}: unlike the eigenvectors it is a smooth function of H (eigenvectors of
    # a degenerate eigenvalue — the k − 1 transverse directions of a diagonal well — rotate at random),
    # and it commutes with the permutations that fix a diagonal well, which the reduced rule needs.
    L = (evecs / np.sqrt(evals)) @ evecs.T
    Y = well.y + z @ L.T
    return Y, logw - 0.5 * float(np.sum(np.log(evals))) + math.log(well.multiplicity)


def _canonical(Y: np.ndarray, k: int) -> np.ndarray:
    """Each row's image in the representative chamber: |w_S| sorted in decreasing order."""
    out = Y.copy()
    out[:, :k] = -np.sort(-np.abs(Y[:, :k]), axis=1)
    return out


def quadratic_form(H: np.ndarray, D: np.ndarray) -> np.ndarray:
    """Rows' DᵀHD; O(k) per row when H is permutation-symmetric in w (H_ww = αI + β11ᵀ, H_wu = γ1),
    as for the central well and every diagonal well."""
    k = H.shape[0] - 1
    Hw = H[:k, :k]
    alpha = float(Hw[0, 0] - (Hw[0, 1] if k > 1 else 0.0))
    beta = float(Hw[0, 1]) if k > 1 else 0.0
    gam, delta = float(H[0, k]), float(H[k, k])
    structured = np.allclose(Hw, alpha * np.eye(k) + beta, rtol=1e-12, atol=1e-12 * float(np.max(np.abs(H)))) and (
        np.allclose(H[:k, k], gam, rtol=1e-12, atol=1e-12 * float(np.max(np.abs(H))))
    )
    if not structured:
        return np.einsum("ni,ni->n", small_matmul(D, H), D, optimize=False)
    Dw, Du = D[:, :k], D[:, k]
    s = Dw.sum(axis=1)
    return alpha * np.einsum("ni,ni->n", Dw, Dw, optimize=False) + beta * s * s + 2.0 * gam * s * Du + delta * Du * Du


def _reference_log_density(well: Well, Y: np.ndarray, inflate: float) -> np.ndarray:
    """A well's Gaussian (Laplace) approximation of e^{−Ũ}, widened by ``inflate``, tapered by its weight."""
    quad = quadratic_form(well.H, Y - well.y)
    return -well.U - 0.5 * quad / inflate**2 + math.log(well.weight)


def partition(bulk: Well | None, aligned: list[Well], Y: np.ndarray, own: int, k: int,
              canonical: np.ndarray | None = None) -> np.ndarray:
    """log π_own(y) of a partition of unity between the bulk (own = −1) and the aligned wells.

    ∫ e^{−Ũ} = Σ_i ∫ e^{−Ũ} π_i exactly; each piece is integrated by its own rule. The shares follow
    the wells' Laplace densities (the balance heuristic of multiple importance sampling); the bulk's
    reference is the central well widened BULK_INFLATE times, so that far from every aligned well
    the bulk keeps all the mass that its grid integrates.
    """
    C = _canonical(Y, k) if canonical is None else canonical
    logs = [_reference_log_density(w, C, 1.0) for w in aligned]
    if bulk is not None:
        logs.append(_reference_log_density(bulk, Y, BULK_INFLATE))
    logs_arr = np.stack(logs)
    mine = logs_arr[-1] if own < 0 else logs_arr[own]
    top = logs_arr.max(axis=0)
    return mine - top - np.log(np.sum(np.exp(logs_arr - top), axis=0))
