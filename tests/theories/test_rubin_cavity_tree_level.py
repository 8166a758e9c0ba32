"""rubin_cavity at tree level (Rubin et al. 2025): the variance term, the potential, the population solution
and its limits, each against something the tree-level code does not compute itself."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError
from scipy import integrate
from scipy.optimize import brentq, minimize_scalar
from scipy.special import erf

from solvers.core.newton import fd_jacobian
from solvers.core.options import SolverOptions
from solvers.theories.rubin_cavity import THEORY
from solvers.theories.rubin_cavity.common import tree_level_potential
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
from tests.theories import rubin_cavity_by_hand as by_hand
from tests.theories.rubin_cavity_closure_by_qmc import DataSet, closure_map

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


@pytest.mark.parametrize("N,eta", [(10.0, 1.3), (3.0, 2.0)])
def test_variance_term_alone_shifts_b_as_written_by_hand(N: float, eta: float) -> None:
    """u = 10⁻⁴ (no directional reward to speak of) and κ = η/N = 0.13 and 0.67: the variance term alone moves b
    off the NNGP value (by 0.5 % and 3 %), and the solution is the hand formula (``centre_b`` at u → 0) to 10⁻⁴
    (measured 5·10⁻⁶): a 5 % error in the variance term's effect moves b by 2.6·10⁻⁴ and 1.6·10⁻³ (relative)."""
    P, D, u = 100.0, 150.0, 1e-4
    kappa = eta / N
    T = kappa * P / u
    spec = _spec(N=N, P=P, D=D, T=T, s_a2=kappa * T * D / P)
    net = network_of(spec)
    assert net.u == pytest.approx(u) and net.kappa == pytest.approx(kappa)
    op = _solution(spec)
    expected = by_hand.centre_b(eta, kappa, 0.0)
    assert abs(expected / gp_residual_b(eta, 0.5) - 1) > 3e-3  # the tree level acts
    assert by_hand.centre_b(eta, 0.0, 0.0) == pytest.approx(gp_residual_b(eta, 0.5), rel=1e-12)
    assert op["b"] == pytest.approx(expected, rel=1e-4)
    assert op["c"] == pytest.approx(-0.3, abs=1e-9) and op["aligned_weight"] == 0.0


def _chi_n(T_tilde: float, N: float) -> SelfConsistentSpec:
    """s_a2 = g/(χN), T = T̃/χ at χ = N (g = 8): u and η stay fixed while κ = η/N falls like 1/N."""
    return _spec(N=N, s_a2=8.0 / N**2, T=T_tilde / N)


def _invariants(spec: SelfConsistentSpec) -> tuple[float, float, float]:
    """(u, η, κ) from the spec's fields: u = P² s_a2/(T² D), η = P N s_a2/(T D), κ = η/N."""
    P, D, T, N, s_a2 = spec.P, spec.D, spec.T, spec.N, spec.s_a2
    return P**2 * s_a2 / (T**2 * D), P * N * s_a2 / (T * D), P * s_a2 / (T * D)


def _gfl_shift_ratio(N: float) -> float:
    """(b − b_MF)/(b_hand − b_MF) in GFL (T̃ = 0.2 · 700) at χ = N: the variance term's shift of b measured
    against the hand formula's, b_MF = 1/(1 + η/(π − u b²)) of mean field."""
    spec = _chi_n(0.2 * 700, N)
    u, eta, kappa = _invariants(spec)
    b = _solution(spec)["b"]
    b_mf = by_hand.gfl_b(eta, u)
    return (b - b_mf) / (by_hand.centre_b(eta, kappa, u) - b_mf)


@pytest.mark.parametrize("N", [700.0, 7000.0])
def test_gfl_tree_level_is_the_centre_formula_written_by_hand(N: float) -> None:
    """GFL (T̃ = 0.2 · 700, u = 24.5, η = 1.14) at χ = N: b is ``centre_b`` (the centre Gaussian with the
    directional and the variance term, written from the equations) to 10⁻⁹ (measured 10⁻¹⁵), c = ε, and the
    variance term's shift of b off the mean-field closed form equals the formula's to 1 % (measured 3·10⁻¹¹). The
    shift is κ-sized (κ = η/N): 3.2·10⁻⁶ at N = 700, a tenth of that at N = 7000."""
    spec = _chi_n(0.2 * 700, N)
    u, eta, kappa = _invariants(spec)
    op = _solution(spec)
    expected = by_hand.centre_b(eta, kappa, u)
    assert op["b"] == pytest.approx(expected, rel=1e-9)
    assert op["c"] == pytest.approx(-0.3, abs=1e-12) and op["aligned_weight"] == 0.0
    shift = expected - by_hand.gfl_b(eta, u)
    assert shift == pytest.approx(3.2e-6 * 700.0 / N, rel=0.05)
    assert _gfl_shift_ratio(N) == pytest.approx(1.0, abs=0.01)


