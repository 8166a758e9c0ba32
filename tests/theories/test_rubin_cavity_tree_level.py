"""rubin_cavity at tree level (Rubin et al. 2025): the variance term, the potential, the population solution
and its limits, each against something the tree-level code does not compute itself."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from pydantic import ValidationError
from scipy import integrate
from scipy.optimize import minimize_scalar
from scipy.special import erf

from solvers.core.newton import fd_jacobian
from solvers.core.options import SolverOptions
from solvers.theories.rubin_cavity import THEORY
from solvers.theories.rubin_cavity.common.closure import gp_residual_b
from solvers.theories.rubin_cavity.common.erf_moments import erf_variance
from solvers.theories.rubin_cavity.common.erf_projections import mode_matrix
from solvers.theories.rubin_cavity.common.network import network_of
from solvers.theories.rubin_cavity.common.potential import OverlapPotential
from solvers.theories.rubin_cavity.common.tree_level_potential import TreeLevelPotential
from solvers.theories.rubin_cavity.common.variance_term import Learnability, mode_terms, variance
from solvers.theories.rubin_cavity.finite_sample.data import draw_inputs
from solvers.theories.rubin_cavity.specs import FiniteSampleSpec, SelfConsistentSpec
from solvers.theories.rubin_cavity.tree_level.annealing import anneal
from solvers.theories.rubin_cavity.tree_level.quadrature import potential_at
from solvers.theories.rubin_cavity.tree_level.saddle import evaluate

OPTIONS = SolverOptions()
LEARNED = Learnability(0.7, -0.05, 0.2, 0.3)


def _spec(**fields: object) -> SelfConsistentSpec:
    return SelfConsistentSpec.model_validate({"theory": "rubin_cavity", "mode": "self_consistent",
                                              "treatment": "tree_level", **fields})


def _solution(spec: SelfConsistentSpec) -> dict[str, float]:
    return dict(THEORY.solve(spec, OPTIONS).equilibrium_branch.report.order_parameters)


# ---- the variance term ------------------------------------------------------------------------------------


def _projections_by_quadrature(rho: float, sw2: float) -> tuple[float, float, float]:
    """⟨erf(w·x) Ĥ1(z)⟩, ⟨erf(w·x) Ĥ3(z)⟩ and Σ_j ⟨erf(w·x) x_j⟩² over x ~ N(0, I) for w = ρe + w⊥, |w⊥|² = σ_w²,
    by 2-D Gauss–Hermite quadrature in (z, ξ = w⊥·x⊥/|w⊥|): no Stein identity, no closed form."""
    t, wt = np.polynomial.hermite_e.hermegauss(160)
    wt = wt / wt.sum()
    Z, XI = np.meshgrid(t, t, indexing="ij")
    Wt = np.outer(wt, wt)
    f = erf(rho * Z + math.sqrt(sw2) * XI)
    a1 = float(np.sum(Wt * f * Z))
    a3 = float(np.sum(Wt * f * (Z**3 - 3 * Z))) / math.sqrt(6)
    # x_j ⊥ e: ⟨erf(w·x) x_j⟩ = (w_j/|w⊥|) ⟨erf(ρz + |w⊥|ξ) ξ⟩, whose squares sum over j to ⟨erf ξ⟩²
    a_perp2 = float(np.sum(Wt * f * XI)) ** 2
    return a1, a3, a_perp2


def test_mode_terms_are_the_projections_and_their_derivatives() -> None:
    """Values against the squared projections of erf(w·x) on Ĥ1, Ĥ3 and the linear modes ⊥ e computed by quadrature
    (A11 = a1², 2A13 = 2 a1 a3, A33 = a3², a⊥² summed over the D − 1 modes); s-derivatives against central
    differences."""
    sw2 = 0.7
    s = np.array([0.0, 0.03, 0.4, 1.3])
    v0 = mode_terms(s, sw2, 0)
    for k, rho in enumerate(np.sqrt(s)):
        a1, a3, a_perp2 = _projections_by_quadrature(float(rho), sw2)
        assert v0[0][k] == pytest.approx(a1 * a1, rel=1e-9, abs=1e-15)
        assert v0[1][k] == pytest.approx(2 * a1 * a3, rel=1e-9, abs=1e-15)
        assert v0[2][k] == pytest.approx(a3 * a3, rel=1e-9, abs=1e-15)
        assert v0[3][k] == pytest.approx(a_perp2, rel=1e-9)
    h = 1e-6
    for order in (1, 2):
        fd = (np.array(mode_terms(s + h, sw2, order - 1)) - np.array(mode_terms(s - h, sw2, order - 1))) / (2 * h)
        np.testing.assert_allclose(np.array(mode_terms(s + 0.0, sw2, order)), fd, rtol=1e-7, atol=1e-9)
        fd_v = (variance(s + h, sw2, LEARNED, order - 1) - variance(s - h, sw2, LEARNED, order - 1)) / (2 * h)
        np.testing.assert_allclose(variance(s + 0.0, sw2, LEARNED, order), fd_v, rtol=1e-7, atol=1e-9)
    for order in range(3):  # the scalar path is the array path
        assert variance(0.4, sw2, LEARNED, order) == pytest.approx(float(variance(np.array([0.4]), sw2, LEARNED,
                                                                                   order)[0]), rel=1e-14)


def test_learnability_is_m_over_one_plus_m() -> None:
    M = np.array([[2.0, -0.3], [-0.3, 0.8]])
    ell = Learnability.of(M, 0.6)
    ref = M @ np.linalg.inv(np.eye(2) + M)
    assert (ell.l11, ell.l13, ell.l33) == pytest.approx((ref[0, 0], ref[0, 1], ref[1, 1]), rel=1e-14)
    assert ell.perp == pytest.approx(0.6 / 1.6)


M_TARGET, M_PERP = np.array([[2.0, -0.3], [-0.3, 0.8]]), 0.6


def _measured_variance(rhos: tuple[float, ...], sw2: float = 0.5) -> list[float]:
    """(T/P) φᵀ(K + T)⁻¹φ on 20 000 Gaussian inputs, with a kernel that learns H1, H3 (2 × 2 block M_TARGET) and
    the linear modes ⊥ e (M_PERP), averaged over 20 random directions of w⊥ (|w⊥|² = σ_w²). K has rank D + 1, so
    (K + T)⁻¹ is applied exactly through Woodbury's identity; with K ∝ T the result does not depend on T."""
    rng = np.random.default_rng(1)
    P, D = 20_000, 12
    X = rng.standard_normal((P, D))
    z = X[:, 0]
    U = np.column_stack([z, (z**3 - 3 * z) / math.sqrt(6), X[:, 1:]])  # the sampled modes
    full = np.zeros((D + 1, D + 1))
    full[:2, :2], full[2:, 2:] = M_TARGET, M_PERP * np.eye(D - 1)
    # K = (T/P) U full Uᵀ (eigenvalue T m on each sampled mode); (K + T)⁻¹ = (I − U (P full⁻¹ + UᵀU)⁻¹ Uᵀ)/T
    core = np.linalg.inv(P * np.linalg.inv(full) + U.T @ U)
    out = []
    for rho in rhos:
        vals = []
        for _ in range(20):
            wp = rng.standard_normal(D - 1)
            phi = erf(X @ np.concatenate([[rho], wp * math.sqrt(sw2) / np.linalg.norm(wp)]))
            proj = U.T @ phi
            vals.append((phi @ phi - proj @ core @ proj) / P)
        out.append(float(np.mean(vals)))
    return out


