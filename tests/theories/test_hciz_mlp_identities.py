"""Exact identities of the HCIZ saddle point: stationarity of f_RS, I-MMSE relations, Nishimori, limits.

Independent references: finite differences of the free entropy written as a function of all order
parameters (its stationary points must be the fixed points the solver returns); the I-MMSE relations of
the Gaussian output channel, dMI/d(1/Δ) = (α/2γ)·Δε/(Δ+ε) and dMI/dα = ln(1 + ε/Δ)/(2γ), which hold only
if the reported ε and f belong to a stationary point; the α → 0 and α → ∞ limits of the universal branch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from solvers.core.newton import fd_jacobian
from solvers.core.options import SolverOptions
from solvers.core.solve import solve_at
from solvers.theories import get
from solvers.theories.hciz_mlp.models import deep_model, shallow_model
from tests.payloads import solve_json

THEORY = get("hciz_mlp")
OPTIONS = SolverOptions()


def spec_of(**kw: Any):
    return THEORY.spec_model.model_validate({"theory": "hciz_mlp", **kw})


def branches(spec) -> dict[str, dict]:
    problem = THEORY.problem(spec, None, OPTIONS)
    from solvers.core.catalogue import solve_catalogue

    cat = solve_catalogue(problem, 0.0, OPTIONS)
    return {b.name: {"x": b.x, "stable": b.stable, "fe": b.free_entropy} for b in cat.branches if b.converged}


CASES = [
    dict(activation="relu", gamma=0.5, alpha=3.0, Delta=0.1),
    dict(activation="relu", gamma=0.5, alpha=1.2, Delta=0.1, readout="four_point", weight_prior="rademacher"),
    dict(activation="erf", gamma=0.5, alpha=5.0, Delta=0.1, readout="gaussian"),
]


@pytest.mark.parametrize("case", CASES)
def test_analytic_jacobian_matches_finite_differences(case) -> None:
    spec = spec_of(**case)
    model = shallow_model(spec, 16)
    for b in branches(spec).values():
        J = model.jacobian(b["x"], spec.alpha)
        Jf = fd_jacobian(lambda y: model.fixed_point(y, spec.alpha), b["x"])
        # At the universal solution (y = 0, the edge of the domain) the odd continuation of the map is
        # C¹ but not C², so central differences are O(h) accurate there rather than O(h²).
        tol = 3e-5 if float(np.max(np.abs(model.overlaps(b["x"])))) == 0.0 else 1e-6
        assert np.max(np.abs(J - Jf)) < tol * max(1.0, float(np.max(np.abs(Jf))))


@pytest.mark.parametrize("case", CASES[:2])
def test_free_entropy_is_stationary(case) -> None:
    """∂f_RS/∂(Q, Q̂, R_2, R̂_2) = 0 at every branch, and f_RS there is the free entropy reported."""
    spec = spec_of(**case)
    model = shallow_model(spec, 16)
    alpha = spec.alpha
    found = branches(spec)
    assert len(found) >= 2
    for b in found.values():
        st = model.state(b["x"], alpha)
        z0 = np.concatenate([st.Q, st.Q_hat, [st.R2, st.R2_hat]])
        J = st.Q.size

        def f(z: np.ndarray, J: int = J) -> float:
            return model.free_entropy_full(z[:J], z[J : 2 * J], z[2 * J], z[2 * J + 1], alpha)

        assert f(z0) == pytest.approx(b["fe"], abs=1e-9)
        h = 1e-5
        for i in range(z0.size):
            e = np.zeros_like(z0)
            e[i] = h * max(1.0, abs(z0[i]))
            grad = (f(z0 + e) - f(z0 - e)) / (2 * e[i])
            # a single term of f varies at O(1) per unit of each variable; the sum must cancel
            assert abs(grad) < 1e-6, (i, grad)


def test_deep_free_entropy_is_stationary() -> None:
    act = {"name": "tanh2", "remove_linear": True, "unit_variance": True}
    spec = spec_of(activation=act, gamma=[1.0, 0.7, 1.3], depth=3, alpha=8.0, Delta=0.1, readout="four_point")
    found = branches(spec)
    model = deep_model(spec, 16)
    spec_branch = next(b for n, b in found.items() if n.startswith("specialized") and b["stable"])
    st = model.state(spec_branch["x"], spec.alpha)
    Q = np.concatenate([st.Q_inner, st.Q_last])
    Qh = np.concatenate([st.Q_hat_inner, st.Q_hat_last])
    z0 = np.concatenate([Q, Qh])
    n = Q.size

    def f(z: np.ndarray) -> float:
        return model.free_entropy_full(z[:n], z[n:], spec.alpha)

    assert f(z0) == pytest.approx(spec_branch["fe"], abs=1e-9)
    for i in range(z0.size):
        e = np.zeros_like(z0)
        if i < n:  # Q sits within 1e-3 of 1 here: keep the probe inside (0, 1)
            e[i] = min(1e-6, 0.1 * (1 - z0[i]))
            partner = z0[n + i]  # ∂(Q Q̂/2)/∂Q: the size of one term of the derivative
        else:
            e[i] = 1e-4 * max(1.0, abs(z0[i]))
            partner = z0[i - n]
        grad = (f(z0 + e) - f(z0 - e)) / (2 * e[i])
        assert abs(grad) < 1e-6 * (1.0 + abs(partner)), (i, grad, partner)


def _follow(spec, parameter: str, value: float, x0: np.ndarray):
    problem = THEORY.problem(spec, parameter, OPTIONS)
    res = solve_at(problem, value, x0, SolverOptions(method="newton"))
    assert res.converged
    return res.x, problem.report(res.x, value).observables


@pytest.mark.parametrize("case", [CASES[0], dict(activation="tanh", gamma=0.5, alpha=5.0, Delta=0.1)])
def test_i_mmse_relations_of_the_output_channel(case) -> None:
    spec = spec_of(**case)
    for name, b in branches(spec).items():
        if not b["stable"]:
            continue
        obs = THEORY.problem(spec, None, OPTIONS).report(b["x"], 0.0).observables
        eps, D, a, g = obs["generalization_error"], spec.Delta, spec.alpha, spec.gamma
        h = 1e-4 * D
        lo = _follow(spec, "Delta", D - h, b["x"])[1]["mutual_information"]
        hi = _follow(spec, "Delta", D + h, b["x"])[1]["mutual_information"]
        assert (hi - lo) / (2 * h) == pytest.approx(-(a / (2 * g)) * eps / (D * (D + eps)), rel=1e-5), name
        h = 1e-4 * a
        lo = _follow(spec, "alpha", a - h, b["x"])[1]["mutual_information"]
        hi = _follow(spec, "alpha", a + h, b["x"])[1]["mutual_information"]
        assert (hi - lo) / (2 * h) == pytest.approx(np.log1p(eps / D) / (2 * g), rel=1e-5), name


def test_nishimori_and_bounds_on_every_branch() -> None:
    spec = spec_of(**CASES[1])
    model = shallow_model(spec, 16)
    for b in branches(spec).values():
        st = model.state(b["x"], spec.alpha)
        obs = THEORY.problem(spec, None, OPTIONS).report(b["x"], 0.0).observables
        # overlaps are second moments of posterior means: 0 ≤ Q ≤ 1, and the matrix overlap can never be
        # below what the neuron overlaps already imply, R_2 − γ v̄² = m_S(τ + R̂_2) ≥ m_S(τ) = E[v² Q²]
        assert np.all((st.Q >= 0) & (st.Q <= 1))
        assert st.R2 - spec.gamma * model.readout.mean**2 >= st.T - 1e-12
        assert 0.0 <= obs["generalization_error"] <= obs["K_d"]
        assert obs["mutual_information"] >= 0.0


def test_universal_branch_limits() -> None:
    relu = dict(activation="relu", gamma=0.5, Delta=0.1)
    mu2sq, g1 = 1.0 / (2 * np.pi), 0.25 - 3.0 / (4 * np.pi)
    # α → 0⁺: the linear part (and the known mean of S for v = 1) is learned at once, nothing else
    tiny = solve_json(THEORY, spec_of(alpha=1e-7, **relu), OPTIONS)["observables"]["generalization_error"]
    assert tiny == pytest.approx(mu2sq / 2 + g1, rel=1e-5)
    # α → ∞ (γ < 1): ε − g(1) ≈ (2γ − γ²)(Δ + g(1))/(2α)
    for alpha in (2e3, 2e4):
        res = solve_json(THEORY, spec_of(alpha=alpha, **relu), OPTIONS)
        uni = next(b for b in res["branches"] if b["name"] == "universal")
        eps = uni["observables"]["generalization_error"]
        assert alpha * (eps - g1) == pytest.approx(0.75 * (0.1 + g1) / 2, rel=20.0 / alpha)


def test_universal_branch_does_not_depend_on_the_weight_prior() -> None:
    eps = []
    for prior in ("gaussian", "rademacher"):
        spec = spec_of(activation="relu", gamma=0.5, alpha=0.2, Delta=0.1, weight_prior=prior)
        res = solve_json(THEORY, spec, OPTIONS)
        eps.append(next(b for b in res["branches"] if b["name"] == "universal")["observables"]["generalization_error"])
    assert eps[0] == pytest.approx(eps[1], rel=1e-12)


def test_hciz_margin_predicts_the_instability_of_the_universal_branch() -> None:
    """Q = 0 loses stability exactly where 1 − v_max² m_S(R̂_2)/γ changes sign (HCIZ term, q'(0) = 1)."""
    for alpha, stable in ((0.25, True), (0.5, False)):
        res = solve_json(THEORY, spec_of(activation="relu", gamma=0.5, alpha=alpha, Delta=0.03), OPTIONS)
        uni = next(b for b in res["branches"] if b["name"] == "universal")
        assert uni["stable"] is stable
        assert (uni["observables"]["hciz_margin"] > 0) is stable
