"""The averages of the reduced law, summed node by node without storing the nodes.

Every quantity the equations, the Jacobian and the observables need is an average of a few node
statistics (:data:`STATS`, plus any the prior reports, such as the per-unit precisions) and the second
moments of three of them (:data:`PAIRS`), because the state derivatives of Ũ are linear in them:

    ∂Ũ/∂t = −(t/(κ² s)) J_S²/Λ,   ∂Ũ/∂log ρ_rel = ½ ρ_rel |w_S|² − k/2,   ∂Ũ/∂log ρ_irr = ½ ρ_irr q − (d − k)/2.

The bulk rule (most of the nodes) is reduced by :func:`bulk_reduce`, written once against an
array module ``xp``: NumPy for reference, and ``jax.numpy`` compiled with float64, where XLA fuses
the elementwise chain (the default). The aligned wells' few nodes are reduced in NumPy.
"""

from __future__ import annotations

import math
from functools import lru_cache, partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

#: Node statistics averaged by the law. g = J_S²/Λ; spec = 1 for a specialised unit.
STATS = ("one", "g", "wS2", "q", "g2", "SL", "gSL", "wS4", "spec")
#: Statistics whose second moments are kept (the covariances of the Jacobian).
PAIRS = ("g", "wS2", "q")
#: Aligned wells handled by the compiled bulk reduction's partition (padded with empty slots).
MAX_ALIGNED = 2


def node_stats(xp: Any, JS: Any, S: Any, wS2: Any, q: Any, A: float, s: float, thr2: float,
               B: Any = None, extra: Any = None) -> tuple[Any, Any]:
    """Stacked statistics (len(STATS) [+ the prior's extra statistics] [+ m block powers B/Λ], …) and the PAIRS
    rows, elementwise.

    ``extra`` (m', …): statistics the prior reports at the nodes (the per-unit precisions); ``B`` (m, …): the
    kernel's block powers at the nodes (``spectrum.block_powers``, flattened), for EK.
    """
    lam = A + S / s
    g = JS * JS / lam
    SL = S / lam
    spec = (thr2 * S <= JS * JS).astype(g.dtype)
    parts = [xp.stack([xp.ones_like(g), g, wS2, q, g * g, SL, g * SL, wS2 * wS2, spec])]
    if extra is not None and extra.shape[0]:
        parts.append(extra)
    if B is not None:
        parts.append(B / lam[None])
    stats = parts[0] if len(parts) == 1 else xp.concatenate(parts)
    return stats, xp.stack([g, wS2, q])


def bulk_reduce(xp: Any, grid: dict[str, Any], q: Any, logw: Any, extra: Any, sc: dict[str, Any],
                center: Any, aligned: Any) -> tuple[Any, Any, Any, Any]:
    """(shift, Σe, Σe·stats, Σe·pairᵢpairⱼ) over the bulk nodes, e = exp(log mass − shift).

    ``grid``: v-representatives' v2, Σv, J_S(v, 1), Σ(v, 1), block powers B(v, 1) (n_v, m; m = 0 without EK;
    B scales like q, as Σ does); ``q``, ``logw`` (n_v, n_q): the prior's rule (``ReducedPrior.bulk``: node
    positions and log prior masses); ``extra`` (m', n_v, n_q): the prior's extra node statistics; ``sc``:
    scalars of the state; ``center`` = (u_c, α_c, δ_c, U_c, present); ``aligned`` = rows (s_a, u_a, α, β, γ,
    δ, U_a, log weight) of diagonal wells (log weight −inf: empty).
    """
    sq = xp.sqrt(q)
    JS = grid["JS1"][:, None] * sq
    S = grid["S1"][:, None] * q
    lam = sc["A"] + S / sc["s"]
    logm = logw - 0.5 * xp.log(lam / sc["A"]) + sc["tau"] * JS * JS / lam
    wS2 = grid["v2"][:, None] * q
    u = xp.log(q)
    sw = grid["sv"][:, None] * sq  # Σ_j w_j
    k = sc["k"]
    # partition of unity with the aligned wells (balance heuristic; see wells.partition)
    quad_c = center[1] * wS2 + center[2] * (u - center[0]) ** 2
    lc = -center[3] - 0.5 * quad_c / sc["inflate"] ** 2 + xp.where(center[4] > 0, 0.0, -xp.inf)
    terms = [lc]
    for i in range(aligned.shape[0]):
        s_a, u_a, al, be, ga, de, U_a, lwt = (aligned[i, j] for j in range(8))
        Dsum = sw - k * s_a
        Dw2 = wS2 - 2.0 * s_a * sw + k * s_a * s_a
        Du = u - u_a
        terms.append(-U_a - 0.5 * (al * Dw2 + be * Dsum * Dsum + 2.0 * ga * Dsum * Du + de * Du * Du) + lwt)
    T = xp.stack(terms)
    top = xp.max(T, axis=0)
    has_aligned = xp.any(aligned[:, 7] > -xp.inf)
    share = xp.where(has_aligned, lc - top - xp.log(xp.sum(xp.exp(T - top), axis=0)), 0.0)
    logm = logm + share
    shift = xp.max(logm)
    e = xp.exp(logm - shift)
    B = None if grid["B1"].shape[1] == 0 else xp.moveaxis(grid["B1"], 1, 0)[:, :, None] * q[None]
    stats, pairs = node_stats(xp, JS, S, wS2, q, sc["A"], sc["s"], sc["thr2"], B, extra)
    sums = xp.sum(stats * e, axis=(1, 2))
    second = xp.einsum("anq,bnq,nq->ab", pairs, pairs, e)
    return shift, xp.sum(e), sums, second


@lru_cache(maxsize=1)
def _compiled() -> Any:
    return jax.jit(partial(bulk_reduce, jnp))


def bulk_reduce_jax(grid: dict[str, np.ndarray], q: np.ndarray, logw: np.ndarray, extra: np.ndarray,
                    sc: dict[str, float], center: np.ndarray, aligned: np.ndarray
                    ) -> tuple[float, float, np.ndarray, np.ndarray]:
    """:func:`bulk_reduce` compiled with float64 (jax.enable_x64 is scoped to this call)."""
    with jax.enable_x64(True):
        fn = _compiled()
        # NumPy arrays and Python floats go to the compiled function as they are: its C++ dispatch moves
        # them in one batch, where jnp.asarray per argument cost more than the reduction itself.
        args = (
            {k: np.asarray(v, np.float64) for k, v in grid.items()},
            np.asarray(q, np.float64),
            np.asarray(logw, np.float64),
            np.asarray(extra, np.float64),
            {k: float(v) for k, v in sc.items()},
            np.asarray(center, np.float64),
            np.asarray(aligned, np.float64),
        )
        # one transfer for the four results (a float() per scalar is a synchronisation each)
        shift, total, sums, second = jax.device_get(fn(*args))
        return float(shift), float(total), np.asarray(sums), np.asarray(second)


def combine(pieces: list[tuple[float, float, np.ndarray, np.ndarray]]) -> tuple[float, np.ndarray, np.ndarray]:
    """log Z, normalised means (STATS) and second moments (PAIRS) from per-piece shifted sums."""
    top = max(p[0] for p in pieces if p[1] > 0)
    Z = sum(p[1] * math.exp(p[0] - top) for p in pieces)
    sums = sum(p[2] * math.exp(p[0] - top) for p in pieces)
    second = sum(p[3] * math.exp(p[0] - top) for p in pieces)
    return top + math.log(Z), sums / Z, second / Z
