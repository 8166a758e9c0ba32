"""``rubin_cavity`` self-consistent mode: the population theory at D → ∞ and at finite D.

Checks: the GP limit and the no-learning limit in closed form, the GFL closed form of the note,
dependence on (P, T) only through P/T, invariance of the transition under the paper's (α, β)
scaling, convergence of the finite-D solution to D → ∞, the paper's transition (σ² ≈ 0.18, where
u = 30.2) with the equal-depth condition re-checked by brute force, analytic Jacobians against
finite differences, the closure re-checked by adaptive quadrature, and the learning-curve report.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import TypeAdapter, ValidationError
from scipy.integrate import quad
from scipy.optimize import brentq, minimize_scalar

from solvers.core.newton import fd_jacobian
from solvers.core.options import SolverOptions
from solvers.theories import get
from solvers.theories.rubin_cavity.common.network import Network, network_of
from solvers.theories.rubin_cavity.self_consistent.quadrature import QuadratureRule, panel_count
from solvers.theories.rubin_cavity.self_consistent.quadrature import fixed_point as fd_map
from solvers.theories.rubin_cavity.self_consistent.quadrature import jacobian as fd_jac
from solvers.theories.rubin_cavity.self_consistent.saddle import evaluate
from solvers.theories.rubin_cavity.self_consistent.saddle import jacobian as saddle_jac
from tests.payloads import solve_json, sweep_json

THEORY = get("rubin_cavity")
SPEC = TypeAdapter(THEORY.spec_model)
PAPER = {"sigma_w2": 0.5, "epsilon": -0.3, "D": 150, "N": 700, "P": 3000, "s_a2": 8 / 700**2}


def spec(**kw):
    return SPEC.validate_python({"theory": "rubin_cavity", "mode": "self_consistent", **kw})


def transitions(res: dict, kind: str, branches: set[str] | None = None) -> list[dict]:
    return [t for t in res["transitions"] if t["kind"] == kind and (branches is None or set(t["branches"]) == branches)]


def blog_potential(rho: float, u: float, b: float, c: float, sw: float = 0.5) -> float:
    h = 1 + 2 * (sw + rho**2)
    return rho**2 / (2 * sw) - (2 * u / math.pi) * rho**2 / h * (b - 2 * c * rho**2 / h) ** 2


def gfl_b(u: float, eta: float) -> float:
    """Note §4.2 at σ_w² = 0.5: b = 1/(1 + η/(π − u b²)), the root with π − u b² > 0."""
    hi = min(1.0, math.sqrt(math.pi / u) * (1 - 1e-14)) if u > 0 else 1.0
    return brentq(lambda b: b * (1 + eta / (math.pi - u * b * b)) - 1, 1e-12, hi, xtol=1e-15)


def test_gp_limit() -> None:
    # u → 0 at fixed η = P N s_a2/(T D) = 1: N huge, s_a2 = η T D/(P N).
    eta, sw, eps = 1.0, 0.7, -0.4
    s = spec(sigma_w2=sw, epsilon=eps, D=150, N=1e12, P=3000, T=1.0, s_a2=eta * 150 / (3000 * 1e12))
    res = solve_json(THEORY, s, SolverOptions())
    assert res["observables"]["u"] < 1e-5
    b_gp = 1 / (1 + eta * (4 / math.pi) * sw / (1 + 2 * sw))
    assert res["order_parameters"]["b"] == pytest.approx(b_gp, rel=1e-5)
    assert res["order_parameters"]["c"] == pytest.approx(eps, abs=1e-12)
    # Finite D: c = ε up to the center's O(1/D) cubic moment, b up to O(1/D).
    fd = res["observables"]["finite_D"]
    assert fd["b"] == pytest.approx(b_gp, abs=3 / 150)
    assert fd["c"] == pytest.approx(eps, abs=3 / 150)
    assert res["observables"]["phase"] == "GFL"


def test_nothing_learned_leaves_b_one_and_c_epsilon() -> None:
    res = solve_json(THEORY, spec(s_a2=1e-16), SolverOptions())
    assert res["order_parameters"]["b"] == pytest.approx(1.0, abs=1e-9)
    assert res["order_parameters"]["c"] == pytest.approx(-0.3, abs=1e-12)
    assert res["observables"]["finite_D"]["b"] == pytest.approx(1.0, abs=1e-9)
    assert res["observables"]["test_mse"] == pytest.approx(1 + 6 * 0.09, rel=1e-8)


@pytest.mark.parametrize("T", [0.2, 0.25, 0.3])
def test_gfl_branch_matches_the_closed_form(T: float) -> None:
    res = solve_json(THEORY, spec(**PAPER, T=T), SolverOptions())
    obs, op = res["observables"], res["order_parameters"]
    assert obs["phase"] == "GFL" and op["aligned_weight"] == 0.0
    b = gfl_b(obs["u"], obs["eta"])
    assert op["b"] == pytest.approx(b, rel=1e-10)
    assert op["c"] == -0.3
    # D ⟨Φ²⟩ = [1/σ_w² − (4u/π) b²/(1 + 2σ_w²)]⁻¹ = π/(2(π − u b²)) at σ_w² = 0.5.
    assert op["R"] * 150 == pytest.approx(math.pi / (2 * (math.pi - obs["u"] * b * b)), rel=1e-10)


def test_dependence_on_P_and_T_only_through_their_ratio() -> None:
    for scaling in ("mean_field", "standard"):
        a = solve_json(THEORY, spec(**PAPER, T=0.17, scaling=scaling), SolverOptions())
        base = {**PAPER, "P": 3000 * 3.7}
        b = solve_json(THEORY, spec(**base, T=0.17 * 3.7, scaling=scaling), SolverOptions())
        for key in ("b", "c", "aligned_weight", "R"):
            assert b["order_parameters"][key] == pytest.approx(a["order_parameters"][key], rel=1e-9, abs=1e-12)
        for key in ("b", "c", "R"):
            assert b["observables"]["finite_D"][key] == pytest.approx(a["observables"]["finite_D"][key], rel=1e-8)


def _scaled(alpha: float, beta: float, T: float) -> dict:
    """The paper's exactness limit: N → βN, d → √β d, σ_a² → σ_a²/√β (s_a2 → s_a2/β^1.5), σ² → (α/β)σ², n → αn."""
    return {
        **PAPER,
        "N": 700 * beta,
        "D": 150 * math.sqrt(beta),
        "s_a2": PAPER["s_a2"] / beta**1.5,
        "T": T * alpha / beta,
        "P": 3000 * alpha,
    }


