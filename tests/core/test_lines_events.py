"""Event lines: zeros of a named indicator, against a closed form and a brute-force scan."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.core.lines import trace_boundaries, trace_event_line
from solvers.core.problem import Event, Problem
from tests.core.line_problems import event_toy

BOX = ((-1.0, 1.0), (-3.0, 3.0))


def test_event_line_is_the_closed_form_curve() -> None:
    res = trace_boundaries(event_toy(), *BOX)
    (line,) = res.lines
    assert line.kind == "event" and line.name == "x_equals_lambda1"
    pts = line.array()
    assert np.max(np.abs(pts[:, 1] - (pts[:, 0] ** 3 + pts[:, 0]))) <= 1e-10
    assert [e.kind for e in line.ends] == ["domain", "domain"]
    assert sorted(e.point[0] for e in line.ends) == pytest.approx([-1.0, 1.0], abs=1e-12)


def test_event_line_agrees_with_a_brute_force_scan() -> None:
    """At the line's λ1 values, x(λ2) − λ1 from the real root of x³ + x = λ2 changes sign within one grid step."""
    (line,) = trace_boundaries(event_toy(), *BOX).lines
    h = 1e-4
    for lam1, lam2 in line.array()[::4]:
        grid = lam2 + h * np.arange(-10, 11)
        x = np.array([next(r.real for r in np.roots([1, 0, 1, -g]) if abs(r.imag) < 1e-9) for g in grid])
        k = np.nonzero(np.diff(np.sign(x - lam1)))[0]
        assert len(k) == 1 and grid[k[0]] - 1e-12 <= lam2 <= grid[k[0] + 1] + 1e-12


def test_an_event_line_ends_where_its_state_reaches_a_fold() -> None:
    """x² = λ2 with event x = λ1: the line λ2 = λ1² runs into the fold x = 0 at the origin."""
    problem = Problem(
        residual=lambda x, lam: x**2 - lam[1], dim=1, parameters=("lambda1", "lambda2"),
        events=(Event("x_equals_lambda1", lambda x, lam: float(x[0] - lam[0])),),
    )
    line = trace_event_line(problem, "x_equals_lambda1", np.array([0.5]), [0.5, 0.25], (-1.0, 1.0), (-1.0, 1.0))
    pts = line.array()
    assert np.max(np.abs(pts[:, 1] - pts[:, 0] ** 2)) <= 1e-10
    ends = {e.kind: e for e in line.ends}
    assert set(ends) == {"spinodal", "domain"}
    assert np.allclose(ends["spinodal"].point, (0.0, 0.0), atol=1e-10)
    assert ends["domain"].point == pytest.approx((1.0, 1.0), abs=1e-9)  # the corner of the box
