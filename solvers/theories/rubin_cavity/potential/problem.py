"""``mode: "potential"`` — the wells of Ũ_u(ρ)/D at fixed (b, c, u) as an engine problem.

x = [rho]; the residual is dŨ/drho / D with its analytic second derivative as Jacobian, so the
problem is a gradient system (stable = positive curvature) with free entropy −Ũ/D. The center
rho = 0 is always a stationary point; ``enumerate`` returns every stationary point from the
exact quartic, so the engine sees the aligned/barrier pair born at a fold (spinodal), the center
losing stability where Ũ''(0) = 0 (spinodal) and the aligned/center free-entropy crossing
(first order).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any

import numpy as np

from solvers.core.errors import is_numerical
from solvers.core.problem import Problem
from solvers.core.results import Catalogue, Notes, Report
from solvers.theories.rubin_cavity.common.guards import CANDIDATES, guarded, guarded_scalar
from solvers.theories.rubin_cavity.common.observables import barrier_record, well_record
from solvers.theories.rubin_cavity.common.overlap_law import overlap_moments
from solvers.theories.rubin_cavity.common.phases import phase_from_depths, phase_from_weights
from solvers.theories.rubin_cavity.common.potential import OverlapPotential
from solvers.theories.rubin_cavity.specs import PotentialSpec
from solvers.theories.two_parameter import field_bounds

CENTER_TOL = 1e-9


@dataclass(frozen=True)
class Values:
    """The spec's fields with the swept one set to p."""

    sigma_w2: float
    b: float
    c: float
    u: float
    D: float | None

    def potential(self) -> OverlapPotential:
        return OverlapPotential(sigma_w2=self.sigma_w2, b=self.b, c=self.c, u=self.u)


@dataclass(frozen=True)
class Summary:
    """Everything about the potential at one parameter point that does not depend on the branch."""

    rho_star: float
    wells: tuple[Mapping[str, Any], ...]
    barriers: tuple[Mapping[str, Any], ...]
    center_curvature: float
    depth_gap: float | None
    R: float | None
    phase: str


def label_of(pot: OverlapPotential, rho: float) -> str:
    if abs(rho) <= CENTER_TOL:
        return "center"
    return "aligned" if float(pot.hess(rho)) > 0 else "barrier"


@lru_cache(maxsize=256)
def summary(v: Values) -> Summary:
    """Cached per parameter point (an immutable key; the summary itself is read-only)."""
    pot = v.potential()
    pts = pot.stationary_points()
    glob = pot.global_minimum()
    wells = [well_record(p) for p in pts if p.curvature > 0]
    aligned = [p for p in pts if p.curvature > 0 and p.kind == "aligned"]
    barriers = [barrier_record(p) for p in pts if p.kind == "barrier"]
    R = None
    if v.D is None:
        phase = phase_from_depths(pts)
    else:
        mom = overlap_moments(pot, v.D)
        # overlap_moments lists the same minima in the same order as ``wells``.
        for w, weight, m2 in zip(wells, mom.weights, mom.second_moments, strict=True):
            w["weight"], w["mean_rho2"] = weight, m2
        R = mom.R
        center = sum(w["weight"] for w in wells if w["kind"] == "center")
        phase = phase_from_weights(center, 1.0 - center)
    return Summary(
        rho_star=glob.rho,
        wells=tuple(MappingProxyType(w) for w in wells),
        barriers=tuple(MappingProxyType(w) for w in barriers),
        center_curvature=pot.center_curvature(),
        depth_gap=min(p.depth for p in aligned) if aligned else None,
        R=R,
        phase=phase,
    )