def test_alpha_beta_scaling_invariance() -> None:
    ref = sweep_json(
        THEORY, spec(**PAPER, T=0.18), "T", list(np.linspace(0.15, 0.21, 13)), "continuation", SolverOptions()
    )
    (onset,) = transitions(ref, "first_order", {"GFL", "GMFL-I"})
    for alpha, beta in ((2.0, 4.0), (0.5, 1 / 8)):
        s = spec(**_scaled(alpha, beta, 0.18))
        res = sweep_json(
            THEORY, s, "T", list(np.linspace(0.15, 0.21, 13) * alpha / beta), "continuation", SolverOptions()
        )
        (t,) = transitions(res, "first_order", {"GFL", "GMFL-I"})
        # u and η are invariant, and so is the D → ∞ onset (ω = 0 there): T_c scales exactly like T.
        assert t["state"]["u"] == pytest.approx(onset["state"]["u"], rel=1e-9)
        assert t["parameter"] == pytest.approx(onset["parameter"] * alpha / beta, rel=1e-9)
        gfl = solve_json(THEORY, spec(**{**_scaled(alpha, beta, 0.25)}), SolverOptions())["order_parameters"]
        gfl_ref = solve_json(THEORY, spec(**PAPER, T=0.25), SolverOptions())["order_parameters"]
        assert gfl["b"] == pytest.approx(gfl_ref["b"], rel=1e-10)
        # In GMFL-I only the (1 − ω) center factor, ω = O(1/(ηD)), is not invariant.
        mixed = solve_json(THEORY, spec(**_scaled(alpha, beta, 0.15)), SolverOptions())["order_parameters"]
        mixed_ref = solve_json(THEORY, spec(**PAPER, T=0.15), SolverOptions())["order_parameters"]
        assert mixed["b"] == pytest.approx(
            mixed_ref["b"], abs=3 * max(mixed["aligned_weight"], mixed_ref["aligned_weight"])
        )
        assert mixed["b"] != mixed_ref["b"]  # ... and the difference is real, not a skipped branch


