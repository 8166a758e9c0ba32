"""The reduced single-neuron law of one state: its log-normaliser and averages (see ``law_moments``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solvers.theories.mean_field_ard.bulk_grid import BulkGrid, bulk_grid
from solvers.theories.mean_field_ard.law_moments import (
    MAX_ALIGNED,
    PAIRS,
    STATS,
    bulk_reduce,
    bulk_reduce_jax,
    combine,
    node_stats,
)
from solvers.theories.mean_field_ard.memo import Memo
from solvers.theories.mean_field_ard.network_features import geometry
from solvers.theories.mean_field_ard.parity_cube import cube
from solvers.theories.mean_field_ard.reduced_potential import Network, ParityPotential
from solvers.theories.mean_field_ard.reduced_prior import BulkNodes, GaussianPrior, ReducedPrior
from solvers.theories.mean_field_ard.spectrum import block_powers
from solvers.theories.mean_field_ard.wells import (
    ALIGNED_NODES,
    BULK_INFLATE,
    BULK_NODES,
    BULK_Q_NODES,
    Well,
    aligned_wells,
    bulk_rule,
    center_well,
    partition,
    quadratic_form,
    well_rule,
)

#: The prior's bulk nodes per (prior, grid, order): a per-unit prior's rule is fixed for a network, and a Gaussian
#: prior's is rebuilt only when its precisions move.
_NODES: Memo[BulkNodes] = Memo(16)


def prior_bulk(prior: ReducedPrior, net: Network, nodes: int, q_nodes: int) -> BulkNodes:
    """The prior's bulk rule on the fixed v-grid of ``net`` with ``nodes`` per coordinate (memoised)."""
    return _NODES.get_or_make((prior, geometry(net), nodes, q_nodes),
                              lambda: prior.bulk(bulk_grid(net, nodes), q_nodes))


@dataclass(frozen=True)
class Law:
    """log Z = log ∫ e^{−Ũ}, the normalised averages of :data:`STATS` and second moments of :data:`PAIRS`."""

    pot: ParityPotential
    wells: tuple[Well, ...]
    log_Z: float
    means: dict[str, float]
    second: np.ndarray
    aligned_mass: float
    blocks: np.ndarray | None = None  # E[B_ij/Λ] (k+1, j_max+1) when the spectrum was asked for


    def mean(self, name: str) -> float:
        return self.means[name]

    def cov(self, a: str, b: str) -> float:
        i, j = PAIRS.index(a), PAIRS.index(b)
        return float(self.second[i, j]) - self.means[a] * self.means[b]

    def cov_score(self, stat: str, coordinate: str) -> float:
        """Cov(stat, ∂Ũ/∂coordinate) for coordinate ∈ {t, log_rho_relevant, log_rho_irrelevant} (the last two:
        the shared precisions of a Gaussian prior)."""
        pot = self.pot
        if coordinate == "t":
            return -(pot.t / (pot.net.kappa**2 * pot.net.s)) * self.cov(stat, "g")
        prior = pot.prior
        assert isinstance(prior, GaussianPrior)
        if coordinate == "log_rho_relevant":
            return 0.5 * prior.rho_rel * self.cov(stat, "wS2")
        return 0.5 * prior.rho_irr * self.cov(stat, "q")


def find_wells(pot: ParityPotential, scale: float, *, lone_center: bool = True) -> list[Well]:
    """The central well and every aligned well; ``scale`` (σ_w) fixes the search grid.

    ``lone_center`` False leaves the central well out when there is no aligned well: the law uses it
    only to share mass with aligned wells, and the well depths compare it only with theirs.
    """
    aligned = aligned_wells(pot, scale)
    if not aligned and not lone_center:
        return []
    c = center_well(pot)
    return ([c] if c is not None else []) + aligned


def _structured(H: np.ndarray) -> tuple[float, float, float, float] | None:
    """(α, β, γ, δ) with H_ww = αI + β11ᵀ, H_wu = γ1, H_uu = δ, or None."""
    k = H.shape[0] - 1
    Hw = H[:k, :k]
    beta = float(Hw[0, 1]) if k > 1 else 0.0
    alpha = float(Hw[0, 0]) - beta
    gam, delta = float(H[0, k]), float(H[k, k])
    tol = 1e-12 * float(np.max(np.abs(H)))
    ok = np.allclose(Hw, alpha * np.eye(k) + beta, rtol=0, atol=tol) and np.allclose(H[:k, k], gam, rtol=0, atol=tol)
    return (alpha, beta, gam, delta) if ok else None


def _pseudo_center(pot: ParityPotential) -> Well:
    """The prior's own Gaussian at w_S = 0 (reference of the bulk when the central well is unstable)."""
    net = pot.net
    u = pot.prior.u_mode()
    H = np.diag([pot.prior.curvature_at_zero()] * net.k + [pot.prior.u_derivatives(u)[1]])
    U = pot.local(np.r_[np.zeros(net.k), u])[0]
    return Well("center", np.r_[np.zeros(net.k), u], H, U, 1)