def test_variance_term_is_phi_k_plus_t_inverse_phi_on_data() -> None:
    """The equivalent-kernel V(ρ²) against (T/P) φᵀ(K + T)⁻¹φ on data to 1 % (the bare v(q) of the cavity, which
    ignores what K has learned, is 35–55 % off)."""
    ell = Learnability.of(M_TARGET, M_PERP)
    rhos = (0.0, 0.5, 1.0)
    for rho, measured in zip(rhos, _measured_variance(rhos), strict=True):
        assert measured == pytest.approx(float(variance(rho * rho, 0.5, ell)), rel=0.01), rho
        assert abs(measured / erf_variance(0.5 + rho * rho) - 1) > 0.3


# ---- the potential ----------------------------------------------------------------------------------------


def test_potential_is_the_mean_field_action_plus_the_variance_term() -> None:
    """f(ρ) = eq. 13 written out by hand plus (κ/2) × the variance term measured on data (above), to 1 % of the
    variance part; at κ = 0 the stationary points are the mean-field potential's."""
    b, c, u, kappa = 0.3, -0.3, 29.45, 0.04
    ell = Learnability.of(M_TARGET, M_PERP)
    tl = TreeLevelPotential(0.5, b, c, u, D=150.0, kappa=kappa, learned=ell)
    rhos = (0.0, 0.5, 1.0)
    for rho, measured in zip(rhos, _measured_variance(rhos), strict=True):
        h = 2.0 + 2.0 * rho * rho
        eq13 = rho * rho - (2 * u / math.pi) * rho * rho / h * (b - 2 * c * rho * rho / h) ** 2
        assert float(tl.F(rho * rho)) == pytest.approx(eq13 + 0.5 * kappa * measured, abs=0.01 * 0.5 * kappa * measured)
    base = OverlapPotential(0.5, b, c, u, D=150.0)
    zero = TreeLevelPotential(0.5, b, c, u, D=150.0, kappa=0.0, learned=ell)
    assert [(p.kind, round(p.rho, 9)) for p in zero.stationary_points()] == [
        (p.kind, round(p.rho, 9)) for p in base.stationary_points()]


