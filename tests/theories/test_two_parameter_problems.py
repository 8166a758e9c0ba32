"""Theories as two-parameter problems (``Theory.two_parameter_problem``), traced by the line engine.

rubin_cavity potential in (b, u) at σ_w² = 0.5, c = −0.3: the centre spinodal u = π(1 + 2σ_w²)/(4σ_w² b²)
(f''(0) = 0) to 1e-8, and the first-order line against an equal-depth brentq on the exact quartic's wells
to 1e-6, at several b. The generic (re-bound) problem must trace the same lines as the native one.
hciz_mlp ReLU in (Δ, α): the universal solution loses stability where its linearisation says,
hciz_margin = 1 − v_max² m_S(R̂_2)/γ = 0, a supercritical pitchfork all along.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import TypeAdapter
from scipy.optimize import brentq

from solvers.core.lines import LineOptions, resample_line, trace_boundaries
from solvers.core.options import SolverOptions
from solvers.theories import get
from solvers.theories.rubin_cavity.common.potential import OverlapPotential
from solvers.theories.two_parameter import MEMO_SIZE, Rebound, field_bounds, rebound

RUBIN = get("rubin_cavity")
SIGMA_W2, C = 0.5, -0.3
BOX = ((0.25, 0.4), (10.0, 60.0))
BS = [0.26, 0.3, 0.35, 0.39]


def potential_spec(**fields):
    body = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": SIGMA_W2, "b": 0.3, "c": C, "u": 30.0}
    return TypeAdapter(RUBIN.spec_model).validate_python({**body, **fields})


def centre_spinodal(b: float) -> float:
    return math.pi * (1 + 2 * SIGMA_W2) / (4 * SIGMA_W2 * b * b)


def equal_depth_u(b: float, u_lo: float, u_hi: float) -> float:
    """Where the aligned well is as deep as the centre (depths relative to Ũ(0), from the exact quartic)."""

    def depth(u: float) -> float:
        return min(p.depth for p in OverlapPotential(SIGMA_W2, b, C, u).stationary_points() if p.kind == "aligned")

    return brentq(depth, u_lo, u_hi, xtol=1e-13, rtol=1e-15)


@pytest.fixture(scope="module")
def native():
    problem = RUBIN.two_parameter_problem(potential_spec(), ("b", "u"))
    return problem, trace_boundaries(problem, *BOX)


def test_the_potential_in_b_and_u_has_its_three_lines(native) -> None:
    _, res = native
    assert sorted(line.kind for line in res.lines) == ["first_order", "fold", "stability_loss"]
    (centre,) = res.of_kind("stability_loss")
    pts = centre.array()
    assert np.max(np.abs(pts[:, 1] - [centre_spinodal(b) for b in pts[:, 0]])) <= 1e-8
    assert centre.bifurcation is not None and centre.bifurcation.describe() == "subcritical pitchfork"


def test_resampled_lines_against_the_closed_form_and_the_equal_depth_computation(native) -> None:
    problem, res = native
    by_kind = {line.kind: resample_line(problem, line, BS, *BOX) for line in res.lines}
    for (b, u) in by_kind["stability_loss"].coordinates:
        assert u == pytest.approx(centre_spinodal(b), abs=1e-8)
    folds = dict(by_kind["fold"].coordinates)
    for (b, u) in by_kind["first_order"].coordinates:
        assert u == pytest.approx(equal_depth_u(b, folds[b] + 1e-3, centre_spinodal(b)), abs=1e-6)
    assert [p[0] for p in by_kind["first_order"].coordinates] == pytest.approx(BS, abs=1e-12)


def test_the_generic_rebound_problem_traces_the_same_lines(native) -> None:
    _, res = native
    spec = potential_spec()
    generic = rebound(RUBIN.of(spec), spec, ("b", "u"))  # type: ignore[attr-defined]
    other = trace_boundaries(generic, *BOX)
    assert sorted(line.kind for line in other.lines) == sorted(line.kind for line in res.lines)
    for line in res.lines:
        (twin,) = other.of_kind(line.kind)
        ours = resample_line(generic, twin, BS, *BOX)
        theirs = resample_line(RUBIN.two_parameter_problem(spec, ("b", "u")), line, BS, *BOX)
        np.testing.assert_allclose(ours.array(), theirs.array(), rtol=0, atol=1e-8)


def test_the_generic_problem_keeps_a_bounded_memo_and_refuses_values_outside_the_spec() -> None:
    spec = potential_spec()
    theory = RUBIN.of(spec)  # type: ignore[attr-defined]
    memo = Rebound(theory, spec, ("sigma_w2", "u"), None)
    for s in np.linspace(0.1, 1.0, 3 * MEMO_SIZE):
        assert memo(np.array([s, 30.0]))[0] is not None
    assert len(memo._memo) == MEMO_SIZE
    assert memo(np.array([-0.5, 30.0]))[0] is None  # σ_w² > 0
    problem = rebound(theory, spec, ("sigma_w2", "u"))
    assert np.all(np.isnan(problem.F(np.array([0.1]), np.array([-0.5, 30.0]))))
    assert problem.bounds == ((0.0, 1e3), (0.0, 1e8)) == (field_bounds(spec, "sigma_w2"), field_bounds(spec, "u"))


def test_only_sweepable_fields_make_a_two_parameter_problem() -> None:
    with pytest.raises(ValueError, match="'D'"):
        RUBIN.two_parameter_problem(potential_spec(), ("b", "D"))  # no D in this spec
    with pytest.raises(ValueError, match="distinct"):
        RUBIN.two_parameter_problem(potential_spec(), ("b", "b"))


@pytest.mark.slow
def test_hciz_relu_universal_stability_line_is_where_its_linearisation_says() -> None:
    hciz = get("hciz_mlp")
    spec = hciz.spec_model.model_validate(
        {"theory": "hciz_mlp", "activation": "relu", "gamma": 0.5, "Delta": 0.03, "alpha": 0.3}
    )
    problem = hciz.two_parameter_problem(spec, ("Delta", "alpha"))
    res = trace_boundaries(problem, (0.025, 0.035), (0.25, 0.45), LineOptions(seeds=2))
    (line,) = res.lines
    assert line.kind == "stability_loss" and [e.kind for e in line.ends] == ["domain", "domain"]
    assert line.bifurcation is not None and line.bifurcation.describe() == "supercritical pitchfork"
    one = hciz.problem(spec, "alpha", SolverOptions())
    for (delta, alpha), state in list(zip(line.coordinates, line.states, strict=True))[::3]:
        at = hciz.problem(spec.model_copy(update={"Delta": delta}), "alpha", SolverOptions())
        assert at.report(state[0], alpha).observables["hciz_margin"] == pytest.approx(0.0, abs=1e-8)
    # At the spec's own Δ the line passes through the one-parameter sweep's bifurcation (α = 0.339165),
    # on a solution of the one-parameter problem.
    at_spec = resample_line(problem, line, [0.03], (0.025, 0.035), (0.25, 0.45))
    ((_, alpha_star),) = at_spec.coordinates
    assert alpha_star == pytest.approx(0.339165, abs=5e-7)
    assert np.max(np.abs(one.F(at_spec.states[0][0], alpha_star))) <= 1e-9


def test_hciz_tanh_spinodal_and_first_order_lines_through_the_one_dimensional_reference() -> None:
    """At Δ = 0.1 the (Δ, α) lines cross the spinodal and first-order point of the 1-D reduction (tanh, γ = 1/2)."""
    from scipy.optimize import minimize_scalar

    from tests.theories.test_hciz_mlp_transitions import alpha_of, phi

    fold = minimize_scalar(alpha_of, bounds=(0.05, 0.99), method="bounded", options={"xatol": 1e-12})
    q_e = brentq(lambda q: phi(q, alpha_of(q)) - phi(0.0, alpha_of(q)), float(fold.x) + 1e-6, 0.999, xtol=1e-14)
    hciz = get("hciz_mlp")
    spec = hciz.spec_model.model_validate(
        {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "Delta": 0.1, "alpha": 4.0}
    )
    problem = hciz.two_parameter_problem(spec, ("Delta", "alpha"))
    box = ((0.05, 0.2), (2.0, 8.0))
    res = trace_boundaries(problem, *box)
    assert sorted(line.kind for line in res.lines) == ["first_order", "fold"]
    for line in res.lines:  # every end on the box, also where a line leaves near a corner
        for end in line.ends:
            assert box[0][0] <= end.point[0] <= box[0][1] and box[1][0] <= end.point[1] <= box[1][1]
    at = {line.kind: resample_line(problem, line, [0.1], *box).coordinates[0][1] for line in res.lines}
    assert at["fold"] == pytest.approx(float(fold.fun), rel=1e-7)
    assert at["first_order"] == pytest.approx(alpha_of(q_e), rel=1e-7)


def test_kernel_renormalization_through_the_default_has_no_line_and_says_why() -> None:
    """The default lifts the bound problem unchanged; a box in which the scans see no special point says so."""
    kr = get("kernel_renormalization")
    spec = kr.spec_model.model_validate({"theory": "kernel_renormalization", "activation": "erf", "N1": 20, "T": 0.1,
                                         "data": {"kind": "teacher", "P": 30, "P_test": 10, "N0": 8, "seed": 0}})
    problem = kr.two_parameter_problem(spec, ("T", "N1"))
    x0 = next(iter(kr.problem(spec, "N1").starts(20.0).values()))
    np.testing.assert_array_equal(problem.F(x0, np.array([0.1, 20.0])), kr.problem(spec, "N1").F(x0, 20.0))
    res = trace_boundaries(problem, (0.05, 0.2), (10.0, 40.0), LineOptions(seeds=2))
    assert res.lines == () and "no special point along N1" in res.reason
