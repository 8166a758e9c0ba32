"""``mode: "potential"`` — the wells of Ũ_u(ρ)/D at fixed (b, c, u) as an engine problem.

x = [rho]; the residual is dŨ/drho / D with its analytic second derivative as Jacobian, so the
problem is a gradient system (stable = positive curvature) with free entropy −Ũ/D. The center
rho = 0 is always a stationary point; ``enumerate`` returns every stationary point from the
exact quartic, so the engine sees the aligned/barrier pair born at a fold (spinodal), the center
losing stability where Ũ''(0) = 0 (spinodal) and the aligned/center free-entropy crossing
(first order).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from solvers.core.problem import Problem
from solvers.theories.rubin_cavity.guards import FAILURES, guarded, guarded_scalar
from solvers.theories.rubin_cavity.overlap_law import overlap_moments
from solvers.theories.rubin_cavity.phases import phase_from_depths, phase_from_weights
from solvers.theories.rubin_cavity.potential import OverlapPotential
from solvers.theories.rubin_cavity.specs import PotentialSpec

CENTER_TOL = 1e-9


def guarded_fn(shape: tuple[int, ...]):  # decorator form of guards.guarded
    return lambda fn: guarded(fn, shape)


def potential_of(spec: PotentialSpec, parameter: str | None = None, p: float = 0.0) -> OverlapPotential:
    values = {"sigma_w2": spec.sigma_w2, "b": spec.b, "c": spec.c, "u": spec.u, "D": spec.D}
    if parameter:
        values[parameter] = p
    return OverlapPotential(sigma_w2=values["sigma_w2"], b=values["b"], c=values["c"], u=values["u"])


def label_of(pot: OverlapPotential, rho: float) -> str:
    if abs(rho) <= CENTER_TOL:
        return "center"
    return "aligned" if float(pot.hess(rho)) > 0 else "barrier"


def potential_problem(spec: PotentialSpec, parameter: str | None) -> Problem:
    def pot(p: float) -> OverlapPotential:
        return potential_of(spec, parameter, p)

    # Newton may probe far-out rho where h**3 overflows; a non-finite residual makes it backtrack.
    @guarded_fn((1,))
    def residual(x: np.ndarray, p: float) -> np.ndarray:
        return np.array([float(pot(p).grad(x[0]))])

    @guarded_fn((1, 1))
    def jacobian(x: np.ndarray, p: float) -> np.ndarray:
        return np.array([[float(pot(p).hess(x[0]))]])

    @guarded_scalar
    def free_entropy(x: np.ndarray, p: float) -> float:
        q = pot(p)
        return -float(q.value(x[0]) - q.value(0.0))

    def enumerate_roots(p: float) -> list[tuple[str, np.ndarray]]:
        try:
            return [(pt.kind, np.array([pt.rho])) for pt in pot(p).stationary_points()]
        except FAILURES:
            return []  # outside the domain (e.g. a negative variance probed by continuation): no roots

    return Problem(
        residual=residual,
        dim=1,
        starts=lambda p: {"uninformative": np.array([0.0]), "informative": np.array([1.0])},
        jacobian=jacobian,
        free_entropy=free_entropy,
        kind="gradient",
        label=lambda x, p, start: label_of(pot(p), float(x[0])),
        enumerate=enumerate_roots,
        canonical=np.abs,
        scale=np.array([1.0]),
        names=("rho",),
    )


@lru_cache(maxsize=256)
def _report(sigma_w2: float, b: float, c: float, u: float, D: float | None) -> dict[str, Any]:
    """Everything about the potential that does not depend on the branch (cached per parameter point)."""
    pot = OverlapPotential(sigma_w2=sigma_w2, b=b, c=c, u=u)
    pts = pot.stationary_points()
    glob = pot.global_minimum()
    wells = [p for p in pts if p.curvature > 0]
    aligned = [p for p in wells if p.kind == "aligned"]
    out: dict[str, Any] = {
        "rho_star": glob.rho,
        "wells": [{"rho": p.rho, "depth": p.depth, "curvature": p.curvature, "kind": p.kind} for p in wells],
        "barriers": [{"rho": p.rho, "depth": p.depth, "curvature": p.curvature} for p in pts if p.kind == "barrier"],
        "center_curvature": pot.center_curvature(),
        "depth_gap": min(p.depth for p in aligned) if aligned else None,
        "R": None,
    }
    if D is None:
        out["phase"] = phase_from_depths(pts)
        return out
    mom = overlap_moments(pot, D)
    # overlap_moments lists the same minima in the same order as ``wells``.
    for w, weight, m2 in zip(out["wells"], mom.weights, mom.second_moments, strict=True):
        w["weight"], w["mean_rho2"] = weight, m2
    out["R"] = mom.R
    center = sum(w["weight"] for w in out["wells"] if w["kind"] == "center")
    out["phase"] = phase_from_weights(center, 1.0 - center)
    return out


def report(spec: PotentialSpec) -> dict[str, Any]:
    return _report(spec.sigma_w2, spec.b, spec.c, spec.u, spec.D)


def order_parameters(spec: PotentialSpec, x: np.ndarray) -> dict[str, Any]:
    rep = report(spec)
    return {"rho": abs(float(x[0])), "rho_star": rep["rho_star"], "b": spec.b, "c": spec.c, "R": rep["R"]}


def observables(spec: PotentialSpec, x: np.ndarray) -> dict[str, Any]:
    rep = report(spec)
    pot = potential_of(spec)
    rho = abs(float(x[0]))
    return {
        "u": spec.u,
        "potential_wells": [dict(w) for w in rep["wells"]],
        "barriers": [dict(w) for w in rep["barriers"]],
        "phase": rep["phase"],
        "test_mse": spec.b**2 + 6.0 * spec.c**2,
        "center_curvature": rep["center_curvature"],
        "depth_gap": rep["depth_gap"],
        "branch_depth": float(pot.value(rho) - pot.value(0.0)),
        "branch_curvature": float(pot.hess(rho)),
    }