@pytest.mark.parametrize("u", [25.0, 40.0])
def test_finite_D_solution_converges_to_the_saddle_point(u: float) -> None:
    errors = []
    for D in (150.0, 1500.0, 15000.0):
        beta = (D / 150) ** 2  # β = α scaling with α = 1 keeps u and η fixed while D grows
        s = spec(**{**PAPER, "D": D, "N": 700 * beta, "s_a2": PAPER["s_a2"] / beta**1.5, "u": u})
        res = solve_json(THEORY, s, SolverOptions())
        fd = res["observables"]["finite_D"]
        assert fd["converged"]
        errors.append(max(abs(fd["b"] - res["order_parameters"]["b"]), abs(fd["c"] - res["order_parameters"]["c"])))
    # O(1/D): each tenfold increase of D shrinks the gap by about ten.
    assert errors[1] < errors[0] / 5 and errors[2] < errors[1] / 5
    assert errors[2] < 5e-4


def test_paper_setting_transition() -> None:
    res = sweep_json(THEORY, spec(**PAPER), "T", list(np.linspace(0.1, 0.3, 41)), "continuation", SolverOptions())
    (onset,) = transitions(res, "first_order", {"GFL", "GMFL-I"})
    assert (onset["type"], onset["event"]) == ("first_order", "aligned_onset")
    u_c, T_c = onset["state"]["u"], onset["parameter"]
    assert u_c == pytest.approx(30.2, rel=0.03)  # paper: u_c ≈ 30.2 "for ε = −0.3"
    assert T_c == pytest.approx(0.18, rel=0.03)  # paper: sharp transition around σ² = 0.18
    # Independent check of the onset: GFL b from the closed form at u_c, then the blog potential with
    # (b, c = ε) has its side well exactly at the depth of the center.
    eta = 3000 * 700 * PAPER["s_a2"] / (T_c * 150)
    b = gfl_b(u_c, eta)
    assert onset["state"]["b"] == pytest.approx(b, rel=1e-9)
    side = minimize_scalar(
        lambda r: blog_potential(r, u_c, b, -0.3), bounds=(0.4, 1.2), method="bounded", options={"xatol": 1e-12}
    )
    assert side.fun == pytest.approx(0.0, abs=1e-10)
    assert onset["state"]["aligned_rho"] == pytest.approx(side.x, abs=1e-5)
    # The side well is born before (at larger T, smaller u) the transition: a spinodal of the metastable well.
    births = [t for t in transitions(res, "spinodal") if t["branches"] == ["aligned"]]
    assert births and all(t["parameter"] > T_c for t in births)
    # Phases along the sweep: GMFL-I below T_c (wells degenerate, 0 < ω < 1), GFL above.
    for pt in res["points"]:
        obs, op = pt["observables"], pt["order_parameters"]
        if pt["parameter"] < T_c - 1e-3:
            assert obs["phase"] == "GMFL-I" and 0 < op["aligned_weight"] < 1
            assert abs(obs["depth_gap"]) < 1e-9
        elif pt["parameter"] > T_c + 1e-3:
            assert obs["phase"] == "GFL" and op["aligned_weight"] == 0
            assert obs["depth_gap"] is None or obs["depth_gap"] > 0


