"""The scan's roots, polished by Newton's method in their bracket, are brentq's roots on the exact residual."""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

from solvers.theories.kernel_renormalization.model import Model
from solvers.theories.kernel_renormalization.problem import KernelRenormalizationProblem
from solvers.theories.kernel_renormalization.scalar_action import ScalarAction
from tests.theories.test_kernel_renormalization_common import make_spec


def test_newton_in_the_bracket_finds_brentqs_root() -> None:
    spec = make_spec({"kind": "teacher", "P": 300, "P_test": 5, "N0": 30, "seed": 2}, N1=40)
    kp = KernelRenormalizationProblem(Model(spec), "T")
    checked = 0
    for T in np.geomspace(1e-5, 1e3, 60):
        act = kp.action(float(T))
        for s in act.stationary_points():
            h = lambda x, act=act: float(act.symmetric_residual(x))  # noqa: E731
            ref = brentq(h, s - 0.02, s + 0.02, xtol=1e-15, rtol=4 * np.finfo(float).eps)
            assert abs(s - ref) <= 1e-14 + 1e-15 * abs(ref)
            checked += 1
    assert checked >= 60


def test_a_newton_step_out_of_the_bracket_falls_back_to_the_bracketed_search() -> None:
    """A residual on which Newton from the secant point does not settle in its few steps: h(s) = s³ − 0.001 on
    [−1, 2] (the iterates creep in from the negative side), through the action's own polishing."""
    act = ScalarAction(np.ones(3), np.zeros(3), 1.0, 10.0, 1)
    cube = lambda s: (s**3 - 1e-3, 3 * s * s)  # noqa: E731
    object.__setattr__(act, "_h_and_slope", cube)
    searched = []
    bracketed = act._bracketed_root
    object.__setattr__(act, "_bracketed_root", lambda a, b: searched.append((a, b)) or bracketed(a, b))
    root = act._root_between(-1.0, 2.0, cube(-1.0)[0], cube(2.0)[0])
    assert searched == [(-1.0, 2.0)]
    assert abs(root - 0.1) <= 1e-14