def test_stationary_points_are_every_sign_change_of_the_slope() -> None:
    tl = TreeLevelPotential(0.5, 0.3, -0.3, 29.0, D=150.0, kappa=0.5, learned=LEARNED)
    rho = np.linspace(1e-6, 3.0, 200_001)
    slope = tl.grad(rho)
    crossings = rho[1:][np.sign(slope[1:]) != np.sign(slope[:-1])]
    found = [p.rho for p in tl.stationary_points() if p.kind != "center"]
    assert len(found) == len(crossings) == 2
    np.testing.assert_allclose(found, crossings, atol=2e-5)
    assert all(abs(float(tl.grad(r))) < 1e-10 for r in found)


# ---- the population solution and its limits -------------------------------------------------------------


def test_spec_refuses_tree_level_with_standard_scaling() -> None:
    with pytest.raises(ValidationError) as err:
        _spec(scaling="standard")
    assert err.value.errors()[0]["loc"] == ("treatment",)
    with pytest.raises(ValidationError):
        FiniteSampleSpec.model_validate({"theory": "rubin_cavity", "mode": "finite_sample", "scaling": "standard",
                                         "treatment": "tree_level"})


def _centre_only_b(eta: float, kappa: float, sw2: float = 0.5) -> float:
    """b of the tree level without the directional term (u → 0), written out by hand: the law of ρ is the centre
    exp{−D [s/(2σ_w²) + (κ/2) V(s)]}, s = ρ², so ⟨ρ²⟩ = 1/(D (1/σ_w² + κ V'(0))); a₁ = 2ρ/√(π h), h = 1 + 2q,
    gives M₁₁ = η D (4/π) ⟨ρ²⟩/h (the cubic and mixed terms are O(1/D)), b = 1/(1 + M₁₁), and
    V'(0) = v'(σ_w²) − ℓ₁₁ (4/π)/h + ℓ⊥ (4/π) σ_w² · 2/h² with v(q) = (2/π) arcsin(2q/(1 + 2q)),
    ℓ = m/(1 + m), m⊥ = η (4/π) σ_w²/h. At κ = 0 it is the NNGP predictor."""
    from scipy.optimize import brentq

    h = 1.0 + 2.0 * sw2
    v_prime = (2 / math.pi) * 2.0 / (h * math.sqrt(1.0 + 4.0 * sw2))
    m_perp = eta * (4 / math.pi) * sw2 / h
    l_perp = m_perp / (1.0 + m_perp)

    def gap(M: float) -> float:
        V_prime = v_prime - M / (1.0 + M) * (4 / math.pi) / h + l_perp * (4 / math.pi) * sw2 * 2.0 / h**2
        return M - eta * (4 / math.pi) / h / (1.0 / sw2 + kappa * V_prime)

    return 1.0 / (1.0 + brentq(gap, 1e-12, 1e6, xtol=1e-14))