def test_gfl_check_sees_a_five_percent_error_in_the_variance_term(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above fails when the variance term V is 5 % too large: the shift of b moves by 5 %."""
    original = tree_level_potential.variance
    monkeypatch.setattr(tree_level_potential, "variance", lambda s, sw2, ell, order=0: 1.05 * original(s, sw2, ell,
                                                                                                         order))
    assert _gfl_shift_ratio(700.0) == pytest.approx(1.05, abs=0.005)


def test_gmfl_tree_level_tends_to_the_mean_field_mixture_written_by_hand() -> None:
    """GMFL-I (T̃ = 0.15 · 700, u = 43.5) at χ = N: the solution (b, c, aligned mass ω, well ρ*) against the
    mean-field mixture solved by hand (closure with the aligned well at equal depth, ``mean_field_mixture``).
    The gap is the variance term's, O(κ) = O(1/N): 8·10⁻⁶ relative in b and c, 8·10⁻⁵ in ω at N = 700,
    ten times smaller at N = 7000; the bounds (10⁻⁴, 10⁻³) fail at a 5 % error of any of them."""
    spec = _chi_n(0.15 * 700, 700.0)
    u, eta, _ = _invariants(spec)
    b, c, omega, rho = by_hand.mean_field_mixture(eta, u, spec.D, spec.epsilon, start=(0.25, -0.3, 0.01))
    gaps = []
    for N in (700.0, 7000.0):
        op = _solution(_chi_n(0.15 * 700, N))
        gap = np.array([op["b"] / b - 1, op["c"] / c - 1, op["aligned_weight"] / omega - 1, op["rho_star"] / rho - 1])
        assert np.all(np.abs(gap) < [1e-4, 1e-4, 1e-3, 1e-4])
        gaps.append(gap)
    assert np.all((gaps[0] / gaps[1] > 8.0) & (gaps[0] / gaps[1] < 12.0))  # ∝ κ = η/N


def test_annealing_from_the_nngp_limit_follows_the_hand_formulas() -> None:
    """Algorithm 1: χ from 1 (standard scaling s_a2 = 8/N, T = T̃ = 0.15 N) to N (the paper's mean-field setting)
    by the engine's continuation, u = χ u₁ with η = 1.52 and κ = η/N fixed. Each GFL point is ``centre_b`` at
    (η, κ, χ u₁) to 10⁻⁸; the spinodal and the first-order point are mean field's, written by hand (u_s = 29.32,
    u_c = 32.76, over u₁), moved by the variance term by 5·10⁻⁵ (bound 10⁻³); the end, at χ = N past the
    transition, is the hand mean-field mixture to 10⁻⁴ (ω to 10⁻³)."""
    N = 700.0
    spec = _spec(N=N, s_a2=8.0 / N, T=0.15 * N)
    u1, eta, _ = _invariants(spec)
    D, eps = spec.D, spec.epsilon
    chis = list(np.geomspace(1.0, N, 12))
    sweep = anneal(spec, chis)
    gfl = 0
    for chi, cat in zip(chis, sweep.catalogues, strict=True):
        op = cat.equilibrium_branch.report.order_parameters
        if op["aligned_weight"] == 0.0:
            gfl += 1
            assert op["b"] == pytest.approx(by_hand.centre_b(eta, eta / N, chi * u1), rel=1e-8), chi
            assert op["c"] == pytest.approx(eps, abs=1e-12)
    assert gfl == len(chis) - 1  # every point but the last is before the transition
    points = {sp.transition: sp.parameter for sp in sweep.special_points}
    assert set(points) == {"spinodal", "first_order"}
    assert points["spinodal"] == pytest.approx(by_hand.spinodal_u(eta, eps, (15.0, 32.0)) / u1, rel=1e-3)
    assert points["first_order"] == pytest.approx(by_hand.equal_depth_u(eta, eps, (30.0, 40.0)) / u1, rel=1e-3)
    last = sweep.catalogues[-1].equilibrium_branch.report.order_parameters
    b, c, omega, _ = by_hand.mean_field_mixture(eta, N * u1, D, eps, start=(0.25, -0.3, 0.01))
    assert last["b"] == pytest.approx(b, rel=1e-4) and last["c"] == pytest.approx(c, rel=1e-4)
    assert last["aligned_weight"] == pytest.approx(omega, rel=1e-3)


def _mean_field_equal_depth_T(N: float = 700.0, P: float = 3000.0, D: float = 150.0, eps: float = -0.3) -> float:
    """The D → ∞ mean-field first-order point written out from the paper, with none of the solver's code: on the
    GFL branch (σ_w² = ½) b solves b = 1/(1 + η/(π − u b²)) and c = ε; the side well of the reduced action
    Ŝ(Φ) = Φ² − (2u/π) Φ²/h (b − 2εΦ²/h)², h = 2 + 2Φ², reaches the depth of Φ = 0 at T_c."""
    s_a2 = 8.0 / N**2

    def side_depth(T: float) -> float:
        u, eta = P**2 * s_a2 / (T**2 * D), P * N * s_a2 / (T * D)
        b = by_hand.gfl_b(eta, u)
        return float(minimize_scalar(lambda r: by_hand.s_hat(r, b, eps, u), bounds=(0.3, 2.0), method="bounded",
                                     options={"xatol": 1e-12}).fun)

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


#: A data set where both tree-level terms act: u = 20 (GFL, b well below 1), κ = 0.5, η = 2.
FINITE = {"theory": "rubin_cavity", "mode": "finite_sample", "P": 100, "D": 10, "P_test": 20, "seed": 2,
          "epsilon": -0.3, "N": 4.0, "s_a2": 0.125, "T": 2.5, "treatment": "tree_level"}
#: Bound on |G(x) − x|: the spread of the QMC map over scramblings is (2–7)·10⁻⁵ per component at 2¹⁴ points.
QMC_TOL = 3e-4


def _finite_sample_residual() -> tuple[np.ndarray, np.ndarray, DataSet]:
    spec = FiniteSampleSpec.model_validate(FINITE)
    eq = THEORY.solve(spec, OPTIONS).equilibrium_branch
    assert eq.converged
    data = DataSet(draw_inputs(spec.P, spec.D, spec.P_test, spec.seed)[0], spec.epsilon, spec.N, spec.s_a2, spec.T)
    return eq.x, closure_map(eq.x, data) - eq.x, data


def test_finite_sample_tree_level_is_a_fixed_point_of_the_closure_by_quasi_monte_carlo() -> None:
    """On one data set the finite-sample tree-level solution x = (b, c, ℓ11, ℓ13, ℓ33, ℓ⊥) is a fixed point of the
    closure map computed by quasi-Monte Carlo over the hidden weight (``closure_by_qmc``: the tilted law by
    inverse CDF, Williams' kernel as control variate) to 3·10⁻⁴ (measured ≤ 6·10⁻⁵); with b moved by 5 % it is
    not (residual 0.05). The data learnabilities lie between 0
    and their sample norms (1/P) EᵀE (K (K + T)⁻¹ has eigenvalues in [0, 1)), not in [0, 1]."""
    x, residual, data = _finite_sample_residual()
    assert np.max(np.abs(residual)) < QMC_TOL
    moved = x.copy()
    moved[0] *= 1.05
    assert abs(closure_map(moved, data)[0] - moved[0]) > 30 * QMC_TOL
    z = data.X[:, 0]
    norms = [np.mean(z * z), np.mean((z**3 - 3 * z) ** 2) / 6, np.mean(data.X[:, 1:] ** 2)]
    assert all(0 < v < n for v, n in zip(x[[2, 4, 5]], norms, strict=True))


def test_finite_sample_check_sees_a_five_percent_error_in_the_variance_term(monkeypatch: pytest.MonkeyPatch) -> None:
    """With V 5 % too large in the solver, the QMC map (which keeps the right V) is off the solution by more than
    the bound (b: measured 7·10⁻⁴, 2.5 times the bound and over ten QMC spreads)."""
    original = tree_level_potential.variance
    monkeypatch.setattr(tree_level_potential, "variance", lambda s, sw2, ell, order=0: 1.05 * original(s, sw2, ell,
                                                                                                         order))
    assert np.max(np.abs(_finite_sample_residual()[1])) > QMC_TOL
