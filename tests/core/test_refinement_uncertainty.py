"""Refined special points carry the uncertainty their root finder ended with, and it covers the exact point.

The tilted double well x³ − x + λ = 0 has closed forms: folds at λ = ±2/(3√3), the equal-depth (first-order)
point at λ = 0. An event whose indicator is linear in λ is met exactly by the first secant step: its
uncertainty must still be a bracket at the root finder's tolerance, not 0.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from service.serialize import special_point_json
from solvers.core.options import SolverOptions
from solvers.core.problem import Event
from solvers.core.roots import bracketed_root
from solvers.core.special_points import SpecialKind
from solvers.core.sweep import run_sweep
from tests.core.problems import tilted_double_well

FOLD = 2 / (3 * math.sqrt(3))


def test_bracketed_root_reports_its_final_bracket() -> None:
    root = bracketed_root(lambda x: x**3 - 2.0, 0.0, 3.0, xtol=1e-6, rtol=1e-12)
    exact = 2.0 ** (1 / 3)
    assert root.lo <= exact <= root.hi
    assert 0.0 < root.uncertainty <= 2e-6
    assert abs(root.x - exact) <= root.uncertainty


def test_an_exact_zero_is_bracketed_at_the_tolerance() -> None:
    root = bracketed_root(lambda x: 2.0 * x - 1.0, 0.0, 3.0, xtol=1e-10, rtol=1e-15)
    assert root.x == 0.5
    assert 0.0 < root.uncertainty <= 2e-10


@pytest.mark.parametrize("method", ["continuation", "grid"])
def test_refined_transitions_report_a_nonzero_uncertainty_that_covers_the_closed_form(method: str) -> None:
    problem = dataclasses.replace(
        tilted_double_well(),
        events=(Event("lambda_is_0.1", lambda x, lam: lam - 0.1, transition="spinodal", branches=("any",)),),
    )
    sweep = run_sweep(problem, list(np.linspace(-0.55, 0.65, 13)), SolverOptions(), method=method)
    refined = [sp for sp in sweep.special_points if sp.refined]
    kinds = {sp.kind for sp in refined}
    assert SpecialKind.FIRST_ORDER in kinds and SpecialKind.EVENT in kinds
    if method == "continuation":
        assert SpecialKind.FOLD in kinds
    exact = {SpecialKind.FIRST_ORDER: [0.0], SpecialKind.EVENT: [0.1], SpecialKind.FOLD: [-FOLD, FOLD]}
    for sp in refined:
        assert 0.0 < sp.uncertainty < 1e-6, sp
        assert special_point_json(sp)["uncertainty"] == sp.uncertainty
        target = min(exact[sp.kind], key=lambda v: abs(v - sp.parameter))
        # the solves along the way are converged to the residual tolerance, not to round-off
        assert abs(sp.parameter - target) <= sp.uncertainty + 1e-9, sp


def test_an_event_classified_first_order_is_typed_first_order() -> None:
    problem = dataclasses.replace(
        tilted_double_well(),
        events=(Event("switch", lambda x, lam: lam - 0.3, transition="first_order", branches=("a", "b")),),
    )
    sweep = run_sweep(problem, list(np.linspace(0.2, 0.4, 5)), SolverOptions())
    (sp,) = [sp for sp in sweep.special_points if sp.event == "switch"]
    out = special_point_json(sp)
    assert (out["kind"], out["type"], out["event"]) == ("first_order", "first_order", "switch")
    assert sp.parameter == pytest.approx(0.3, abs=1e-12)


def test_one_crossing_refined_from_several_track_pieces_is_listed_once() -> None:
    """The same two branches' free-entropy crossing, refined from different pieces of their tracks, lands a few
    1e-7 apart (relative) where the free entropies cross at a shallow angle: one transition, listed once; two
    crossings of the same branches 1e-5 apart stay two."""
    from solvers.core.special_points import SpecialPoint, dedupe

    def crossing(p: float) -> SpecialPoint:
        return SpecialPoint(SpecialKind.FIRST_ORDER, p, ("GFL", "GMFL-I"), refined_to=2e-10, uncertainty=4e-11)

    once = dedupe([crossing(526.7354841386334), crossing(526.7355468388007), crossing(526.7357396472246)])
    assert [sp.parameter for sp in once] == [526.7354841386334]
    assert len(dedupe([crossing(526.7354841386334), crossing(526.7354841386334 * (1 + 1e-5))])) == 2
