"""Observables shared by the modes: what is learned of the target, and the wells of a finite-D overlap law."""

from __future__ import annotations

from typing import Any

from solvers.theories.rubin_cavity.common.network import Network
from solvers.theories.rubin_cavity.common.overlap_law import OverlapMoments
from solvers.theories.rubin_cavity.common.phases import phase_from_weights


def learned_fractions(epsilon: float, b: float, c: float) -> dict[str, float | None]:
    """1 − b and 1 − c/ε (what the network has learned of H1 and H3), and the test error b² + 6c²."""
    return {
        "learned_fraction_linear": 1.0 - b,
        "learned_fraction_cubic": (1.0 - c / epsilon) if epsilon != 0 else None,
        "test_mse": b * b + 6.0 * c * c,
    }


def law_wells(mom: OverlapMoments) -> list[dict[str, Any]]:
    """Every well of a finite-D law with its weight (both mirror images) and ⟨ρ²⟩ within its basin."""
    return [
        {"kind": w.kind, "rho": w.rho, "depth": w.depth, "curvature": w.curvature, "weight": wt, "mean_rho2": m2}
        for w, wt, m2 in zip(mom.wells, mom.weights, mom.second_moments, strict=True)
    ]


def phase_of_wells(wells: list[dict[str, Any]]) -> str:
    center = sum(w["weight"] for w in wells if w["kind"] == "center")
    return phase_from_weights(center, 1.0 - center)


def weight_covariance(net: Network, R: float) -> dict[str, float | None]:
    """E[ρ²] along the teacher direction and the prior variance σ_w²/(D − 1) of each other direction."""
    return {"parallel": R, "perpendicular": net.sigma_w2 / (net.D - 1.0) if net.D > 1 else None}
