"""Spinodal and first-order transition located by the engine's sweep, against an independent computation.

For an odd activation (μ2 = 0) with v = 1 and Gaussian weights the theory reduces to one equation,
Q = Q̂/(1 + Q̂), Q̂ = (α/γ) g'(Q)/(Δ + g(1) − g(Q)), i.e. α(Q) = γ Q (Δ + g(1) − g(Q)) / ((1 − Q) g'(Q)),
with free entropy φ(Q) = −½ ln(Δ + g(1) − g(Q)) + (γ/2α)[Q + ln(1 − Q)] (conjugate eliminated, constants
dropped). The spinodal is min_Q α(Q); the first-order point is where φ on the stable branch equals φ(0).
Here g is evaluated by a 2-D Gauss–Hermite rule on tanh itself — not by the Mehler series the theory uses.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq, minimize_scalar

from clients.tables import branch_of
from solvers.core.options import SolverOptions
from solvers.numerics.hermite import gauss_hermite
from solvers.theories import get
from tests.payloads import sweep_json

THEORY = get("hciz_mlp")
OPTIONS = SolverOptions()
GAMMA, DELTA = 0.5, 0.1

_Z, _W = gauss_hermite(160)
_MU1 = float(_W @ (_Z * np.tanh(_Z)))


def _pair(f, q: float) -> float:
    up = q * _Z[:, None] + math.sqrt(1 - q * q) * _Z[None, :]
    return float(_W @ (f(_Z[:, None]) * f(up)) @ _W)


def g(q: float) -> float:
    return _pair(np.tanh, q) - _MU1**2 * q


def dg(q: float) -> float:  # d/dq E[f(u) f(u')] = E[f'(u) f'(u')]
    return _pair(lambda x: 1 - np.tanh(x) ** 2, q) - _MU1**2


G1 = g(1 - 1e-15)


def alpha_of(q: float) -> float:
    return GAMMA * q * (DELTA + G1 - g(q)) / ((1 - q) * dg(q))


def phi(q: float, alpha: float) -> float:
    return -0.5 * math.log(DELTA + G1 - g(q)) + GAMMA / (2 * alpha) * (q + math.log1p(-q))


@pytest.fixture(scope="module")
def reference() -> tuple[float, float]:
    fold = minimize_scalar(alpha_of, bounds=(0.05, 0.99), method="bounded", options={"xatol": 1e-12})
    q_sp, a_sp = float(fold.x), float(fold.fun)
    q_e = brentq(lambda q: phi(q, alpha_of(q)) - phi(0.0, alpha_of(q)), q_sp + 1e-6, 0.999, xtol=1e-14)
    return a_sp, alpha_of(q_e)


@pytest.fixture(scope="module")
def sweep() -> dict:
    spec = THEORY.spec_model.model_validate(
        {"theory": "hciz_mlp", "activation": "tanh", "gamma": GAMMA, "alpha": 1.0, "Delta": DELTA}
    )
    return sweep_json(THEORY, spec, "alpha", list(np.linspace(2.0, 6.0, 41)), "continuation", OPTIONS)


def test_spinodal_and_first_order_point(reference, sweep) -> None:
    a_sp, a_e = reference
    kinds = {t["kind"]: t for t in sweep["transitions"]}
    assert set(kinds) == {"spinodal", "first_order"}
    assert kinds["spinodal"]["parameter"] == pytest.approx(a_sp, rel=1e-7)
    assert kinds["first_order"]["parameter"] == pytest.approx(a_e, rel=1e-7)
    assert sorted(kinds["first_order"]["branches"]) == ["specialized", "universal"]
    assert a_sp < a_e


def test_equilibrium_switches_at_the_transition(reference, sweep) -> None:
    _, a_e = reference
    for pt in sweep["points"]:
        names = [b["name"] for b in pt["branches"]]
        assert pt["equilibrium"] == ("specialized" if pt["parameter"] > a_e else "universal"), pt["parameter"]
        if "specialized" in names:  # every stable specialised point has its barrier partner
            assert any(n.endswith("_unstable") for n in names)
        for b in pt["branches"]:
            assert b["stable"] is (not b["name"].endswith("_unstable"))


def test_learning_curve_values(sweep) -> None:
    """On the specialised branch the solver's ε solves the 1-D equation of the module docstring."""
    for pt in sweep["points"]:
        for b in (branch_of(pt, b["name"]) for b in pt["branches"]):
            assert b is not None
            Q = b["order_parameters"]["Q"]
            if b["name"] == "universal":
                assert Q == 0.0 and b["observables"]["generalization_error"] == pytest.approx(G1, rel=1e-10)
            else:
                assert alpha_of(Q) == pytest.approx(pt["parameter"], rel=1e-8)
                assert b["observables"]["generalization_error"] == pytest.approx(G1 - g(Q), rel=1e-8)


