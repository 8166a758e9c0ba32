"""``mode: "self_consistent"``: the population theory, reported at D → ∞ and at the spec's finite D.

The equilibrium is the D → ∞ saddle point (saddle_mode: unknowns b, c and the aligned mass ω);
the finite-D solution (quadrature_mode: p(ρ) ∝ exp(−D Ŝ) integrated by a fixed rule) is solved
next to it, warm-started from it, and reported under ``observables.finite_D``. Sweeps run the
engine's continuation on the saddle-point problem and locate the phase boundaries and spinodals
on its solution (population_transitions).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from solvers.core.catalogue import Catalogue, solve_catalogue
from solvers.core.jsonsafe import json_safe
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.results import SolveResult
from solvers.core.solve import solve_at
from solvers.core.sweep import run_sweep
from solvers.theories.rubin_cavity import population_transitions
from solvers.theories.rubin_cavity.closure import nngp_eigenvalues
from solvers.theories.rubin_cavity.network import Network, NetworkAt, network_of
from solvers.theories.rubin_cavity.overlap_law import overlap_moments
from solvers.theories.rubin_cavity.phases import phase_from_weights
from solvers.theories.rubin_cavity.quadrature_mode import panel_count, quadrature_problem
from solvers.theories.rubin_cavity.saddle_mode import evaluate, saddle_problem
from solvers.theories.rubin_cavity.specs import SelfConsistentSpec

OnPoint = Callable[[dict[str, Any]], None]


def learned_fractions(net: Network, b: float, c: float) -> dict[str, float | None]:
    return {
        "learned_fraction_linear": 1.0 - b,
        "learned_fraction_cubic": (1.0 - c / net.epsilon) if net.epsilon != 0 else None,
        "test_mse": b * b + 6.0 * c * c,
    }


def nngp_block(net: Network) -> dict[str, Any]:
    """The fixed NNGP kernel on H1, H3 and what it learns: learnability (P/T) λ/(1 + (P/T) λ)."""
    lam1, lam3 = nngp_eigenvalues(net.sigma_w2, net.D, net.sigma_a2)
    k1, k3 = net.P / net.T * lam1, net.P / net.T * lam3
    return {
        "eigenvalues": {"H1": lam1, "H3": lam3},
        "learned_fraction_linear": k1 / (1.0 + k1),
        "learned_fraction_cubic": k3 / (1.0 + k3),
        "P_cubic_learnable": net.T / lam3,  # (P/T) λ3 = 1: half the cubic component learned
    }


def order_parameters(spec: SelfConsistentSpec, x: np.ndarray) -> dict[str, Any]:
    st = evaluate(network_of(spec), x)
    return {"rho_star": st.rho_star, "b": st.b, "c": st.c, "R": st.R, "aligned_weight": st.omega}


def observables(spec: SelfConsistentSpec, x: np.ndarray) -> dict[str, Any]:
    net = network_of(spec)
    st = evaluate(net, x)
    wells: list[dict[str, Any]] = []
    if st.center_curvature > 0:
        wells.append(
            {
                "kind": "center",
                "rho": 0.0,
                "depth": 0.0,
                "curvature": st.center_curvature,
                "weight": 1.0 - st.omega,
                "mean_rho2": st.center_rho2,
            }
        )
    for p in st.potential.stationary_points():
        if p.kind == "aligned":
            populated = st.aligned is not None and p.rho == st.aligned.rho
            wells.append(
                {
                    "kind": "aligned",
                    "rho": p.rho,
                    "depth": p.depth,
                    "curvature": p.curvature,
                    "weight": st.omega if populated else 0.0,
                    "mean_rho2": p.rho**2,
                }
            )
    barriers = [
        {"rho": p.rho, "depth": p.depth, "curvature": p.curvature}
        for p in st.potential.stationary_points()
        if p.kind == "barrier"
    ]
    Q = st.M * net.T / net.P  # M = (P/T) Q̃
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
        **learned_fractions(net, st.b, st.c),
        "kernel_eigenvalues": {
            "adapted": {"H1": float(Q[0, 0]), "H3": float(Q[1, 1]), "H1_H3": float(Q[0, 1])},
            "nngp": nngp_block(net)["eigenvalues"],
        },
        "nngp": nngp_block(net),
        "weight_covariance": {"parallel": st.R, "perpendicular": net.sigma_w2 / (net.D - 1.0) if net.D > 1 else None},
    }


# ---- finite D ------------------------------------------------------------------------------------


def finite_d_block(net: Network, result: SolveResult) -> dict[str, Any]:
    b, c = float(result.x[0]), float(result.x[1])
    block: dict[str, Any] = {
        "converged": result.converged,
        "b": b,
        "c": c,
        **learned_fractions(net, b, c),
        "diagnostics": result.diagnostics(),
    }
    if not result.converged:
        return block
    pot = net.potential(b, c)
    mom = overlap_moments(pot, net.D)
    wells = [
        {"kind": w.kind, "rho": w.rho, "depth": w.depth, "curvature": w.curvature, "weight": wt, "mean_rho2": m2}
        for w, wt, m2 in zip(mom.wells, mom.weights, mom.second_moments, strict=True)
    ]
    center = sum(w["weight"] for w in wells if w["kind"] == "center")
    block.update(
        {
            "R": mom.R,
            "potential_wells": wells,
            "phase": phase_from_weights(center, 1.0 - center),
            "weight_covariance": {
                "parallel": mom.R,
                "perpendicular": net.sigma_w2 / (net.D - 1.0) if net.D > 1 else None,
            },
        }
    )
    return block


class FiniteD:
    """Solves the finite-D problem along a sequence of parameter values, warm-starting each from the last."""

    def __init__(self, network_at: NetworkAt, values: Sequence[float], options: SolverOptions):
        panels = max(panel_count(network_at(p), options.quadrature_order) for p in values)
        self.network_at = network_at
        self.problem = quadrature_problem(network_at, panels)
        self.options = options
        self.last: np.ndarray | None = None

    def block(self, p: float, saddle_x: np.ndarray | None) -> dict[str, Any]:
        starts: dict[str, np.ndarray] = {}
        if self.last is not None:  # the previous sweep point is closest in a sweep
            starts["previous"] = self.last
        if saddle_x is not None:
            starts["saddle"] = np.asarray(saddle_x[:2], dtype=float)
        res = None
        for x0 in starts.values():
            res = solve_at(self.problem, p, x0, self.options)
            if res.converged:
                break
        if res is None or not res.converged:
            cat = solve_catalogue(self.problem, p, self.options, extra_starts=starts)
            eq = cat.get(cat.equilibrium) or (cat.branches[0] if cat.branches else None)
            if eq is not None:
                res = eq.result
        assert res is not None
        if res.converged:
            self.last = res.x.copy()
        return finite_d_block(self.network_at(p), res)


# ---- solve and sweep -----------------------------------------------------------------------------


def network_at(spec: SelfConsistentSpec, parameter: str | None) -> NetworkAt:
    return NetworkAt(network_of(spec), parameter)


def problem(spec: SelfConsistentSpec, parameter: str | None) -> Problem:
    return saddle_problem(network_at(spec, parameter))


def attach_finite_d(payload: dict[str, Any], block: dict[str, Any]) -> dict[str, Any]:
    payload["observables"] = {**payload.get("observables", {}), "finite_D": block}
    return payload


def equilibrium_x(cat: Catalogue) -> np.ndarray | None:
    eq = cat.get(cat.equilibrium)
    return None if eq is None else eq.x


def newton_options(options: SolverOptions) -> SolverOptions:
    """``auto`` means Newton: the damped map of these equations oscillates in GMFL-I (the theory note's
    warning), so a damped fallback only spends the time limit before reporting the same non-convergence."""
    return options.model_copy(update={"method": "newton"}) if options.method == "auto" else options


def solve(theory: Any, spec: SelfConsistentSpec, options: SolverOptions) -> dict[str, Any]:
    options = newton_options(options)
    net_at = network_at(spec, None)
    cat = solve_catalogue(saddle_problem(net_at), 0.0, options)
    res = theory.catalogue_result(spec, cat, 0.0)
    fd = FiniteD(net_at, [0.0], options)
    return json_safe(attach_finite_d(res, fd.block(0.0, equilibrium_x(cat))))


def sweep(
    theory: Any,
    spec: SelfConsistentSpec,
    parameter: str,
    values: Sequence[float],
    method: str,
    options: SolverOptions,
    on_point: OnPoint | None = None,
) -> dict[str, Any]:
    options = newton_options(options)
    net_at = network_at(spec, parameter)
    prob = saddle_problem(net_at)
    fd = FiniteD(net_at, values, options)
    points: dict[float, dict[str, Any]] = {}
    solutions: list[tuple[float, np.ndarray]] = []

    def point_payload(p: float, cat: Catalogue) -> None:
        x = equilibrium_x(cat)
        if x is not None and cat.converged:
            solutions.append((p, x))
        payload = json_safe(attach_finite_d(theory.sweep_point(spec, parameter, p, cat), fd.block(p, x)))
        points[p] = payload
        if on_point is not None:
            on_point(payload)

    # The engine's final pass visits the values in the order given; continuation is warm, so the
    # finite-D solves follow the same path and stay warm too.
    result = run_sweep(prob, values, options, method=method, on_point=point_payload)
    engine = [t for t in result.transitions if t.detail.startswith("fold")]  # genuine multiple solutions only
    found = population_transitions.locate(prob, net_at, solutions, options)
    transitions = sorted([*engine, *found], key=lambda t: t.parameter)
    out: dict[str, Any] = {
        "theory": theory.name,
        "parameter": parameter,
        "method": method,
        "points": [points[float(v)] for v in values],
        "transitions": [t.payload() for t in transitions],
        "diagnostics": result.diagnostics(),
    }
    if parameter == "P":
        out["sample_complexity"] = sample_complexity(spec, values, out["points"], transitions)
    return json_safe(out)


def sample_complexity(
    spec: SelfConsistentSpec, values: Sequence[float], points: list[dict[str, Any]], transitions: list[Any]
) -> dict[str, Any]:
    """Where the cubic component becomes learnable: fixed NNGP kernel vs adaptive theory."""
    net = network_of(spec)
    lam1, lam3 = nngp_eigenvalues(net.sigma_w2, net.D, net.sigma_a2)
    ps = [float(v) for v in values]
    cubic = [pt.get("observables", {}).get("learned_fraction_cubic") for pt in points]
    cubic_fd = [pt.get("observables", {}).get("finite_D", {}).get("learned_fraction_cubic") for pt in points]
    onset = next((t.parameter for t in transitions if t.kind == "first_order" and "GFL" in t.branches), None)
    return {
        "nngp": {
            "P_cubic_learnable": net.T / lam3,
            "P_linear_learnable": net.T / lam1,
            "definition": "(P/T) λ = 1 on the fixed NNGP kernel: half of the component learned; λ3 ∝ D⁻³",
        },
        "adaptive": {
            "P_transition": onset,
            "P_cubic_half": population_transitions.first_crossing(ps, cubic, 0.5),
            "P_cubic_tenth": population_transitions.first_crossing(ps, cubic, 0.1),
            "P_cubic_tenth_finite_D": population_transitions.first_crossing(ps, cubic_fd, 0.1),
            "definition": "first-order onset of the aligned population (u reaches u_c, P_c ∝ √(u_c D/s_a2) T), "
            "and the P at which the cubic learned fraction 1 − c/ε of the sweep reaches 1/2 and 1/10",
        },
        "ratio_nngp_to_transition": (net.T / lam3) / onset if onset else None,
    }


def u_of(spec: SelfConsistentSpec) -> float:
    return network_of(spec).u


def T_for_u(spec: SelfConsistentSpec, u: float) -> float:
    return float(spec.P) * math.sqrt(spec.s_a2 / (u * float(spec.D)))
