"""The rubin_cavity overlap potential as a two-parameter problem in (b, u): its three transition lines.

x = [ρ], F = f'(ρ), F_x = f''(ρ), Φ = −(f(ρ) − f(0)), margin f''(ρ), at σ_w² = 0.5, c = −0.3.
Checked against the closed-form centre spinodal, the exact quartic's count of aligned wells, an
independent fold solve in s = ρ², and an equal-depth brentq on the well depths.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq, fsolve

from solvers.core.lines import resample_line, trace_boundaries
from solvers.core.problem import Problem
from solvers.theories.rubin_cavity.common.potential import OverlapPotential

SIGMA_W2, C = 0.5, -0.3
BOX = ((0.25, 0.4), (10.0, 60.0))


def potential(lam: np.ndarray) -> OverlapPotential:
    return OverlapPotential(SIGMA_W2, float(lam[0]), C, float(lam[1]))


def overlap_problem() -> Problem:
    def label(x: np.ndarray, lam: np.ndarray, start: str) -> str:
        rho = float(x[0])
        if abs(rho) < 1e-7:
            return "center"
        return "aligned" if potential(lam).hess(rho) > 0 else "barrier"

    return Problem(
        residual=lambda x, lam: np.array([potential(lam).grad(float(x[0]))]),
        dim=1,
        jacobian=lambda x, lam: np.array([[potential(lam).hess(float(x[0]))]]),
        free_entropy=lambda x, lam: -(float(potential(lam).value(float(x[0]))) - float(potential(lam).value(0.0))),
        stability=lambda x, lam: float(potential(lam).hess(float(x[0]))),
        starts=lambda lam: {"center": np.array([0.0]), "aligned": np.array([1.0])},
        label=label,
        canonical=np.abs,
        parameters=("b", "u"),
    )


def centre_spinodal(b: np.ndarray) -> np.ndarray:
    """f''(0) = 1/σ_w² − (4u/π) b²/(1 + 2σ_w²) = 0."""
    return math.pi * (1 + 2 * SIGMA_W2) / (4 * SIGMA_W2 * b**2)


def aligned_count(b: float, u: float) -> int:
    return sum(p.kind == "aligned" for p in OverlapPotential(SIGMA_W2, b, C, u).stationary_points())


def fold_equations(y: np.ndarray, b: float) -> list[float]:
    pot = OverlapPotential(SIGMA_W2, b, C, float(y[1]))
    return [float(pot.dF(float(y[0]))), float(pot.d2F(float(y[0])))]


def equal_depth_u(b: float, u_lo: float, u_hi: float) -> float:
    def depth(u: float) -> float:
        wells = [p.depth for p in OverlapPotential(SIGMA_W2, b, C, u).stationary_points() if p.kind == "aligned"]
        return min(wells)

    return brentq(depth, u_lo, u_hi, xtol=1e-13, rtol=1e-15)


@pytest.fixture(scope="module")
def result():
    return trace_boundaries(overlap_problem(), *BOX)


def test_three_lines_fold_first_order_and_centre_stability_loss(result) -> None:
    assert sorted(line.kind for line in result.lines) == ["first_order", "fold", "stability_loss"]
    for line in result.lines:
        assert [e.kind for e in line.ends] == ["domain", "domain"]
        assert sorted(e.point[0] for e in line.ends) == pytest.approx([0.25, 0.4], abs=1e-12)


def test_centre_spinodal_is_a_subcritical_pitchfork_line_on_the_closed_form(result) -> None:
    (line,) = result.of_kind("stability_loss")
    pts = line.array()
    assert np.max(np.abs(pts[:, 1] - centre_spinodal(pts[:, 0]))) <= 1e-8
    assert max(abs(s[0, 0]) for s in line.states) <= 1e-12  # the centre ρ = 0
    bp = line.bifurcation
    assert bp is not None and bp.type == "pitchfork"  # ρ → −ρ symmetry: a = 0
    assert bp.criticality == "subcritical"  # the barrier branches lie where the centre is still stable
    assert set(line.branches) == {"center", "barrier"}


def test_aligned_fold_line_against_the_quartic_and_an_independent_fold_solve(result) -> None:
    (line,) = result.of_kind("fold")
    assert set(line.branches) == {"aligned", "barrier"}
    h = 1e-3
    for (b, u), state in list(zip(line.coordinates, line.states, strict=True))[::5]:
        # The exact quartic has no aligned well just below u and one just above it.
        assert aligned_count(b, u - h) == 0 and aligned_count(b, u + h) == 1
        # F'(s) = F''(s) = 0 in s = ρ², solved by fsolve from a rough guess.
        s_star, u_star = fsolve(fold_equations, [state[0, 0] ** 2 * 1.05, u * 1.01], args=(b,), xtol=1e-12)
        assert u == pytest.approx(u_star, abs=1e-8)
        assert state[0, 0] ** 2 == pytest.approx(s_star, abs=1e-7)


def test_first_order_line_against_equal_well_depths(result) -> None:
    (line,) = result.of_kind("first_order")
    assert set(line.branches) == {"center", "aligned"}
    fold = result.of_kind("fold")[0]
    for (b, u), states in list(zip(line.coordinates, line.states, strict=True))[::4]:
        u_fold = float(np.interp(b, *fold.array()[np.argsort(fold.array()[:, 0])].T))
        assert u == pytest.approx(equal_depth_u(b, u_fold + 1e-3, float(centre_spinodal(np.array(b)))), abs=1e-6)
        assert sorted(abs(states[:, 0]))[0] <= 1e-12  # one of the two states is the centre
    # Ordering in the box: the fold comes first, then the first-order line, then the centre spinodal.
    b = 0.3
    u_of = {line.kind: float(np.interp(b, *line.array()[np.argsort(line.array()[:, 0])].T)) for line in result.lines}
    assert u_of["fold"] < u_of["first_order"] < u_of["stability_loss"]


def test_lines_resampled_at_chosen_b_against_the_references(result) -> None:
    """Exact points at requested b (not the polyline's chords, which are off by ~1e-2 on u = π/b²)."""
    bs = [0.26, 0.3, 0.35, 0.39]
    problem = overlap_problem()
    lines = {line.kind: resample_line(problem, line, bs, *BOX) for line in result.lines}
    for kind in ("fold", "first_order", "stability_loss"):
        assert [p[0] for p in lines[kind].coordinates] == pytest.approx(bs, abs=1e-12)
    u_spin = [p[1] for p in lines["stability_loss"].coordinates]
    assert u_spin == pytest.approx(list(centre_spinodal(np.array(bs))), abs=1e-8)
    for (b, u), (_, uf) in zip(lines["first_order"].coordinates, lines["fold"].coordinates, strict=True):
        assert u == pytest.approx(equal_depth_u(b, uf + 1e-3, float(centre_spinodal(np.array(b)))), abs=1e-6)
    for (b, u), state in zip(lines["fold"].coordinates, lines["fold"].states, strict=True):
        _, u_star = fsolve(fold_equations, [state[0, 0] ** 2 * 1.05, u * 1.01], args=(b,), xtol=1e-12)
        assert u == pytest.approx(u_star, abs=1e-8)


def test_lines_end_at_the_tricritical_point_with_an_honest_precision() -> None:
    """Past b = −2c the pitchfork of the centre turns supercritical: the fold and first-order lines end there.

    With s = ρ², F''(0) = −(2u/π)·(−4b(b + 2c))/h0² (h0 = 1 + 2σ_w²) vanishes at b = −2c = 0.6, on the
    centre spinodal u = π/b²·(1 + 2σ_w²)/(4σ_w²). There the cusp system is degenerate (ρ = 0 solves
    F = σ = a = 0 all along the pitchfork line), so the ends are located only approximately, and say so.
    """
    res = trace_boundaries(overlap_problem(), (0.3, 1.0), (2.0, 40.0))
    b_t = -2 * C
    u_t = float(centre_spinodal(np.array(b_t)))
    assert sorted(line.kind for line in res.lines) == ["first_order", "fold", "stability_loss"]
    for kind in ("fold", "first_order"):
        (line,) = res.of_kind(kind)
        end = next(e for e in line.ends if e.kind == "critical")
        assert end.precision > 0  # not claimed to tolerance
        assert abs(end.point[0] - b_t) <= end.precision and abs(end.point[1] - u_t) <= end.precision
        assert end.precision < 0.01
    (fold,) = res.of_kind("fold")
    assert "branch points" in next(e for e in fold.ends if e.kind == "critical").detail
    (spinodal,) = res.of_kind("stability_loss")
    pts = spinodal.array()
    assert np.max(np.abs(pts[:, 1] - centre_spinodal(pts[:, 0]))) <= 1e-8  # through the tricritical point
    assert sorted(e.point[0] for e in spinodal.ends) == pytest.approx([0.3, 1.0], abs=1e-12)
