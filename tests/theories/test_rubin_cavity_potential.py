"""``rubin_cavity`` potential mode: the mean-field overlap potential Ũ_u(ρ)/D and its wells.

Every expectation is computed here independently of the solver: the blog's formula is re-typed
below, the equal-depth point is derived in closed form (and re-found by brentq on a brute-force
minimum), curvatures are checked by finite differences and moments by adaptive quadrature.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import TypeAdapter, ValidationError
from scipy.integrate import quad
from scipy.optimize import brentq, minimize_scalar

from clients.tables import branch_of
from solvers.core.options import SolverOptions
from solvers.theories import get
from solvers.theories.rubin_cavity.common.erf_moments import erf_variance
from solvers.theories.rubin_cavity.common.erf_projections import residual_projection
from solvers.theories.rubin_cavity.common.potential import OverlapPotential
from tests.payloads import solve_json, sweep_json

THEORY = get("rubin_cavity")
SPEC = TypeAdapter(THEORY.spec_model)
SW, B, C = 0.5, 0.3, -0.3
#: Equal depth in closed form: with h = 2 + 2s, b − 2cs/h = 0.3 (1 + 2s)/(1 + s), so the reward per unit u is
#: (2/π)·0.045 s (1+2s)²/(1+s)³; equal depth with the center means s/(2σ_w²) equals it, i.e.
#: u = π/(4σ_w² k(s)) minimised over s with k(s) = 0.045 (1+2s)²/(1+s)³, maximal at s = 1/2: u_c = 75π/8.
U_C = 75 * math.pi / 8


def blog_potential(rho: float, u: float, sw: float = SW, b: float = B, c: float = C) -> float:
    """Ũ_u(ρ)/D exactly as printed in the blog (eq. after 'Taking L → 1')."""
    h = 1 + 2 * (sw + rho**2)
    return rho**2 / (2 * sw) - (2 * u / math.pi) * rho**2 / h * (b - 2 * c * rho**2 / h) ** 2


def deepest_side_well(u: float, **kw: float) -> float:
    """Brute force: minimum of the blog potential over ρ in [0.2, 2] (grid + bounded polish)."""
    grid = np.linspace(0.2, 2.0, 2001)
    vals = [blog_potential(r, u, **kw) for r in grid]
    i = int(np.argmin(vals))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    res = minimize_scalar(
        lambda r: blog_potential(r, u, **kw), bounds=(lo, hi), method="bounded", options={"xatol": 1e-12}
    )
    return float(res.fun)


def spec(**kw):
    return SPEC.validate_python({"theory": "rubin_cavity", "mode": "potential", **kw})


def test_equal_depth_point_of_the_blog() -> None:
    u_brute = brentq(deepest_side_well, 25.0, 33.0, xtol=1e-12)
    assert u_brute == pytest.approx(29.45, abs=5e-3)  # the blog's quoted value
    assert u_brute == pytest.approx(U_C, abs=1e-7)  # the closed form derived above
    pot = OverlapPotential(SW, B, C, U_C)
    aligned = [p for p in pot.stationary_points() if p.kind == "aligned"]
    assert len(aligned) == 1
    assert aligned[0].depth == pytest.approx(0.0, abs=1e-13)
    # The side well sits exactly at |ρ| = 1/√2 at the equal-depth point (s = 1/2 above).
    assert aligned[0].rho == pytest.approx(1 / math.sqrt(2), abs=1e-12)
    for du, sign in ((-1e-6, 1), (1e-6, -1)):
        gap = min(p.depth for p in OverlapPotential(SW, B, C, U_C + du).wells() if p.kind == "aligned")
        assert np.sign(gap) == sign


def test_potential_matches_the_blog_formula_and_its_derivatives() -> None:
    rng = np.random.default_rng(1)
    for _ in range(20):
        sw, b, c, u = rng.uniform(0.1, 2), rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(0, 80)
        pot = OverlapPotential(sw, b, c, u)
        for rho in rng.uniform(-2, 2, size=5):
            f = lambda r, sw=sw, b=b, c=c, u=u: blog_potential(r, u, sw, b, c)  # noqa: E731
            assert float(pot.value(rho)) == pytest.approx(f(rho), rel=1e-12, abs=1e-14)
            h = 1e-5
            fd1 = (f(rho + h) - f(rho - h)) / (2 * h)
            fd2 = (f(rho + h) - 2 * f(rho) + f(rho - h)) / h**2
            assert float(pot.grad(rho)) == pytest.approx(fd1, rel=1e-7, abs=1e-8)
            assert float(pot.hess(rho)) == pytest.approx(fd2, rel=1e-4, abs=1e-4)


def test_center_curvature_formula_against_finite_differences() -> None:
    for sw, b, c, u in [(0.5, 0.3, -0.3, 29.45), (1.3, 0.7, 0.2, 5.0), (0.2, -0.4, 0.9, 60.0)]:
        formula = 1 / sw - (4 * u / math.pi) * b**2 / (1 + 2 * sw)  # note §4.2 / §10
        h = 1e-4
        fd = blog_potential(h, u, sw, b, c) - 2 * blog_potential(0.0, u, sw, b, c) + blog_potential(-h, u, sw, b, c)
        assert OverlapPotential(sw, b, c, u).center_curvature() == pytest.approx(formula, rel=1e-12)
        assert fd / h**2 == pytest.approx(formula, rel=1e-6, abs=1e-6)


def test_standard_scaling_potential_is_the_blog_cavity_U() -> None:
    # U/D = ρ²/(2σ_w²) + log L/(2D) − s_a² P² m²/(2 T² L D), with m and v from their closed forms.
    sw, b, c, D, P, T, sa2 = 0.5, 0.3, -0.3, 150.0, 3000.0, 0.18, 8 / 700**2
    u, lam = P**2 * sa2 / (T**2 * D), sa2 * P / T
    pot = OverlapPotential(sw, b, c, u, lam=lam, D=D)
    for rho in (0.0, 0.1, 0.5, 0.9, 1.7):
        q = sw + rho**2
        L = 1 + lam * erf_variance(q)
        m = residual_projection(rho, q, b, c)
        U = D * rho**2 / (2 * sw) + 0.5 * math.log(L) - sa2 * P**2 * m**2 / (2 * T**2 * L)
        assert float(pot.value(rho)) == pytest.approx(U / D, rel=1e-12)
        fd = (float(pot.value(rho + 1e-5)) - float(pot.value(rho - 1e-5))) / 2e-5
        assert float(pot.grad(rho)) == pytest.approx(fd, rel=1e-6, abs=1e-9)
        fd2 = (float(pot.grad(rho + 1e-5)) - float(pot.grad(rho - 1e-5))) / 2e-5
        assert float(pot.hess(rho)) == pytest.approx(fd2, rel=1e-6, abs=1e-7)
    # U''(0) of the note §5: D/σ_w² + ℓ/L0 − s_a² P² α² / (T² L0), divided by D.
    alpha = (2 / math.sqrt(math.pi)) * b / math.sqrt(1 + 2 * sw)
    L0 = 1 + lam * erf_variance(sw)
    ell = lam * (4 / math.pi) / ((1 + 2 * sw) * math.sqrt(1 + 4 * sw))
    formula = (D / sw + ell / L0 - sa2 * P**2 * alpha**2 / (T**2 * L0)) / D
    assert pot.center_curvature() == pytest.approx(formula, rel=1e-12)
    # The ½ log L and 1/L corrections vanish as s_a² P/T → 0 at fixed u.
    tiny = OverlapPotential(sw, b, c, u, lam=1e-12, D=D)
    assert float(tiny.value(0.8)) == pytest.approx(float(OverlapPotential(sw, b, c, u).value(0.8)), abs=1e-10)


def test_every_stationary_point_is_found() -> None:
    """Exact quartic roots against a dense sign scan of the blog potential's slope."""
    rng = np.random.default_rng(7)
    for _ in range(40):
        sw, b, c, u = rng.uniform(0.1, 2), rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(0, 120)
        rho = np.linspace(1e-4, 4.0, 40001)
        f = np.array([blog_potential(r, u, sw, b, c) for r in rho])
        slope = np.diff(f)
        scan = rho[1:-1][np.sign(slope[:-1]) != np.sign(slope[1:])]
        found = [p.rho for p in OverlapPotential(sw, b, c, u).stationary_points() if p.kind != "center"]
        found = [r for r in found if 2e-4 < r < 3.99]
        assert len(found) == len(scan)
        assert np.allclose(sorted(found), sorted(scan), atol=2e-4)


