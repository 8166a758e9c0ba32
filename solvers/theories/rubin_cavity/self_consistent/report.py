"""What the self-consistent mode reports about a D → ∞ saddle-point solution."""

from __future__ import annotations

import math
from typing import Any

from solvers.core.results import Report
from solvers.theories.rubin_cavity.common.closure import nngp_eigenvalues
from solvers.theories.rubin_cavity.common.network import Network
from solvers.theories.rubin_cavity.common.observables import (
    barrier_record,
    learned_fractions,
    weight_covariance,
    well_record,
)
from solvers.theories.rubin_cavity.self_consistent.saddle import SaddleState


def nngp_block(net: Network) -> dict[str, Any]:
    """The fixed NNGP kernel on H1, H3 and what it learns: learnability (P/T) λ/(1 + (P/T) λ)."""
    lam1, lam3 = nngp_eigenvalues(net.sigma_w2, net.D, net.sigma_a2)
    k1, k3 = net.P / net.T * lam1, net.P / net.T * lam3
    return {
        "eigenvalues": {"H1": lam1, "H3": lam3},
        "learned_fraction_linear": k1 / (1.0 + k1),
        "learned_fraction_cubic": k3 / (1.0 + k3),
        "P_cubic_learnable": net.T / lam3 if lam3 > 0 else math.inf,  # (P/T) λ3 = 1: half the cubic part learned
    }


def order_parameters(st: SaddleState) -> dict[str, Any]:
    return {"rho_star": st.rho_star, "b": st.b, "c": st.c, "R": st.R, "aligned_weight": st.omega}


def observables(net: Network, st: SaddleState) -> dict[str, Any]:
    wells: list[dict[str, Any]] = []
    if st.center_curvature > 0:
        wells.append(
            {
                "kind": "center",
                "rho": 0.0,
                "depth": 0.0,
                "f_minus_f0": 0.0,
                "curvature": st.center_curvature,
                "weight": 1.0 - st.omega,
                "mean_rho2": st.center_rho2,
            }
        )
    points = st.potential.stationary_points()
    for p in points:
        if p.kind == "aligned":
            populated = st.aligned is not None and p.rho == st.aligned.rho
            wells.append(
                {
                    **well_record(p),
                    "weight": st.omega if populated else 0.0,
                    "mean_rho2": p.rho**2,
                }
            )
    barriers = [barrier_record(p) for p in points if p.kind == "barrier"]
    Q = st.M * net.T / net.P  # M = (P/T) Q̃
    nngp = nngp_block(net)
    return {
        "u": net.u,
        "eta": net.eta,
        "T": net.T,
        "P": net.P,
        "phase": st.phase,
        "potential_wells": wells,
        "barriers": barriers,
        "depth_gap": st.aligned.depth if st.aligned is not None else None,
        "center_curvature": st.center_curvature,
        "aligned_weight_scaled": st.omega * net.eta * net.D,
        **learned_fractions(net.epsilon, st.b, st.c),
        "kernel_eigenvalues": {
            "adapted": {"H1": float(Q[0, 0]), "H3": float(Q[1, 1]), "H1_H3": float(Q[0, 1])},
            "nngp": dict(nngp["eigenvalues"]),
        },
        "nngp": nngp,
        "weight_covariance": weight_covariance(net, st.R),
    }


def report(net: Network, st: SaddleState) -> Report:
    return Report(order_parameters(st), observables(net, st))