def test_paper_u_c_is_u_at_its_rounded_transition_temperature() -> None:
    """The paper's "u_c ≈ 30.2" is u = n² σ_a²/(σ⁴ d N) = P² s_a2/(T² D) evaluated at its rounded σ² = 0.18."""
    P, D, s_a2 = PAPER["P"], PAPER["D"], PAPER["s_a2"]
    u_018 = P**2 * s_a2 / (0.18**2 * D)  # the formula alone, no solver
    assert u_018 == pytest.approx(30.234, abs=1e-3)
    paper = spec(**PAPER, T=0.18)
    assert network_of(paper).u == pytest.approx(u_018, rel=1e-12)
    assert solve_json(THEORY, paper, SolverOptions())["observables"]["u"] == pytest.approx(u_018, rel=1e-12)
    res = sweep_json(THEORY, paper, "T", list(np.linspace(0.15, 0.21, 13)), "continuation", SolverOptions())
    (onset,) = transitions(res, "first_order", {"GFL", "GMFL-I"})
    T_c = onset["parameter"]
    assert round(T_c, 2) == 0.18  # the solver's transition rounds to the paper's σ² ≈ 0.18 ...
    # ... and its own u_c is u at the unrounded T_c, by the same formula.
    assert onset["state"]["u"] == pytest.approx(P**2 * s_a2 / (T_c**2 * D), rel=1e-12)


def test_u_sweep_agrees_with_the_T_sweep() -> None:
    by_T = sweep_json(THEORY, spec(**PAPER), "T", list(np.linspace(0.15, 0.21, 13)), "continuation", SolverOptions())
    by_u = sweep_json(THEORY, spec(**PAPER), "u", list(np.linspace(25.0, 40.0, 16)), "continuation", SolverOptions())
    (a,) = transitions(by_T, "first_order", {"GFL", "GMFL-I"})
    (b,) = transitions(by_u, "first_order", {"GFL", "GMFL-I"})
    assert b["parameter"] == pytest.approx(a["state"]["u"], rel=1e-8)
    assert by_u["points"][0]["observables"]["u"] == pytest.approx(25.0, rel=1e-12)


def test_p_sweep_reports_sample_complexity() -> None:
    res = sweep_json(
        THEORY, spec(**PAPER, T=0.18), "P", list(np.linspace(1000, 6000, 26)), "continuation", SolverOptions()
    )
    sc = res["sample_complexity"]
    lam3 = 700 * PAPER["s_a2"] * (40 / math.pi) * 0.5**3 / (150**3 * 2**3)  # note §6, per σ_a² = N s_a2
    assert sc["nngp"]["P_cubic_learnable"] == pytest.approx(0.18 / lam3, rel=1e-12)
    P_c = sc["adaptive"]["P_transition"]
    (onset,) = transitions(res, "first_order", {"GFL", "GMFL-I"})
    # u = P² s_a2/(T² D): the onset in P sits at the same u_c as in T.
    assert onset["state"]["u"] == pytest.approx(P_c**2 * PAPER["s_a2"] / (0.18**2 * 150), rel=1e-9)
    assert sc["nngp"]["P_cubic_learnable"] > 1e4 * P_c  # O(D³) against O(D)
    cubic = [pt["observables"]["learned_fraction_cubic"] for pt in res["points"]]
    assert cubic[0] == pytest.approx(0.0, abs=1e-12) and cubic[-1] > 0.05
    nngp = [pt["observables"]["nngp"]["learned_fraction_cubic"] for pt in res["points"]]
    assert max(nngp) < 1e-4


def test_analytic_jacobians_against_finite_differences() -> None:
    for scaling in ("mean_field", "standard"):
        net = Network(0.5, -0.3, 150.0, 700.0, 3000.0, 0.17, 8 / 700**2, scaling)
        for x in (np.array([0.27, -0.29, 0.0056]), np.array([0.3, -0.3, 0.0]), np.array([0.2, -0.25, 0.3])):

            def G(y: np.ndarray, net: Network = net) -> np.ndarray:
                st = evaluate(net, y)
                return np.array([st.b_new, st.c_new, y[2] - st.complementarity]) - y

            assert np.allclose(saddle_jac(net, x), fd_jacobian(G, x), rtol=1e-6, atol=1e-6)
        rule = QuadratureRule(net, panel_count(net))
        x = np.array([0.28, -0.29])
        numeric = fd_jacobian(lambda y, net=net, rule=rule: fd_map(net, rule, y) - y, x)
        assert np.allclose(fd_jac(net, rule, x), numeric, rtol=1e-6, atol=1e-7)


