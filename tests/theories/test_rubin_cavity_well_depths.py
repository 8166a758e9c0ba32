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
