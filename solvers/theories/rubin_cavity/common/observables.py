"""Observables shared by the modes: what is learned of the target, and the wells of a finite-D overlap law."""

from __future__ import annotations

from typing import Any

from solvers.theories.rubin_cavity.common.network import Network
from solvers.theories.rubin_cavity.common.overlap_law import OverlapMoments
from solvers.theories.rubin_cavity.common.phases import phase_from_weights
from solvers.theories.rubin_cavity.common.potential import StationaryPoint


def learned_fractions(epsilon: float, b: float, c: float) -> dict[str, float | None]:
    """1 − b and 1 − c/ε (what the network has learned of H1 and H3), and the test error b² + 6c²."""
    return {
        "learned_fraction_linear": 1.0 - b,
        "learned_fraction_cubic": (1.0 - c / epsilon) if epsilon != 0 else None,
        "test_mse": b * b + 6.0 * c * c,
    }


def well_record(p: StationaryPoint) -> dict[str, Any]:
    """A well as reported: ``depth`` = F(0) − F(ρ²) is positive for a well below the centre (0 for the centre),
    ``f_minus_f0`` = F(ρ²) − F(0) the same difference signed the other way, as for every stationary point."""
    return {"kind": p.kind, "rho": p.rho, "depth": -p.depth + 0.0, "f_minus_f0": p.depth, "curvature": p.curvature}


def barrier_record(p: StationaryPoint) -> dict[str, Any]:
    """A barrier (a maximum between the centre and an aligned well) as reported: ``height`` = F(ρ²) − F(0) above
    the centre (= ``f_minus_f0``); a barrier has no depth."""
    return {"rho": p.rho, "height": p.depth, "f_minus_f0": p.depth, "curvature": p.curvature}


def law_wells(mom: OverlapMoments) -> list[dict[str, Any]]:
    """Every well of a finite-D law with its weight (both mirror images) and ⟨ρ²⟩ within its basin."""
    return [
        {**well_record(w), "weight": wt, "mean_rho2": m2}
        for w, wt, m2 in zip(mom.wells, mom.weights, mom.second_moments, strict=True)
    ]


def phase_of_wells(wells: list[dict[str, Any]]) -> str:
    center = sum(w["weight"] for w in wells if w["kind"] == "center")
    return phase_from_weights(center, 1.0 - center)


def weight_covariance(net: Network, R: float) -> dict[str, float | None]:
    """E[ρ²] along the teacher direction and the prior variance σ_w²/(D − 1) of each other direction."""
    return {"parallel": R, "perpendicular": net.sigma_w2 / (net.D - 1.0) if net.D > 1 else None}
