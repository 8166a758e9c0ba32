"""Phase labels of the theory: GFL, GMFL-I, GMFL-II (Rubin, Seroussi & Ringel 2024).

* GFL — Gaussian feature learning: only the center well (rho = 0) carries weight.
* GMFL-I — Gaussian mixture: the center and the aligned wells (|rho| > 0) both carry weight.
* GMFL-II — only the aligned wells carry weight.

In the D → ∞ saddle-point picture weight sits on the global minima, so at fixed (b, c) the label
follows from the well depths; at finite D (or in the self-consistent theory, where the mixture
weight is an unknown) it follows from the weights.
"""

from __future__ import annotations

from collections.abc import Sequence

from solvers.theories.rubin_cavity.common.potential import StationaryPoint

GFL, GMFL_I, GMFL_II = "GFL", "GMFL-I", "GMFL-II"
#: Depth difference (per D) below which two wells count as degenerate.
DEPTH_TOL = 1e-10
#: A population with less than this share of the law is counted as empty at finite D.
WEIGHT_TOL = 0.01


def phase_from_depths(points: Sequence[StationaryPoint], tol: float = DEPTH_TOL) -> str:
    center = next(p for p in points if p.kind == "center")
    aligned = [p for p in points if p.kind == "aligned"]
    if center.curvature <= 0:
        return GMFL_II
    if not aligned:
        return GFL
    gap = min(p.depth for p in aligned)  # center depth is 0
    if gap > tol:
        return GFL
    return GMFL_I if gap >= -tol else GMFL_II


def phase_from_weights(center: float, aligned: float, tol: float = WEIGHT_TOL) -> str:
    if aligned < tol:
        return GFL
    if center < tol:
        return GMFL_II
    return GMFL_I