def _basin_masses(u: float, D: float, barrier: float) -> tuple[float, float, float]:
    w = lambda r: math.exp(-D * blog_potential(r, u))  # noqa: E731
    inner = quad(w, 0, barrier, epsabs=0, epsrel=1e-12, limit=200)[0]
    outer = quad(w, barrier, 6.0, epsabs=0, epsrel=1e-12, limit=200, points=[0.7071])[0]
    m2 = quad(lambda r: r * r * w(r), 0, 6.0, epsabs=0, epsrel=1e-12, limit=400, points=[barrier, 0.7071])[0]
    return inner, outer, m2


@pytest.mark.parametrize("u,D", [(U_C, 150.0), (28.5, 40.0), (31.0, 150.0), (U_C, 2000.0)])
def test_R_and_well_weights_by_brute_force_quadrature(u: float, D: float) -> None:
    res = solve_json(THEORY, spec(u=u, D=D), SolverOptions())
    obs = res["observables"]
    barrier = obs["barriers"][0]["rho"]
    inner, outer, m2 = _basin_masses(u, D, barrier)
    total = inner + outer
    assert res["order_parameters"]["R"] == pytest.approx(m2 / total, rel=1e-8)
    weights = {w["kind"]: w["weight"] for w in obs["potential_wells"]}
    assert weights["center"] == pytest.approx(inner / total, rel=1e-8)
    assert weights["aligned"] == pytest.approx(outer / total, rel=1e-8)