def potential_problem(spec: PotentialSpec, parameter: str | None) -> Problem:
    base = {"sigma_w2": spec.sigma_w2, "b": spec.b, "c": spec.c, "u": spec.u, "D": spec.D}

    def values(p: float) -> Values:
        return Values(**({**base, parameter: p} if parameter else base))

    def pot(p: float) -> OverlapPotential:
        return values(p).potential()

    # Newton may probe far-out rho where h**3 overflows; a non-finite residual makes it backtrack.
    def residual(x: np.ndarray, p: float) -> np.ndarray:
        return np.array([float(pot(p).grad(x[0]))])

    def jacobian(x: np.ndarray, p: float) -> np.ndarray:
        return np.array([[float(pot(p).hess(x[0]))]])

    def free_entropy(x: np.ndarray, p: float) -> float:
        q = pot(p)
        return -float(q.value(x[0]) - q.value(0.0))

    def enumerate_roots(p: float) -> list[tuple[str, np.ndarray]]:
        try:
            return [(pt.kind, np.array([pt.rho])) for pt in pot(p).stationary_points()]
        except CANDIDATES as exc:
            if not is_numerical(exc):
                raise
            return []  # outside the domain (e.g. a negative variance probed by continuation): no roots

    def report(x: np.ndarray, p: float) -> Report:
        v = values(p)
        s = summary(v)
        q = v.potential()
        rho = abs(float(x[0]))
        level, curvature = float(q.value(rho) - q.value(0.0)), float(q.hess(rho))
        order_parameters = {"rho": rho, "rho_star": s.rho_star, "b": v.b, "c": v.c, "R": s.R}
        observables = {
            "u": v.u,
            "potential_wells": [dict(w) for w in s.wells],
            "barriers": [dict(w) for w in s.barriers],
            "phase": s.phase,
            "test_mse": v.b**2 + 6.0 * v.c**2,
            "center_curvature": s.center_curvature,
            "depth_gap": s.depth_gap,
            # named as the wells and barriers are: a well's depth below the centre, a barrier's height above it
            "branch_depth": -level + 0.0 if curvature > 0 else None,
            "branch_height": level if curvature <= 0 else None,
            "branch_f_minus_f0": level,
            "branch_curvature": curvature,
        }
        return Report(order_parameters, observables)

    def notes(cat: Catalogue) -> Notes:
        """The potential itself, sampled (one curve per parameter point, not per branch)."""
        rho, value = pot(cat.parameter).sampled(spec.potential_samples)
        return Notes(observables={"potential_curve": {"rho": rho, "value": value}})

    return Problem(
        residual=guarded(residual, (1,)),
        dim=1,
        starts=lambda p: {"uninformative": np.array([0.0]), "informative": np.array([1.0])},
        jacobian=guarded(jacobian, (1, 1)),
        free_entropy=guarded_scalar(free_entropy),
        kind="gradient",
        label=lambda x, p, start: label_of(pot(p), float(x[0])),
        enumerate=enumerate_roots,
        canonical=np.abs,
        scale=np.array([1.0]),
        names=("rho",),
        report=report,
        notes=notes if spec.potential_samples > 0 else None,
    )


#: Fields of the potential itself: any two of them make a native two-parameter problem.
POTENTIAL_FIELDS = ("sigma_w2", "b", "c", "u")


def potential_lines_problem(spec: PotentialSpec, parameters: tuple[str, str]) -> Problem:
    """The wells of Ũ/D in two of (σ_w², b, c, u) at once: one closed-form potential per λ, no re-binding.

    Same system as :func:`potential_problem` (x = [ρ], F = dŨ/dρ / D, F_x = its analytic second
    derivative, free entropy −(Ũ(ρ) − Ũ(0))/D, stability the curvature, as the engine's gradient
    margin), with every stationary point of the exact quartic among the starts.
    """
    p1, p2 = parameters
    base = {"sigma_w2": spec.sigma_w2, "b": spec.b, "c": spec.c, "u": spec.u}

    def pot(lam: np.ndarray) -> OverlapPotential:
        return OverlapPotential(**{**base, p1: float(lam[0]), p2: float(lam[1])})

    def residual(x: np.ndarray, lam: np.ndarray) -> np.ndarray:
        return np.array([float(pot(lam).grad(x[0]))])

    def jacobian(x: np.ndarray, lam: np.ndarray) -> np.ndarray:
        return np.array([[float(pot(lam).hess(x[0]))]])

    def free_entropy(x: np.ndarray, lam: np.ndarray) -> float:
        q = pot(lam)
        return -float(q.value(x[0]) - q.value(0.0))

    def curvature(x: np.ndarray, lam: np.ndarray) -> float:
        return float(pot(lam).hess(x[0]))

    def starts(lam: np.ndarray) -> dict[str, np.ndarray]:
        out = {"uninformative": np.array([0.0]), "informative": np.array([1.0])}
        try:
            roots = pot(lam).stationary_points()
        except CANDIDATES as exc:
            if not is_numerical(exc):
                raise
            roots = []
        for k, pt in enumerate(roots):
            out[f"{pt.kind}#{k}"] = np.array([pt.rho])
        return out

    def label(x: np.ndarray, lam: np.ndarray, start: str) -> str:
        return label_of(pot(lam), float(x[0]))

    return Problem(
        residual=guarded(residual, (1,)),
        dim=1,
        jacobian=guarded(jacobian, (1, 1)),
        free_entropy=guarded_scalar(free_entropy),
        stability=guarded_scalar(curvature),
        starts=starts,
        label=label,
        canonical=np.abs,
        scale=np.array([1.0]),
        bounds=(field_bounds(spec, p1), field_bounds(spec, p2)),
        parameters=(p1, p2),
    )
