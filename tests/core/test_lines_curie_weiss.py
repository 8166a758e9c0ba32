"""Curie–Weiss in a field: spinodals, the first-order line h = 0 and its critical end; the pitchfork at h = 0."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from solvers.core.lines import find_bifurcations, trace_boundaries, trace_branch
from solvers.core.problem import Problem
from tests.core.line_problems import curie_weiss_field, curie_weiss_free_entropy

BOX = ((0.6, 2.0), (-0.3, 0.3))


@pytest.fixture(scope="module")
def result():
    return trace_boundaries(curie_weiss_field(), *BOX)


def magnetisation(beta: float) -> float:
    return brentq(lambda m: m - np.tanh(beta * m), 1e-12, 1.0, xtol=1e-15)


def spinodal(beta: np.ndarray) -> np.ndarray:
    """|h_s(β)| = |m_s − artanh(m_s)/β| with m_s = √(1 − 1/β) (where dm/dh diverges)."""
    m = np.sqrt(1 - 1 / beta)
    return np.abs(m - np.arctanh(m) / beta)


def test_the_free_entropy_is_stationary_exactly_on_the_curie_weiss_equation() -> None:
    rng = np.random.default_rng(0)
    problem = curie_weiss_field()
    for m, beta, h in zip(rng.uniform(-0.9, 0.9, 20), rng.uniform(0.5, 2, 20), rng.uniform(-0.3, 0.3, 20), strict=True):
        d = 1e-6
        dphi = (curie_weiss_free_entropy(m + d, beta, h) - curie_weiss_free_entropy(m - d, beta, h)) / (2 * d)
        # dφ/dm = β (tanh(β(m + h)) − m) = −β F(m).
        assert dphi == pytest.approx(-beta * problem.F(np.array([m]), np.array([beta, h]))[0], abs=1e-8)
    # At a solution the Hubbard–Stratonovich form equals the Landau form β m²/2 + β h m + H(m).
    beta, h = 1.7, 0.05
    m = brentq(lambda m: m - np.tanh(beta * (m + h)), 0.1, 1.0, xtol=1e-15)
    entropy = -((1 + m) / 2) * np.log((1 + m) / 2) - ((1 - m) / 2) * np.log((1 - m) / 2)
    assert curie_weiss_free_entropy(m, beta, h) == pytest.approx(beta * m * m / 2 + beta * h * m + entropy, abs=1e-13)


def test_two_spinodals_and_one_first_order_line(result) -> None:
    assert sorted(line.kind for line in result.lines) == ["first_order", "fold", "fold"]


def test_spinodals_follow_the_closed_form(result) -> None:
    signs = []
    for line in result.of_kind("fold"):
        pts = line.array()
        sign = np.sign(np.median(pts[:, 1]))
        signs.append(sign)
        assert np.all(pts[:, 0] >= 1 - 1e-9)
        ok = pts[:, 0] > 1 + 1e-12
        assert np.max(np.abs(pts[ok, 1] - sign * spinodal(pts[ok, 0]))) <= 1e-8
        m = np.array([s[0, 0] for s in line.states])
        assert np.max(np.abs(m**2 - (1 - 1 / pts[:, 0]))) <= 1e-8  # F_m = 0: m² = 1 − 1/β
        assert sorted(e.kind for e in line.ends) == ["critical", "domain"]
    assert sorted(signs) == [-1, 1]


def test_first_order_line_is_h_zero_for_beta_above_one_ending_critical(result) -> None:
    (line,) = result.of_kind("first_order")
    pts = line.array()
    assert np.max(np.abs(pts[:, 1])) <= 1e-10
    ends = {e.kind: e for e in line.ends}
    assert set(ends) == {"critical", "domain"}
    assert ends["critical"].point[0] == pytest.approx(1.0, abs=1e-8)
    assert ends["critical"].point[1] == pytest.approx(0.0, abs=1e-8)
    assert ends["critical"].precision == 0.0
    assert ends["domain"].point[0] == pytest.approx(2.0, abs=1e-12)
    for (beta, _), states in zip(line.coordinates, line.states, strict=True):
        if beta > 1.05:
            assert sorted(states[:, 0]) == pytest.approx([-magnetisation(beta), magnetisation(beta)], abs=1e-8)
    assert set(line.branches) == {"up", "down"}


def test_one_critical_point_at_beta_one_where_all_lines_end(result) -> None:
    (critical,) = result.critical_points
    assert np.allclose(critical.point, (1.0, 0.0), atol=1e-8)
    assert len(critical.lines) == 3


def test_spinodals_agree_with_a_grid_of_solution_counts(result) -> None:
    """Count solutions of m = tanh(β(m + h)) by sign changes on a fine m grid, on an h grid around the line."""
    ms = np.linspace(-1, 1, 40_001)
    h_step = 2e-4
    for line in result.of_kind("fold"):
        pts = line.array()
        for beta, h in pts[pts[:, 0] > 1.2][:: max(1, len(pts) // 5)]:
            hs = h + h_step * np.arange(-5, 6)
            counts = [int(np.sum(np.diff(np.sign(ms - np.tanh(beta * (ms + g)))) != 0)) for g in hs]
            change = np.nonzero(np.diff(counts))[0]
            assert len(change) == 1
            assert hs[change[0]] - 1e-12 <= h <= hs[change[0] + 1] + 1e-12


def test_pitchfork_at_zero_field_and_both_branches_started() -> None:
    """At h = 0 the paramagnet m = 0 meets a supercritical pitchfork at β = 1; ±m start from its normal form."""
    base = curie_weiss_field()
    problem = Problem(
        residual=lambda x, beta: base.F(x, np.array([beta, 0.0])),
        dim=1,
        stability=lambda x, beta: base.stability(x, np.array([beta, 0.0])),  # type: ignore[misc]
        kind="saddle",
    )
    (switch,) = find_bifurcations(problem, np.array([0.0]), 0.6, (0.6, 2.0))
    bp = switch.point
    assert bp.type == "pitchfork" and bp.criticality == "supercritical"
    assert bp.parameter == pytest.approx(1.0, abs=1e-10)
    assert bp.coefficients.a == pytest.approx(0.0, abs=1e-8)
    # m − tanh(βm): F_mβ = −1, F_mmm = 2β³ = 2 at the point; the branch is β = 1 + m²/3.
    assert abs(bp.coefficients.b11) == pytest.approx(1.0, rel=1e-7)
    assert bp.coefficients.c * np.sign(-bp.coefficients.b11) == pytest.approx(2.0, rel=1e-6)
    new = [s for s in switch.starts if s.bifurcating]
    assert sorted(np.sign(s.x[0]) for s in new) == [-1.0, 1.0]
    for start in new:
        assert start.parameter == pytest.approx(1 + start.x[0] ** 2 / 3, rel=1e-6)
        curve = trace_branch(problem, start.x, start.parameter, (0.6, 2.0), tangent=start.tangent, both_ways=False)
        assert curve.ends[0] is None and curve.ends[1].kind == "domain" and curve.points[-1].p == pytest.approx(2.0)
        for q in curve.points:
            (m,), beta = q.x, q.p
            if beta > 1.05:
                assert m == pytest.approx(np.sign(start.x[0]) * magnetisation(beta), abs=1e-8)