def test_well_weights_approach_the_laplace_ratio_at_equal_depth() -> None:
    # At equal depth the D → ∞ ratio of basin masses is 2√(f''(0)/f''(ρ*)): one Gaussian at ρ = 0 against two
    # (at ±ρ*) of the same height.
    h = 1e-4
    c0 = (blog_potential(h, U_C) - 2 * blog_potential(0, U_C) + blog_potential(-h, U_C)) / h**2
    r = 1 / math.sqrt(2)
    ca = (blog_potential(r + h, U_C) - 2 * blog_potential(r, U_C) + blog_potential(r - h, U_C)) / h**2
    res = solve_json(THEORY, spec(u=U_C, D=1e6), SolverOptions())
    weights = {w["kind"]: w["weight"] for w in res["observables"]["potential_wells"]}
    assert weights["aligned"] / weights["center"] == pytest.approx(2 * math.sqrt(c0 / ca), rel=2e-3)


def test_solve_reports_every_branch_with_stability_and_phase() -> None:
    res = solve_json(THEORY, spec(u=U_C), SolverOptions())
    br = {b["name"]: b for b in res["branches"]}
    assert set(br) == {"center", "aligned", "barrier"}
    assert br["center"]["stable"] and br["aligned"]["stable"] and not br["barrier"]["stable"]
    assert br["aligned"]["order_parameters"]["rho"] == pytest.approx(1 / math.sqrt(2), abs=1e-10)
    assert br["aligned"]["free_entropy"] == pytest.approx(0.0, abs=1e-12)
    assert res["observables"]["phase"] == "GMFL-I"
    assert res["order_parameters"]["R"] is None  # no D: no finite-D moments
    assert res["observables"]["test_mse"] == pytest.approx(B**2 + 6 * C**2)
    low, high = solve_json(THEORY, spec(u=25.0), SolverOptions()), solve_json(THEORY, spec(u=33.0), SolverOptions())
    assert low["equilibrium"] == "center" and low["observables"]["phase"] == "GFL"
    assert low["order_parameters"]["rho_star"] == 0.0
    assert high["equilibrium"] == "aligned" and high["observables"]["phase"] == "GMFL-II"
    assert high["order_parameters"]["rho_star"] == pytest.approx(
        minimize_scalar(
            lambda r: blog_potential(r, 33.0), bounds=(0.3, 2), method="bounded", options={"xatol": 1e-12}
        ).x,
        abs=1e-7,
    )


def test_bad_input_names_the_field() -> None:
    for bad, field in [
        ({"sigma_w2": 0.0}, "sigma_w2"),
        ({"u": -1.0}, "u"),
        ({"D": 0.5}, "D"),
        ({"b": float("nan")}, "b"),
        ({"bogus": 1}, "bogus"),
    ]:
        with pytest.raises(ValidationError) as err:
            spec(**bad)
        assert field in str(err.value)
    with pytest.raises(ValidationError):
        SPEC.validate_python({"theory": "rubin_cavity", "u": 3.0})  # mode is required


def _side_well_birth(sw: float, b: float, c: float) -> float:
    """u at which F'(s) = 1/(2σ_w²) − (2u/π) G(s) first has a positive root: π/(4σ_w² max_s G)."""

    def G(s: float) -> float:
        h0, h = 1 + 2 * sw, 1 + 2 * sw + 2 * s
        t = s / h
        return (b - 2 * c * t) * (b - 6 * c * t) * h0 / h**2

    best = minimize_scalar(lambda s: -G(s), bounds=(1e-9, 10.0), method="bounded", options={"xatol": 1e-13})
    return math.pi / (4 * sw * -best.fun)


