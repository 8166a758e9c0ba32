"""How the wells and barriers of the overlap potential are reported: a well's ``depth`` is how far it lies below the
centre, a barrier's ``height`` how far it rises above it, both from the blog's formula re-typed here."""

from __future__ import annotations

import math

import pytest
from pydantic import TypeAdapter

from solvers.core.options import SolverOptions
from solvers.theories import get
from tests.payloads import solve_json

THEORY = get("rubin_cavity")
SW, B, C = 0.5, 0.3, -0.3


def blog_potential(rho: float, u: float) -> float:
    h = 1 + 2 * (SW + rho**2)
    return rho**2 / (2 * SW) - (2 * u / math.pi) * rho**2 / h * (B - 2 * C * rho**2 / h) ** 2


@pytest.mark.parametrize("u", [29.0, 31.0])  # aligned well above the centre, then below it (u_c = 75π/8)
def test_depth_is_positive_below_the_centre_and_a_barrier_has_a_height(u: float) -> None:
    spec = TypeAdapter(THEORY.spec_model).validate_python(
        {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": SW, "b": B, "c": C, "u": u})
    obs = solve_json(THEORY, spec, SolverOptions())["observables"]
    (aligned,) = [w for w in obs["potential_wells"] if w["kind"] == "aligned"]
    (center,) = [w for w in obs["potential_wells"] if w["kind"] == "center"]
    (barrier,) = obs["barriers"]
    assert center["depth"] == 0.0 and center["f_minus_f0"] == 0.0
    below = blog_potential(0.0, u) - blog_potential(aligned["rho"], u)
    assert aligned["depth"] == pytest.approx(below, abs=1e-12)
    assert aligned["f_minus_f0"] == pytest.approx(-below, abs=1e-12)
    assert (aligned["depth"] > 0) == (u > 75 * math.pi / 8)
    assert "depth" not in barrier
    assert barrier["height"] == pytest.approx(blog_potential(barrier["rho"], u) - blog_potential(0.0, u), abs=1e-12)
    assert barrier["height"] > 0 and barrier["f_minus_f0"] == barrier["height"]


def test_each_branch_is_named_like_its_stationary_point() -> None:
    spec = TypeAdapter(THEORY.spec_model).validate_python(
        {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": SW, "b": B, "c": C, "u": 31.0})
    res = solve_json(THEORY, spec, SolverOptions())
    by_name = {b["name"]: b["observables"] for b in res["branches"]}
    aligned, barrier = by_name["aligned"], by_name["barrier"]
    assert aligned["branch_depth"] > 0 and aligned["branch_height"] is None
    assert aligned["branch_f_minus_f0"] == -aligned["branch_depth"]
    assert barrier["branch_depth"] is None and barrier["branch_height"] > 0
    assert barrier["branch_height"] == barrier["branch_f_minus_f0"]


def test_the_sampled_potential_is_the_blog_formula_on_both_sides_with_every_well_a_sample() -> None:
    u = 75 * math.pi / 8  # equal depth: the aligned wells at ±1/√2 lie exactly at the centre's level
    spec = TypeAdapter(THEORY.spec_model).validate_python(
        {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": SW, "b": B, "c": C, "u": u,
         "potential_samples": 61})
    body = solve_json(THEORY, spec, SolverOptions())
    curve = body["observables"]["potential_curve"]
    rho, value = curve["rho"], curve["value"]
    assert rho == sorted(rho) and len(rho) == 61 + 4  # the grid and the aligned well and barrier at ±ρ
    assert rho[0] == -rho[-1] == -max(1.0, 1.4 / math.sqrt(2))  # ρ_max: the outermost well and beyond
    for r, v in zip(rho, value, strict=True):
        assert v == pytest.approx(blog_potential(r, u) - blog_potential(0.0, u), abs=1e-13)
    at = dict(zip(rho, value, strict=True))
    (aligned,) = [w for w in body["observables"]["potential_wells"] if w["kind"] == "aligned"]
    (barrier,) = body["observables"]["barriers"]
    assert aligned["rho"] == pytest.approx(1 / math.sqrt(2), abs=1e-12)
    for sign in (1, -1):
        assert at[sign * aligned["rho"]] == pytest.approx(0.0, abs=1e-13)
        assert at[sign * barrier["rho"]] == barrier["f_minus_f0"]
    assert min(value) == pytest.approx(0.0, abs=1e-13)  # no sample lies below the three degenerate wells
    # one curve per parameter point, not per branch; without potential_samples nothing is reported
    assert all("potential_curve" not in (b["observables"] or {}) for b in body["branches"])
    plain = TypeAdapter(THEORY.spec_model).validate_python({"theory": "rubin_cavity", "mode": "potential", "u": u})
    assert "potential_curve" not in solve_json(THEORY, plain, SolverOptions())["observables"]