def law(pot: ParityPotential, wells: list[Well], quad: tuple[int, int, int] | None = None, *,
        compiled: bool = True, threshold: float = 0.0, central_basin: bool = False,
        spectrum: bool = False) -> Law:
    """The law's averages: bulk rule (compiled unless ``compiled`` is False) plus one rule per aligned well.

    ``threshold`` is the target correlation |J_S|/√Σ above which a unit counts as specialised.
    ``central_basin`` keeps only the bulk's share of the partition: the law restricted to the central
    basin (the unaligned metastable state a sampler started at the prior stays in). ``spectrum`` adds
    the kernel's block eigenvalue averages E[B_ij/Λ] (for the finite-P closure).
    """
    bn, qn, an = quad or (BULK_NODES, BULK_Q_NODES, ALIGNED_NODES)
    net = pot.net
    k = net.k
    center = next((w for w in wells if w.kind == "center"), None)
    aligned = [w for w in wells if w.kind == "aligned"]
    # the reference well only partitions mass with aligned wells (no aligned well: any finite row will do)
    ref = (center if center is not None else _pseudo_center(pot)) if aligned else None
    grid = bulk_grid(net, bn)
    nodes = prior_bulk(pot.prior, net, bn, qn)
    sc = {"A": net.A, "s": net.s, "tau": pot.tau, "k": float(k), "inflate": BULK_INFLATE,
          "thr2": threshold * threshold}
    cvec = np.array([0.0, 1.0, 1.0, 0.0, 1.0]) if ref is None else np.array(
        [ref.y[k], ref.H[0, 0], ref.H[k, k], ref.U, 1.0])
    rows = np.full((MAX_ALIGNED, 8), -np.inf)
    rows[:, :7] = 0.0
    structured = [(_structured(w.H), w) for w in aligned]
    fast = compiled and len(aligned) <= MAX_ALIGNED and all(s is not None for s, _ in structured)
    for i, (st, w) in enumerate(structured[:MAX_ALIGNED]):
        if st is not None:
            rows[i] = [float(np.mean(w.y[:k])), w.y[k], *st, w.U, math.log(w.weight)]
    B1 = grid.blocks().reshape(grid.v2.size, -1) if spectrum else np.zeros((grid.v2.size, 0))
    gd = {"v2": grid.v2, "sv": grid.V.sum(axis=1), "JS1": grid.JS1, "S1": grid.Sigma1, "B1": B1}
    if fast:
        pieces = [bulk_reduce_jax(gd, nodes.q, nodes.logw, nodes.extra, sc, cvec, rows)]
    else:
        pieces = [_bulk_numpy(pot, gd, nodes, sc, cvec, ref, aligned, grid)]
    aligned_total = []
    for i, well in enumerate([] if central_basin else aligned):
        Y, lw = well_rule(well, an)
        assert ref is not None
        lw = lw + partition(ref, aligned, Y, i, k)
        U, f = pot.values(Y)
        logm = lw - U
        if not np.all(np.isfinite(logm)):
            raise FloatingPointError("non-finite quadrature mass in an aligned well")
        top = float(np.max(logm))
        e = np.exp(logm - top)
        B = block_powers(net.activation, cube(k), Y).reshape(Y.shape[0], -1).T if spectrum else None
        extra = pot.prior.extra_stats(Y[:, :k], Y[:, k])
        stats, pairs = node_stats(np, f.J_S, f.Sigma, f.wS2, f.q, net.A, net.s, threshold**2, B, extra)
        piece = (top, float(e.sum()), stats @ e, np.einsum("an,bn,n->ab", pairs, pairs, e))
        pieces.append(piece)
        aligned_total.append(piece)
    log_Z, means, second = combine(pieces)
    mass = sum(p[1] * math.exp(p[0] - log_Z) for p in aligned_total)
    if not (math.isfinite(log_Z) and np.all(np.isfinite(means))):
        raise FloatingPointError("non-finite law averages")
    names = STATS + tuple(pot.prior.extra_names)
    n = len(names)
    blocks = means[n:].reshape(k + 1, -1) if spectrum else None
    return Law(pot, tuple(wells), log_Z, dict(zip(names, (float(m) for m in means[:n]), strict=True)), second,
               mass, blocks)


def _bulk_numpy(pot: ParityPotential, gd: dict[str, np.ndarray], nodes: BulkNodes, sc: dict, cvec: np.ndarray,
                ref: Well | None, aligned: list[Well], grid: BulkGrid) -> tuple[float, float, np.ndarray, np.ndarray]:
    """The bulk reduction in NumPy; aligned wells of any shape (the general partition)."""
    k = pot.net.k
    structured = [_structured(w.H) for w in aligned]
    if all(s is not None for s in structured) and len(aligned) <= MAX_ALIGNED:
        rows = np.full((MAX_ALIGNED, 8), -np.inf)
        rows[:, :7] = 0.0
        for i, (st, w) in enumerate(zip(structured, aligned, strict=True)):
            rows[i] = [float(np.mean(w.y[:k])), w.y[k], *st, w.U, math.log(w.weight)]  # type: ignore[misc]
        out = bulk_reduce(np, gd, nodes.q, nodes.logw, nodes.extra, sc, cvec, rows)
        return float(out[0]), float(out[1]), np.asarray(out[2]), np.asarray(out[3])
    # general wells: explicit nodes and the general partition
    Y, lw, f, extra = bulk_rule(pot, grid, nodes)
    if aligned:
        assert ref is not None
        lw = lw + partition(ref, aligned, Y, -1, k, canonical=np.column_stack([Y[:, k - 1 :: -1], Y[:, k]]))
    logm = lw - pot.from_features(f, Y)
    top = float(np.max(logm))
    e = np.exp(logm - top)
    B = None
    if gd["B1"].shape[1]:
        B = block_powers(pot.net.activation, cube(k), Y).reshape(Y.shape[0], -1).T
    stats, pairs = node_stats(np, f.J_S, f.Sigma, f.wS2, f.q, pot.net.A, pot.net.s, sc["thr2"], B, extra)
    return top, float(e.sum()), stats @ e, np.einsum("an,bn,n->ab", pairs, pairs, e)


__all__ = ["Law", "find_wells", "law", "quadratic_form"]