@pytest.mark.parametrize("N,eta", [(10.0, 1.3), (3.0, 2.0)])
def test_variance_term_alone_shifts_b_as_written_by_hand(N: float, eta: float) -> None:
    """u = 10⁻⁴ (no directional reward to speak of) and κ = η/N = 0.13 and 0.67: the variance term alone moves b
    off the NNGP value (by 0.5 % and 3 %), and the solution is the hand formula above to 10⁻⁴ (measured 5·10⁻⁶):
    a 5 % error in the variance term's effect moves b by 2.6·10⁻⁴ and 1.6·10⁻³ (relative)."""
    P, D, u = 100.0, 150.0, 1e-4
    kappa = eta / N
    T = kappa * P / u
    spec = _spec(N=N, P=P, D=D, T=T, s_a2=kappa * T * D / P)
    net = network_of(spec)
    assert net.u == pytest.approx(u) and net.kappa == pytest.approx(kappa)
    op = _solution(spec)
    expected = _centre_only_b(eta, kappa)
    assert abs(expected / gp_residual_b(eta, 0.5) - 1) > 3e-3  # the tree level acts
    assert _centre_only_b(eta, 0.0) == pytest.approx(gp_residual_b(eta, 0.5), rel=1e-12)
    assert op["b"] == pytest.approx(expected, rel=1e-4)
    assert op["c"] == pytest.approx(-0.3, abs=1e-9) and op["aligned_weight"] == 0.0


@pytest.mark.parametrize("T_tilde", [0.2 * 700, 0.15 * 700])  # GFL, and GMFL-I (aligned mass ω > 0)
def test_tree_level_tends_to_mean_field_as_chi_tends_to_n(T_tilde: float) -> None:
    """s_a2 = g/(χN), T = T̃/χ with χ = N: u and η stay fixed while the variance term's κ = η/N falls like 1/N,
    and the tree level approaches the mean-field (paper eq. 13) solution with a gap ∝ 1/N."""
    gaps = []
    for N in (700.0, 7000.0, 70000.0):
        fields = {"N": N, "s_a2": 8.0 / N**2, "T": T_tilde / N}
        tl, mf = _solution(_spec(**fields)), _solution(_spec(**fields, treatment="cavity"))
        gaps.append(np.array([tl["b"] - mf["b"], tl["c"] - mf["c"], tl["aligned_weight"] - mf["aligned_weight"]]))
    size = [float(np.max(np.abs(g))) for g in gaps]
    assert size[0] > 1e-7  # the variance term is there at N = 700 ...
    assert size[2] < 1e-5
    for a, b in itertools.pairwise(size):  # ... and goes like κ ∝ 1/N
        assert 8.0 < a / b < 12.0