def _transitions(res: dict, kind: str) -> list[dict]:
    return [t for t in res["transitions"] if t["kind"] == kind]


def test_sweep_in_u_finds_the_first_order_point_and_both_spinodals() -> None:
    res = sweep_json(THEORY, spec(), "u", list(np.linspace(20.0, 40.0, 41)), "continuation", SolverOptions())
    (fo,) = _transitions(res, "first_order")
    assert fo["parameter"] == pytest.approx(U_C, abs=1e-5)
    assert set(fo["branches"]) == {"center", "aligned"}
    spin = sorted(t["parameter"] for t in _transitions(res, "spinodal"))
    birth = _side_well_birth(SW, B, C)
    center_loss = math.pi * (1 + 2 * SW) / (4 * SW * B**2)  # Ũ''(0) = 0
    assert birth < U_C < center_loss
    assert any(abs(s - birth) < 1e-5 for s in spin)
    assert any(abs(s - center_loss) < 1e-5 for s in spin)


def test_sweep_without_first_order_point_when_side_wells_grow_continuously() -> None:
    # c = 0: F''(0) ∝ 8bc + 4b² > 0, the side wells bifurcate supercritically out of ρ = 0.
    res = sweep_json(THEORY, spec(c=0.0), "u", list(np.linspace(20.0, 50.0, 31)), "continuation", SolverOptions())
    assert _transitions(res, "first_order") == []
    center_loss = math.pi * (1 + 2 * SW) / (4 * SW * B**2)
    spin = [t["parameter"] for t in _transitions(res, "spinodal")]
    assert any(abs(s - center_loss) < 1e-5 for s in spin)


def _blog_slope(rho: float, u: float) -> float:
    h = 1e-6
    return (blog_potential(rho + h, u) - blog_potential(rho - h, u)) / (2 * h)


def test_sweep_curves_turn_at_the_spinodal_and_are_solutions() -> None:
    """The README's sweep serves its traced curves: the aligned S-curve turns at the birth of the side wells (its
    smallest u), with points of both branches beside the fold; every row is a stationary point of the blog's
    potential; the two curves through the first-order point have equal free entropies there."""
    res = sweep_json(THEORY, spec(), "u", list(np.linspace(20.0, 40.0, 41)), "continuation", SolverOptions())
    birth = _side_well_birth(SW, B, C)
    curves = res["curves"]
    assert curves, "a continuation sweep serves its curves"
    for c in curves:
        assert min(c["parameter"]) >= 20.0 and max(c["parameter"]) <= 40.0
        for rho, u in zip(c["order_parameters"]["rho"], c["parameter"], strict=True):
            assert abs(_blog_slope(rho, u)) < 1e-7, (c["name"], rho, u)
    (s_curve,) = [c for c in curves if {"aligned", "barrier"} <= set(c["branches"])]
    assert min(s_curve["parameter"]) == pytest.approx(birth, abs=1e-4)
    (fold,) = [t for t in _transitions(res, "spinodal") if abs(t["parameter"] - birth) < 1e-5]
    marked = [m for m in s_curve["special"] if m["type"] == "fold"]
    assert marked, "the fold is a point of its curve"
    for m in marked:
        i = m["index"]
        assert s_curve["parameter"][i] == s_curve["parameter"][i + 1] == pytest.approx(fold["parameter"], abs=1e-9)
        assert {s_curve["branch"][i], s_curve["branch"][i + 1]} == {"aligned", "barrier"}
        assert s_curve["stable"][i] != s_curve["stable"][i + 1]
        # the curve turns here: larger u on both sides, one side on each branch
        assert s_curve["parameter"][i - 1] > fold["parameter"] < s_curve["parameter"][i + 2]
        assert s_curve["branch"][i - 1] == s_curve["branch"][i] and s_curve["branch"][i + 1] == s_curve["branch"][i + 2]
    at_fo = [c["free_entropy"][m["index"]] for c in curves for m in c["special"] if m["kind"] == "first_order"]
    assert len(at_fo) >= 2 and max(at_fo) - min(at_fo) < 1e-10
    # ρ = 0 is a stationary point of the even potential at every u: every point lists it, also just past the
    # centre's loss of stability, between two traced points of its curve
    for pt in res["points"]:
        assert any(branch_of(pt, b["name"])["order_parameters"]["rho"] == 0.0 for b in pt["branches"]), pt["parameter"]
