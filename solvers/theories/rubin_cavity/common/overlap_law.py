"""Finite-D moments of the overlap law p(rho) ∝ exp(−D f(rho)) by fixed-order quadrature.

The law is even, so everything is integrated on rho >= 0 and the mass of a well counts both
mirror images. Basins are separated at the barriers of f, so the weight of each well is the mass
of its basin. Gauss–Legendre panels are sized to the narrowest Gaussian width 1/√(D f'') so
that the result is accurate for any D; the integrand is kept in log space (the minimum of D f is
subtracted) because D f spans hundreds of units between wells.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from solvers.theories.rubin_cavity.common.potential import TAIL, OverlapPotential, StationaryPoint

GL_ORDER = 16
_GL_X, _GL_W = np.polynomial.legendre.leggauss(GL_ORDER)
#: Panel cap (GL_ORDER nodes each): beyond it panels widen, so an extreme spec costs time, never memory.
MAX_PANELS = 12_500


@dataclass(frozen=True)
class OverlapMoments:
    """Mass and second moment of each basin, in the order of ``wells``."""

    wells: list[StationaryPoint]
    weights: list[float]
    second_moments: list[float]  # E[rho² | basin]
    R: float  # E[rho²] over the whole law


def panel_nodes(edges: np.ndarray, max_width: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Composite Gauss–Legendre nodes on [edges[0], edges[-1]]; returns nodes, weights, segment index."""
    xs, ws, seg = [], [], []
    span = float(edges[-1] - edges[0])
    max_width = max(max_width, span / MAX_PANELS)
    for i, (a, b) in enumerate(itertools.pairwise(edges)):
        if b <= a:
            continue
        n = max(1, math.ceil((b - a) / max_width))
        cuts = np.linspace(a, b, n + 1)
        mid = 0.5 * (cuts[1:] + cuts[:-1])[:, None]
        half = 0.5 * (cuts[1:] - cuts[:-1])[:, None]
        xs.append((mid + half * _GL_X).ravel())
        ws.append((half * _GL_W).ravel())
        seg.append(np.full(n * GL_ORDER, i))
    return np.concatenate(xs), np.concatenate(ws), np.concatenate(seg)


def support_edge(potential: OverlapPotential, D: float, pts: list[StationaryPoint]) -> float:
    """A ρ beyond every stationary point where D (f − f_min) exceeds TAIL (f increases past the last one).

    Found by doubling from the outermost stationary point, capped by the a-priori bound √s_max, which
    is loose (∝ √u) when u is large while the law lives at ρ ∝ u^(1/4).
    """
    f0 = float(potential.value(0.0))
    f_min = f0 + min([0.0, *[p.depth for p in pts if p.curvature > 0]])
    cap = math.sqrt(potential.s_max())
    r = max(1.5 * max(p.rho for p in pts), math.sqrt(potential.sigma_w2), 1e-3)
    while r < cap and D * (float(potential.value(r)) - f_min) < TAIL:
        r *= 2.0
    return min(max(r, 1.5 * max(p.rho for p in pts) + 1e-3), max(cap, 1.5 * max(p.rho for p in pts) + 1e-3))


def overlap_moments(potential: OverlapPotential, D: float) -> OverlapMoments:
    """Weights of the wells of ``potential`` and R = E[rho²] under p(rho) ∝ exp(−D f(rho))."""
    pts = potential.stationary_points()
    rho_max = support_edge(potential, D, pts)
    barriers = [p.rho for p in pts if p.kind == "barrier"]
    # A center that is not a minimum is not a well; its basin joins the first aligned well.
    edges = np.array([0.0, *barriers, rho_max])
    curv = max([1.0 / potential.sigma_w2, *[abs(p.curvature) for p in pts]])
    width = min(rho_max / 8.0, 2.0 / math.sqrt(D * curv))
    x, w, seg = panel_nodes(edges, width)
    with np.errstate(over="ignore", invalid="ignore"):
        logp = -D * potential.value(x)
    logp = np.where(np.isfinite(logp), logp, -np.inf)
    logp -= logp.max()
    mass = w * np.exp(logp)
    total = float(mass.sum())
    if not (total > 0 and math.isfinite(total)):
        nan = float("nan")
        minima = [p for p in pts if p.curvature > 0]
        return OverlapMoments(wells=minima, weights=[nan] * len(minima), second_moments=[nan] * len(minima), R=nan)
    minima = [p for p in pts if p.kind != "barrier" and (p.kind == "aligned" or p.curvature > 0)]
    # Segment i lies between edges i and i+1; map each minimum to the segment containing it.
    weights, seconds = [], []
    for p in minima:
        i = int(np.searchsorted(edges, p.rho, side="right") - 1)
        i = min(max(i, 0), len(edges) - 2)
        m = mass[seg == i]
        mw = float(m.sum())
        weights.append(mw / total)
        seconds.append(float((m * x[seg == i] ** 2).sum() / mw) if mw > 0 else p.rho**2)
    R = float((mass * x * x).sum() / total)
    return OverlapMoments(wells=minima, weights=weights, second_moments=seconds, R=R)