def test_finite_D_closure_by_adaptive_quadrature() -> None:
    s = spec(**PAPER, T=0.16)
    res = solve_json(THEORY, s, SolverOptions())
    fd = res["observables"]["finite_D"]
    b, c = fd["b"], fd["c"]
    net = network_of(s)
    D, sw = 150.0, 0.5
    f = lambda r: blog_potential(r, net.u, b, c)  # noqa: E731
    fmin = min(f(r) for r in np.linspace(0, 3, 3001))
    w = lambda r: math.exp(-D * (f(r) - fmin))  # noqa: E731
    h = lambda r: 1 + 2 * (sw + r * r)  # noqa: E731
    Z = quad(w, 0, 4, limit=400, epsabs=0, epsrel=1e-12)[0]
    A11 = quad(lambda r: w(r) * (4 / math.pi) * r * r / h(r), 0, 4, limit=400, epsabs=0, epsrel=1e-12)[0] / Z
    A13 = (
        quad(
            lambda r: w(r) * -8 * r**4 / (math.sqrt(6) * math.pi * h(r) ** 2), 0, 4, limit=400, epsabs=0, epsrel=1e-12
        )[0]
        / Z
    )
    A33 = quad(lambda r: w(r) * 8 * r**6 / (3 * math.pi * h(r) ** 3), 0, 4, limit=400, epsabs=0, epsrel=1e-12)[0] / Z
    M = net.n_eff * np.array([[A11, A13], [A13, A33]])
    r = np.linalg.solve(np.eye(2) + M, [1.0, math.sqrt(6) * -0.3])
    assert b == pytest.approx(r[0], rel=1e-8)
    assert c == pytest.approx(r[1] / math.sqrt(6), rel=1e-8)


@pytest.mark.parametrize("u", [25.0, 35.0])
def test_standard_scaling_reduces_to_mean_field_when_L_goes_to_one(u: float) -> None:
    # λ = s_a2 P/T → 0 at fixed u = λ P/(T D) and η = λ N/D: P/T = u D/λ, N = η D/λ.
    lam, eta, D, T = 1e-7, 1.35, 150.0, 1e-3
    P = u * D / lam * T
    s_kw = {"sigma_w2": 0.5, "epsilon": -0.3, "D": D, "T": T, "P": P, "s_a2": lam * T / P, "N": eta * D / lam}
    a = solve_json(THEORY, spec(**s_kw), SolverOptions())
    b = solve_json(THEORY, spec(**s_kw, scaling="standard"), SolverOptions())
    assert a["observables"]["u"] == pytest.approx(u, rel=1e-9)
    for key in ("b", "c", "aligned_weight"):
        assert b["order_parameters"][key] == pytest.approx(a["order_parameters"][key], rel=1e-5, abs=1e-8)
    # At the paper's λ = s_a2 P/T ≈ 0.27 the 1/L factor weakens the reward: less is learned.
    std = solve_json(THEORY, spec(**PAPER, T=0.16, scaling="standard"), SolverOptions())
    mf = solve_json(THEORY, spec(**PAPER, T=0.16), SolverOptions())
    assert std["converged"] and std["order_parameters"]["b"] > mf["order_parameters"]["b"]


def test_bad_input_and_non_convergence() -> None:
    for bad, field in [
        ({"P": 0}, "P"),
        ({"N": 0.5}, "N"),
        ({"D": 0}, "D"),
        ({"T": 0}, "T"),
        ({"s_a2": -1}, "s_a2"),
        ({"sigma_w2": 0}, "sigma_w2"),
        ({"scaling": "lazy"}, "scaling"),
        ({"u": -3.0}, "u"),
    ]:
        with pytest.raises(ValidationError) as err:
            spec(**bad)
        assert field in str(err.value)
    s = spec(u=25.0)
    assert network_of(s).u == pytest.approx(25.0, rel=1e-12)
    res = solve_json(THEORY, spec(**PAPER, T=0.12), SolverOptions(method="newton", max_iterations=1))
    assert res["converged"] is False
    assert res["diagnostics"]["residual"] > 0