def test_delta_and_gamma_sweeps_find_the_spinodal() -> None:
    """At fixed α the specialised branch dies at a fold when the noise (or the width) grows."""
    spec = THEORY.spec_model.model_validate(
        {"theory": "hciz_mlp", "activation": "tanh", "gamma": GAMMA, "alpha": 6.0, "Delta": DELTA}
    )
    res = sweep_json(THEORY, spec, "Delta", list(np.linspace(0.02, 0.4, 25)), "continuation", OPTIONS)
    folds = [t for t in res["transitions"] if t["kind"] == "spinodal"]
    assert len(folds) == 1
    d_sp = folds[0]["parameter"]
    # independent: at the fold α(Q; Δ) has a minimum equal to 6 (Δ enters α(Q) linearly through D = Δ + ε)
    def a_min(delta: float) -> float:
        f = lambda q: GAMMA * q * (delta + G1 - g(q)) / ((1 - q) * dg(q))  # noqa: E731
        return float(minimize_scalar(f, bounds=(0.05, 0.99), method="bounded", options={"xatol": 1e-12}).fun)

    assert a_min(d_sp) == pytest.approx(6.0, rel=1e-6)
    res = sweep_json(THEORY, spec, "gamma", list(np.linspace(0.3, 1.5, 25)), "continuation", OPTIONS)
    assert any(t["kind"] == "spinodal" for t in res["transitions"])


def test_curves_meet_at_the_spinodal(reference, sweep) -> None:
    """The specialised and unstable branches are one traced curve, turning at the spinodal: the fold is a row
    of both branches, at the independent α_sp and its Q; every row of the curve solves α(Q) = α."""
    a_sp, _ = reference
    (curve,) = [c for c in sweep["curves"] if "specialized" in c["branches"]]
    (unstable,) = [b for b in curve["branches"] if b.endswith("_unstable")]
    (fold,) = [m for m in curve["special"] if m["type"] == "fold"]
    i = fold["index"]
    assert curve["parameter"][i] == curve["parameter"][i + 1] == pytest.approx(a_sp, rel=1e-7)
    assert min(curve["parameter"]) == curve["parameter"][i]
    assert {curve["branch"][i], curve["branch"][i + 1]} == {"specialized", unstable}
    assert curve["stable"][i] != curve["stable"][i + 1]
    assert curve["branch"][i - 1] == curve["branch"][i] and curve["branch"][i + 1] == curve["branch"][i + 2]
    assert curve["parameter"][i - 1] > a_sp and curve["parameter"][i + 2] > a_sp
    for Q, alpha in zip(curve["order_parameters"]["Q"], curve["parameter"], strict=True):
        assert alpha_of(Q) == pytest.approx(alpha, rel=1e-8)


def test_a_deflated_sweep_from_the_uninformative_start_alone_finds_both_transitions(reference) -> None:
    """The specialised pair is disconnected from the universal branch (Q ≡ 0): continuation from the uninformative
    start alone traces only the universal branch; deflated continuation finds the pair and both transitions."""
    a_sp, a_e = reference
    spec = THEORY.spec_model.model_validate(
        {"theory": "hciz_mlp", "activation": "tanh", "gamma": GAMMA, "alpha": 1.0, "Delta": DELTA}
    )
    values = list(np.linspace(2.0, 6.0, 11))
    alone = SolverOptions.model_validate({"search": {"starts": ["uninformative"], "budget": 3}})
    plain = sweep_json(THEORY, spec, "alpha", values, "continuation", alone)
    assert [c["name"] for c in plain["curves"]] == ["universal"] and plain["transitions"] == []
    deflated = sweep_json(THEORY, spec, "alpha", values, "deflated", alone)
    kinds = {t["kind"]: t["parameter"] for t in deflated["transitions"]}
    assert kinds["spinodal"] == pytest.approx(a_sp, rel=1e-7)
    assert kinds["first_order"] == pytest.approx(a_e, rel=1e-7)
    found = next(c for c in deflated["curves"] if c["name"] != "universal")
    assert found["message"].startswith("found by deflation at p = ")
