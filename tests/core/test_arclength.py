"""The one arclength iterator (init / step / terminate) on curves known in closed form."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.core import arclength
from solvers.core.arclength import Box, Monitor
from solvers.core.corrector import Limits, correct, scaled_jacobian
from solvers.core.options import ArclengthOptions


class Circle:
    """G(x, p) = x² + p² − r²: the circle of radius r, folds in p at (0, ±r)."""

    def __init__(self, r: float = 1.0):
        self.r = r
        self.scale = np.ones(2)
        self.lam_index = (1,)
        self.accepted: list[np.ndarray] = []

    def residual(self, z: np.ndarray) -> np.ndarray:
        return np.array([z[0] ** 2 + z[1] ** 2 - self.r**2])

    def jacobian(self, z: np.ndarray) -> np.ndarray:
        return np.array([[2 * z[0], 2 * z[1]]])

    def accept(self, z: np.ndarray) -> None:
        self.accepted.append(np.array(z))


def _limits(**kw: object) -> Limits:
    return Limits(ArclengthOptions(), lambda z: 1e-12, 2000, **kw)  # type: ignore[arg-type]


WIDE = Box(np.array([-10.0]), np.array([10.0]))
FOLD = Monitor("fold", lambda z, t: float(t[1]))


@pytest.mark.parametrize("exact", [False, True])
def test_the_circle_closes_and_both_folds_are_located_on_it(exact: bool) -> None:
    circle = Circle(2.0)
    path = arclength.run(circle, np.array([2.0, 0.0]), np.array([0.0, 1.0]), _limits(exact=exact), box=WIDE,
                         monitors=[FOLD])
    assert path.end == "closed"
    for z in path.z:
        assert z[0] ** 2 + z[1] ** 2 == pytest.approx(4.0, abs=1e-11)
    folds = sorted(float(f.z[1]) for f in path.located if f.name == "fold")
    assert folds == pytest.approx([-2.0, 2.0], abs=1e-9)
    for f in path.located:
        assert f.refined and abs(float(f.z[0])) < 1e-5  # x = 0 at the fold, a square root of p's precision
        assert 0 <= f.index < len(path.z) - 1
    assert len(circle.accepted) == len(path.z)  # every accepted point, the first included


def test_the_protocol_steps_one_attempt_at_a_time_and_says_why_it_ended() -> None:
    state = arclength.init(Circle(), np.array([1.0, 0.0]), np.array([0.0, 1.0]), _limits(), box=WIDE)
    assert arclength.terminate(state) == (False, "")
    arclength.step(state)
    assert len(state.path.z) == 2 and state.path.z[1][1] > 0  # moved along the tangent's direction
    capped = arclength.init(Circle(), np.array([1.0, 0.0]), np.array([0.0, 1.0]),
                            Limits(ArclengthOptions(), lambda z: 1e-12, 3), box=WIDE)
    while not arclength.terminate(capped)[0]:
        arclength.step(capped)
    assert arclength.terminate(capped) == (True, "max_points") and len(capped.path.z) == 3


def test_a_curve_leaving_the_box_ends_on_its_edge_or_past_it() -> None:
    box = Box(np.array([-0.5]), np.array([0.5]))
    on_edge = arclength.run(Circle(), np.array([1.0, 0.0]), np.array([0.0, 1.0]), _limits(), box=box)
    assert on_edge.end == "domain" and on_edge.end_precision == 0.0
    assert on_edge.z[-1][1] == 0.5 and on_edge.z[-1][0] == pytest.approx(np.sqrt(0.75), abs=1e-11)
    past = arclength.run(Circle(), np.array([1.0, 0.0]), np.array([0.0, 1.0]), _limits(),
                         box=Box(box.lo, box.hi, exact=False))
    assert past.end == "domain" and 0.5 < past.z[-1][1] < 0.5 + ArclengthOptions().ds_max
    assert past.z[-1][0] ** 2 + past.z[-1][1] ** 2 == pytest.approx(1.0, abs=1e-11)


def test_a_stop_monitor_ends_the_curve_where_it_vanishes() -> None:
    # the point of the unit circle with x = p (at 45°) from (1, 0) upwards
    diagonal = Monitor("diagonal", lambda z, t: float(z[0] - z[1]), stop=True)
    path = arclength.run(Circle(), np.array([1.0, 0.0]), np.array([0.0, 1.0]), _limits(), box=WIDE,
                         monitors=[diagonal])
    assert path.end == "diagonal"
    assert path.z[-1] == pytest.approx([np.sqrt(0.5), np.sqrt(0.5)], abs=1e-10)


def test_a_residual_that_cannot_be_evaluated_ends_the_curve_as_lost() -> None:
    class Half(Circle):
        def residual(self, z: np.ndarray) -> np.ndarray:
            return np.array([np.nan]) if z[1] > 0.5 else super().residual(z)

    state = arclength.init(Half(), np.array([1.0, 0.0]), np.array([0.0, 1.0]), _limits(), box=WIDE)
    while not arclength.terminate(state)[0]:
        arclength.step(state)
    assert state.path.end == "lost"
    assert state.failure is not None and state.failure.left_domain
    assert 0.5 - 1e-5 < state.path.z[-1][1] <= 0.5


def test_the_corrector_reaches_the_curve_on_the_hyperplane() -> None:
    circle, limits = Circle(), _limits()
    u0, t = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    J = scaled_jacobian(circle, u0)
    for secant in (False, True):
        c = correct(circle, limits, u0 + 0.1 * t, t, J, secant=secant)
        assert c.u is not None and c.u[1] == pytest.approx(0.1, abs=1e-14)  # on τ · (u − u_pred) = 0
        assert c.u[0] == pytest.approx(np.sqrt(1 - 0.01), abs=1e-12)