def test_annealing_from_the_nngp_limit_reaches_the_direct_solution() -> None:
    """Algorithm 1: χ from 1 (standard scaling s_a2 = 8/N, T = T̃) to N (the paper's mean-field setting) by the
    engine's continuation; its end is the solution of the spec at χ = N, which is past the transition."""
    N = 700.0
    sweep = anneal(_spec(N=N, s_a2=8.0 / N, T=0.15 * N), list(np.geomspace(1.0, N, 12)))
    first, last = (c.equilibrium_branch.report.order_parameters for c in (sweep.catalogues[0], sweep.catalogues[-1]))
    direct = _solution(_spec(N=N, s_a2=8.0 / N**2, T=0.15))
    assert last["b"] == pytest.approx(direct["b"], rel=1e-8) and last["c"] == pytest.approx(direct["c"], rel=1e-8)
    assert last["aligned_weight"] == pytest.approx(direct["aligned_weight"], rel=1e-6) and direct["aligned_weight"] > 0
    net = network_of(_spec(N=N, s_a2=8.0 / N, T=0.15 * N))
    assert first["b"] == pytest.approx(gp_residual_b(net.eta, 0.5), rel=0.01)  # χ = 1: u = 0.044, near the NNGP
    onsets = [sp for sp in sweep.special_points if sp.transition == "first_order"]
    assert len(onsets) == 1 and 1.0 < onsets[0].parameter < N


def _mean_field_equal_depth_T(N: float = 700.0, P: float = 3000.0, D: float = 150.0, eps: float = -0.3) -> float:
    """The D → ∞ mean-field first-order point written out from the paper, with none of the solver's code: on the
    GFL branch (σ_w² = ½) b solves b = 1/(1 + η/(π − u b²)) and c = ε; the side well of the reduced action
    Ŝ(Φ) = Φ² − (2u/π) Φ²/h (b − 2εΦ²/h)², h = 2 + 2Φ², reaches the depth of Φ = 0 at T_c."""
    from scipy.optimize import brentq

    s_a2 = 8.0 / N**2

    def side_depth(T: float) -> float:
        u, eta = P**2 * s_a2 / (T**2 * D), P * N * s_a2 / (T * D)
        b = brentq(lambda b: b * (1 + eta / (math.pi - u * b * b)) - 1, 1e-9, min(1.0, math.sqrt(math.pi / u)) - 1e-9)

        def S(phi: float) -> float:
            h = 2 + 2 * phi * phi
            return phi * phi - (2 * u / math.pi) * phi * phi / h * (b - 2 * eps * phi * phi / h) ** 2

        return float(minimize_scalar(S, bounds=(0.3, 2.0), method="bounded", options={"xatol": 1e-12}).fun)

    return brentq(side_depth, 0.15, 0.21, xtol=1e-12)


def test_sweeps_in_t_and_p_locate_the_first_order_point() -> None:
    """The T sweep's GFL → GMFL-I point is where the solution's own potential has equal depths, checked by a
    brute-force minimum of f over ρ; the P sweep finds the same onset in P (u depends on P/T only)."""
    spec = _spec()
    sweep = THEORY.sweep(spec, "T", list(np.linspace(0.15, 0.21, 13)), "continuation", OPTIONS)
    onset = next(sp for sp in sweep.special_points if sp.transition == "first_order")
    assert onset.branches == ("GFL", "GMFL-I") and onset.state["aligned_weight"] == pytest.approx(0, abs=1e-9)
    # the mean-field point by hand (closed-form GFL b, c = ε and eq. 13), moved by κ = 0.0018 by O(10⁻⁵) only
    assert onset.parameter == pytest.approx(_mean_field_equal_depth_T(), abs=2e-4)
    at = spec.model_copy(update={"T": onset.parameter})
    st = evaluate(network_of(at), THEORY.solve(at, OPTIONS).equilibrium_branch.x).saddle
    side = minimize_scalar(lambda r: float(st.potential.value(r)), bounds=(0.3, 1.5), method="bounded",
                           options={"xatol": 1e-10})
    assert float(st.potential.value(side.x)) - float(st.potential.value(0.0)) == pytest.approx(0.0, abs=1e-7)
    p_sweep = THEORY.sweep(spec, "P", list(np.linspace(2600.0, 3300.0, 8)), "continuation", OPTIONS)
    p_onset = next(sp for sp in p_sweep.special_points if sp.transition == "first_order")
    assert p_onset.parameter == pytest.approx(3000.0 * 0.18 / onset.parameter, rel=1e-6)
    assert p_sweep.notes.fields["sample_complexity"]["adaptive"]["P_transition"] == p_onset.parameter


