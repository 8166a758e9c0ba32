"""Stability losses typed from the normal form, and the branches that split off found without a named start.

Known answers: Curie–Weiss m = tanh(βm) has a supercritical pitchfork at β = 1 (b11 = −1, c = 2 with
F = m − tanh(βm)) whose branches ±m solve m = tanh(βm) (brentq); x(x − p) = 0 has a transcritical point
at p = 0 where the branch x = p crosses x = 0; x ↦ −p x (1 − x²) loses contractivity at p = 1 with
F_x = −(1 + p) regular there (a flip, not a branch point); x³ − p x = 0 has the branches x = 0 and x = ±√p
(p > 0), which meet in a pitchfork at p = 0.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.optimize import brentq

from service.serialize import special_point_json
from solvers.core.branch_points import bifurcating_starts
from solvers.core.options import ContinuationOptions, SolverOptions
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


@pytest.mark.parametrize("half_width", [1.0, 0.05])
def test_a_transcritical_branch_is_started_from_the_other(half_width: float) -> None:
    """Over |p| ≤ 0.05 the two branches meet at 6° in the curves' coordinates (x, p / width): the one traced from
    the start must not be taken for the other."""
    problem = Problem(
        residual=lambda x, p: x * (x - p),
        dim=1,
        starts=lambda p: {"zero": np.array([0.0])},
        jacobian=lambda x, p: np.array([[2 * x[0] - p]]),
        kind="gradient",
        label=lambda x, p, s: "zero" if abs(x[0]) < 1e-9 else "diagonal",
    )
    res = run_sweep(problem, np.linspace(-half_width, half_width, 21), SolverOptions())
    (sp,) = res.special_points
    assert sp.kind is SpecialKind.BIFURCATION and sp.bifurcation.type == "transcritical"  # type: ignore[union-attr]
    assert sp.parameter == pytest.approx(0.0, abs=1e-10)
    for p, cat in zip(res.values, res.catalogues, strict=True):
        diagonal = cat.get("diagonal")
        if abs(p) < 1e-12:
            continue
        # Newton's residual tolerance 1e-10 over |F_x| = |p| on the diagonal
        assert diagonal is not None and diagonal.x[0] == pytest.approx(p, abs=1e-10 / min(1.0, abs(p)))
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


def cubic_pitchfork() -> Problem:
    """x³ − p x = 0: the branch x = 0 and, for p > 0, x = ±√p, which meet in a pitchfork at p = 0."""
    return Problem(
        residual=lambda x, p: x**3 - p * x,
        dim=1,
        starts=lambda p: {"zero": np.array([0.0])},
        jacobian=lambda x, p: np.array([[3 * x[0] ** 2 - p]]),
        kind="gradient",
        canonical=np.abs,
        label=lambda x, p, s: "zero" if abs(x[0]) < 1e-9 else "split",
    )


@pytest.mark.parametrize("ds_max", [0.05, 0.003])
def test_a_switch_is_no_longer_than_the_sweeps_largest_step(ds_max: float) -> None:
    steps = ContinuationOptions(ds=min(0.01, ds_max), ds_max=ds_max)
    options = SolverOptions(continuation=steps)
    res = run_sweep(cubic_pitchfork(), np.linspace(-1.0, 1.0, 21), options)
    (sp,) = res.special_points
    starts = bifurcating_starts(cubic_pitchfork(), sp, options, 2.0)
    assert sorted(np.sign(x[0]) for _, x in starts) == [-1.0, 1.0]
    for p, x in starts:
        assert x[0] ** 2 == pytest.approx(p, rel=1e-6)  # on x = ±√p
        assert np.hypot(x[0], p / 2.0) <= ds_max * (1 + 1e-9)  # within one step of (0, 0) in (x, p / width)
    (switched,) = [c for c in res.curves if c.message.startswith("started by branch switching")]
    z = np.array([[q.x[0], q.p / 2.0] for q in switched.points])
    # A step is ds_max along the tangent at most; its chord, on this parabola, by a few parts in 10⁴ more.
    assert np.max(np.linalg.norm(np.diff(z, axis=0), axis=1)) <= ds_max * 1.001
    x, p = z[:, 0], 2.0 * z[:, 1]
    # On x² = p, to the corrector's residual tolerance (≈ 2e-10) over |F_x| = 2x² there.
    assert np.all(np.abs(x**2 - p) * np.abs(x) <= 3e-10) and min(x) < -0.99 and max(x) > 0.99


def test_a_sweep_zoomed_onto_a_pitchfork_finds_the_branches_that_split_off() -> None:
    """Over |p| ≤ 5e-5 the branch x = √p is 7e-3 at most: a switch of fixed amplitude 1e-2 would start it
    at p = 1e-4, outside the range, and miss it."""
    res = run_sweep(cubic_pitchfork(), np.linspace(-5e-5, 5e-5, 11), SolverOptions())
    (sp,) = res.special_points
    assert sp.kind is SpecialKind.BIFURCATION and sp.parameter == pytest.approx(0.0, abs=1e-12)
    assert sum(c.message.startswith("started by branch switching") for c in res.curves) == 1
    for p, cat in zip(res.values, res.catalogues, strict=True):
        if abs(p) < 1e-12:
            continue  # x = 0 is a triple root there
        assert cat.get("zero") is not None and cat.get("zero").x[0] == 0.0  # type: ignore[union-attr]
        split = cat.get("split")
        if p < 0:
            assert split is None
            continue
        # Newton's residual tolerance 1e-10 over F_x = 2p ≥ 2e-5 leaves x within 5e-6 of √p.
        assert split is not None and split.x[0] == pytest.approx(np.sqrt(p), abs=1e-5)
        assert split.stable and cat.get("zero").stable is False  # type: ignore[union-attr]


def test_a_curve_step_that_lands_on_the_branch_point_still_types_and_switches_it() -> None:
    """Steps of 0.004 in (x, p / 2) from p = −1 land on p = 0 to round-off: that point's margin (−p, ≈ 1e-15) counts
    as stable, so the margin does not change sign between it and the next, unstable point, and no corrector
    converges onto the branch point itself. The loss is that point, typed and switched as any other."""
    options = SolverOptions(continuation=ContinuationOptions(ds=0.004, ds_max=0.004))
    res = run_sweep(cubic_pitchfork(), np.linspace(-1.0, 1.0, 21), options)
    assert min(abs(q.p) for q in res.curves[0].points) < 1e-12  # the case in question
    (sp,) = res.special_points
    assert sp.kind is SpecialKind.BIFURCATION and sp.bifurcation is not None
    assert sp.bifurcation.describe() == "supercritical pitchfork"
    assert sp.parameter == pytest.approx(0.0, abs=1e-12) and sp.uncertainty < 1e-12
    for p, cat in zip(res.values, res.catalogues, strict=True):
        split = cat.get("split")
        assert (split is not None) is (p > 1e-12)
        if split is not None:
            assert split.x[0] == pytest.approx(np.sqrt(p), abs=1e-9)


@pytest.mark.parametrize("amplitude", [1e-2, 1e-3])
def test_a_sweeps_switch_starts_at_its_own_branch_amplitude(amplitude: float) -> None:
    """``solver.continuation.branch_amplitude`` is the sweep's, as ``ds_max`` is: with steps long enough not to bound
    it, the first points on x = ±√p lie that far (kernel coordinate x) from the pitchfork at the origin."""
    options = SolverOptions(continuation=ContinuationOptions(ds_max=0.2, branch_amplitude=amplitude))
    res = run_sweep(cubic_pitchfork(), np.linspace(-1.0, 1.0, 21), options)
    (sp,) = res.special_points
    starts = bifurcating_starts(cubic_pitchfork(), sp, options, 2.0)
    assert sorted(np.sign(x[0]) for _, x in starts) == [-1.0, 1.0]
    for p, x in starts:
        assert abs(x[0]) == pytest.approx(amplitude, rel=1e-3)  # corrected onto x² = p at that amplitude
        assert x[0] ** 2 == pytest.approx(p, rel=1e-6)
