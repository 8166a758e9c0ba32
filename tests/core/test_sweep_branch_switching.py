"""Stability losses typed from the normal form, and the branches that split off found without a named start.

Known answers: Curie–Weiss m = tanh(βm) has a supercritical pitchfork at β = 1 (b11 = −1, c = 2 with
F = m − tanh(βm)) whose branches ±m solve m = tanh(βm) (brentq); x(x − p) = 0 has a transcritical point
at p = 0 where the branch x = p crosses x = 0; x ↦ −p x (1 − x²) loses contractivity at p = 1 with
F_x = −(1 + p) regular there (a flip, not a branch point).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.optimize import brentq

from service.serialize import special_point_json
from solvers.core.options import SolverOptions
from solvers.core.problem import Problem
from solvers.core.special_points import SpecialKind
from solvers.core.sweep import run_sweep
from tests.core.problems import curie_weiss

BETAS = np.linspace(0.5, 2.0, 31)


def paramagnet_only() -> Problem:
    return dataclasses.replace(curie_weiss(), starts=lambda beta: {"paramagnet": np.array([0.0])})


def magnetisation(beta: float) -> float:
    return brentq(lambda m: m - np.tanh(beta * m), 1e-9, 1.0, xtol=1e-15)


@pytest.fixture(scope="module")
def switched():
    return run_sweep(paramagnet_only(), BETAS, SolverOptions())


def test_the_pitchfork_is_a_typed_supercritical_bifurcation(switched) -> None:
    (sp,) = switched.special_points
    assert sp.kind is SpecialKind.BIFURCATION and sp.transition == "spinodal"
    assert sp.parameter == pytest.approx(1.0, abs=1e-10)
    bp = sp.bifurcation
    assert bp is not None and bp.type == "pitchfork" and bp.criticality == "supercritical"
    nf = bp.coefficients
    assert (nf.a, nf.b11, nf.c) == pytest.approx((0.0, -1.0, 2.0), abs=1e-6)
    assert set(sp.branches) == {"paramagnet", "ferromagnet"}
    body = special_point_json(sp)
    assert body["type"] == "bifurcation" and body["bifurcation"]["type"] == "pitchfork"
    assert body["bifurcation"]["criticality"] == "supercritical"
    assert body["bifurcation"]["coefficients"]["b11"] == pytest.approx(-1.0, abs=1e-6)


def test_the_ferromagnet_is_found_by_branch_switching_at_every_value(switched) -> None:
    started = [c for c in switched.curves if c.message.startswith("started by branch switching")]
    assert len(started) == 1  # ±m are one branch up to the symmetry (canonical = |m|)
    for beta, cat in zip(switched.values, switched.catalogues, strict=True):
        names = sorted(b.name for b in cat.branches)
        if beta <= 1.0 + 1e-12:
            assert names == ["paramagnet"]
            continue
        assert names == ["ferromagnet", "paramagnet"]
        ferro = cat.get("ferromagnet")
        assert ferro is not None and ferro.stable
        assert ferro.x[0] == pytest.approx(magnetisation(beta), abs=1e-9)
        assert cat.equilibrium == "ferromagnet" and cat.get("paramagnet").stable is False  # type: ignore[union-attr]


def test_a_branch_already_traced_is_not_traced_again() -> None:
    res = run_sweep(curie_weiss(), BETAS, SolverOptions())
    assert [c.name for c in res.curves] == ["paramagnet", "ferromagnet"]
    (sp,) = res.special_points
    assert sp.kind is SpecialKind.BIFURCATION and sp.bifurcation is not None


def test_grid_sweeps_type_the_pitchfork_too() -> None:
    res = run_sweep(curie_weiss(), BETAS, SolverOptions(), method="grid")
    bif = [sp for sp in res.special_points if sp.kind is SpecialKind.BIFURCATION]
    assert len(bif) == 1 and bif[0].bifurcation is not None
    assert bif[0].bifurcation.describe() == "supercritical pitchfork"
    assert bif[0].parameter == pytest.approx(1.0, abs=1e-10)


def test_a_transcritical_branch_is_started_from_the_other() -> None:
    problem = Problem(
        residual=lambda x, p: x * (x - p),
        dim=1,
        starts=lambda p: {"zero": np.array([0.0])},
        jacobian=lambda x, p: np.array([[2 * x[0] - p]]),
        kind="gradient",
        label=lambda x, p, s: "zero" if abs(x[0]) < 1e-9 else "diagonal",
    )
    res = run_sweep(problem, np.linspace(-1.0, 1.0, 21), SolverOptions())
    (sp,) = res.special_points
    assert sp.kind is SpecialKind.BIFURCATION and sp.bifurcation.type == "transcritical"  # type: ignore[union-attr]
    assert sp.parameter == pytest.approx(0.0, abs=1e-10)
    for p, cat in zip(res.values, res.catalogues, strict=True):
        diagonal = cat.get("diagonal")
        if abs(p) < 1e-12:
            continue
        assert diagonal is not None and diagonal.x[0] == pytest.approx(p, abs=1e-10)
        assert diagonal.stable is (p > 0) and cat.get("zero").stable is (p < 0)  # type: ignore[union-attr]


def test_a_loss_at_a_regular_jacobian_stays_a_stability_loss() -> None:
    problem = Problem(
        residual=None,
        dim=1,
        starts=lambda p: {"zero": np.array([0.0])},
        fixed_point=lambda x, p: -p * x * (1 - x**2),
        kind="fixed_point",
    )
    res = run_sweep(problem, np.linspace(0.5, 1.5, 11), SolverOptions())
    (sp,) = res.special_points
    assert sp.kind is SpecialKind.STABILITY_LOSS and sp.bifurcation is None
    assert sp.parameter == pytest.approx(1.0, abs=1e-8)