def test_analytic_jacobian_matches_finite_differences() -> None:
    problem = THEORY.problem(_spec(T=0.12, N=30.0, s_a2=8 / 700**2 * 700 / 30), None, OPTIONS)
    for x in (np.array([2.0, -0.05, 0.02, 0.3]), np.array([2.5, 0.0, 0.0, 0.0])):
        J = problem.jacobian(x, 0.0)
        ref = fd_jacobian(lambda y: problem.F(y, 0.0), x)
        np.testing.assert_allclose(J, ref, atol=1e-6 * np.max(np.abs(ref)))


def test_finite_d_closure_against_adaptive_quadrature() -> None:
    """At the reported finite-D solution the learnabilities are those of M = η D ⟨A⟩ and m⊥ = η (4/π) σ_w² ⟨1/h⟩
    computed by scipy's adaptive quad."""
    spec = _spec(T=0.16, D=60.0)
    cat = THEORY.solve(spec, OPTIONS)
    block = cat.notes.observables["finite_D"]
    assert block["converged"]
    net = network_of(spec)
    x = block["diagnostics"].x
    pot = potential_at(net, x)
    f0 = float(pot.value(0.0))
    weight = lambda r: math.exp(-net.D * (float(pot.value(r)) - f0))  # noqa: E731
    Z = integrate.quad(weight, 0, 4, points=[0.7], limit=400, epsabs=0, epsrel=1e-11)[0]

    def mean(fn: object) -> float:
        return integrate.quad(lambda r: fn(r) * weight(r), 0, 4, points=[0.7], limit=400, epsabs=0,  # type: ignore[operator]
                              epsrel=1e-11)[0] / Z

    A = [mean(lambda r, i=i, j=j: float(mode_matrix(r, 0.5)[i, j])) for i, j in ((0, 0), (0, 1), (1, 1))]
    inv_h = mean(lambda r: 1.0 / (1.0 + 2.0 * (0.5 + r * r)))
    M = net.n_eff * np.array([[A[0], A[1]], [A[1], A[2]]])
    np.testing.assert_allclose(x, Learnability.of(M, net.perpendicular_m(inv_h)).as_tuple(), rtol=1e-7)
    assert block["b"] < 1 and "tree_level" in block


def test_finite_sample_tree_level_tends_to_mean_field_cavity() -> None:
    """On one data set: κ → 0 at fixed u, η (N × 100, s_a2 / 10⁴, T / 100) makes the tree level's finite-sample
    solution the mean-field cavity's. Its learnabilities (1/P) Eᵀ K (K + T)⁻¹ E of the sampled modes lie between 0
    and their sample norms (1/P) EᵀE (K (K + T)⁻¹ has eigenvalues in [0, 1)), not in [0, 1]."""
    base = {"theory": "rubin_cavity", "mode": "finite_sample", "P": 100, "D": 10, "P_test": 20, "seed": 2,
            "epsilon": -0.3}
    out = {}
    for label, N, treatment in (("tl", 20.0, "tree_level"), ("tl_big", 2000.0, "tree_level"),
                                ("mf", 2000.0, "cavity")):
        spec = FiniteSampleSpec.model_validate({**base, "N": N, "s_a2": 8 / N**2, "T": 0.3 * 20 / N,
                                                "treatment": treatment})
        eq = THEORY.solve(spec, OPTIONS).equilibrium_branch
        assert eq.converged
        out[label] = eq.x
    X = draw_inputs(100, 10, 20, 2)[0]
    z = X[:, 0]
    norms = [np.mean(z * z), np.mean((z**3 - 3 * z) ** 2) / 6, np.mean(X[:, 1:] ** 2)]
    assert all(0 < v < n for v, n in zip(out["tl"][[2, 4, 5]], norms, strict=True))
    gap_small, gap_big = np.abs(out["tl"][:2] - out["mf"]), np.abs(out["tl_big"][:2] - out["mf"])
    assert np.max(gap_small) > 1e-5 and np.max(gap_big) < np.max(gap_small) / 30
