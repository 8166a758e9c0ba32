"""ReLU, γ = 1/2, Δ = 0.03: the weakly specialised branch that bifurcates from the universal one, by branch switching.

At Q = 0 the HCIZ term gives Q̂(v) ≈ (v²/γ) m_S(R̂_2) Q, so the universal solution loses stability exactly
where hciz_margin = 1 − v_max² m_S(R̂_2)/γ vanishes (docs/theories/hciz_mlp.md, α = 0.339165). A sweep whose
only start is the uninformative one (no informative start, no root scan) must find that point from the
Jacobian, type it from the normal form, and trace the branch that splits off; the branch must be the one
that the informative start and the root scan find by themselves at larger α.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from solvers.core.options import SolverOptions
from solvers.core.special_points import SpecialKind
from solvers.core.sweep import run_sweep
from solvers.theories import get

THEORY = get("hciz_mlp")
OPTIONS = SolverOptions()
ALPHAS = [0.2, 0.3, 0.4, 0.6, 0.8592, 1.0]
ALPHA_STAR = 0.339165  # docs/theories/hciz_mlp.md


def spec_at(alpha: float):
    return THEORY.spec_model.model_validate(
        {"theory": "hciz_mlp", "activation": "relu", "gamma": 0.5, "Delta": 0.03, "alpha": alpha}
    )


@pytest.fixture(scope="module")
def universal_only():
    problem = THEORY.problem(spec_at(0.5), "alpha", OPTIONS)
    only = dataclasses.replace(
        problem, starts=lambda p: {"uninformative": problem.starts(p)["uninformative"]}, enumerate=None
    )
    return problem, run_sweep(only, ALPHAS, OPTIONS)


def test_the_loss_of_stability_of_the_universal_branch_is_a_typed_pitchfork(universal_only) -> None:
    problem, res = universal_only
    (sp,) = res.special_points
    assert sp.kind is SpecialKind.BIFURCATION
    assert sp.parameter == pytest.approx(ALPHA_STAR, abs=5e-7)
    bp = sp.bifurcation
    assert bp is not None and bp.type == "pitchfork" and bp.criticality == "supercritical"
    assert bp.coefficients.a == pytest.approx(0.0, abs=1e-8 * abs(bp.coefficients.c))
    # The independent linear-stability condition of Q = 0 holds at the located point.
    assert problem.report(sp.x, sp.parameter).observables["hciz_margin"] == pytest.approx(0.0, abs=1e-9)
    assert set(sp.branches) == {"universal", "weakly_specialized"}


def test_the_weakly_specialised_branch_is_started_by_branch_switching(universal_only) -> None:
    _, res = universal_only
    assert any(c.message.startswith("started by branch switching") for c in res.curves)
    for alpha, cat in zip(ALPHAS, res.catalogues, strict=True):
        weak = cat.get("weakly_specialized")
        if alpha < ALPHA_STAR:
            assert weak is None and cat.equilibrium == "universal"
            continue
        assert weak is not None and weak.stable and cat.get("universal").stable is False  # type: ignore[union-attr]
        assert cat.equilibrium == "weakly_specialized"
    # The same branch as the informative start and the root scan reach on their own.
    for alpha in (0.8592, 1.0):
        switched = res.catalogues[ALPHAS.index(alpha)].get("weakly_specialized")
        alone = THEORY.solve(spec_at(alpha), OPTIONS).get("weakly_specialized")
        assert switched is not None and alone is not None
        assert np.max(np.abs(switched.x - alone.x)) <= 1e-9
        assert switched.report.observables["generalization_error"] == pytest.approx(  # type: ignore[union-attr]
            alone.report.observables["generalization_error"], abs=1e-11)  # type: ignore[union-attr]


def test_a_sweep_with_every_start_now_has_the_branch_next_to_the_bifurcation() -> None:
    """Between α* and ≈ 0.86 neither the informative start nor the root scan reaches the branch at the seeds."""
    res = THEORY.sweep(spec_at(0.5), "alpha", [0.2, 0.3, 0.36, 0.45, 0.6], "continuation", OPTIONS)
    for alpha, cat in zip(res.values, res.catalogues, strict=True):
        assert (cat.get("weakly_specialized") is not None) is (alpha > ALPHA_STAR)
