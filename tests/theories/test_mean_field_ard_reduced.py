"""The reduced population-limit solver: quadrature against exact laws and brute force, identities, ARD."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from solvers.theories.mean_field_ard.activations import Activation
from solvers.theories.mean_field_ard.ard import ARD
from solvers.theories.mean_field_ard.network_features import Network, _features
from solvers.theories.mean_field_ard.parity_cube import cube
from solvers.theories.mean_field_ard.population import PopulationParity
from solvers.theories.mean_field_ard.reduced_law import find_wells, law
from solvers.theories.mean_field_ard.reduced_potential import ParityPotential

RELU = Activation("relu")


def net(d: int = 35, k: int = 2, kappa: float = 0.03, N: float = 512.0, sigma_a2: float = 1.0) -> Network:
    return Network(d=d, k=k, N=N, gamma=0.5, kappa=kappa, sigma_a2=sigma_a2, activation=RELU)


@pytest.mark.parametrize("d,k", [(16, 2), (64, 3)])
def test_prior_law_is_integrated_exactly(d: int, k: int) -> None:
    """No reward (t = 0) and no readout cost (κ → ∞): the law is the prior, Z = 1, and its moments are exact."""
    pot = ParityPotential.gaussian(net(d, k, kappa=1e6), 0.0, rho_rel=0.7 * d, rho_irr=1.3 * d)
    L = law(pot, find_wells(pot, 1.0))
    # the bulk rule is exact in q (Gauss–Laguerre on the prior's law given v) and accurate to ~1e-5 in v
    assert L.log_Z == pytest.approx(0.0, abs=1e-4)
    assert L.mean("wS2") == pytest.approx(k / (0.7 * d), rel=5e-5)
    assert L.mean("q") == pytest.approx((d - k) / (1.3 * d), rel=5e-5)
    assert L.mean("wS4") == pytest.approx(k * (k + 2) / (0.7 * d) ** 2, rel=5e-4)  # E|w|⁴ of N(0, I/ρ) in k dims


def composite_gl(a: float, b: float, panels: int, order: int = 8) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.legendre.leggauss(order)
    edges = np.linspace(a, b, panels + 1)
    mid, half = 0.5 * (edges[1:] + edges[:-1]), 0.5 * np.diff(edges)
    return (mid[:, None] + half[:, None] * x).ravel(), (half[:, None] * w).ravel()


def brute_force(pot: ParityPotential, w_panels: int = 30, u_panels: int = 16) -> dict[str, float]:
    """The k = 2 law on a dense tensor grid over w₁ ≥ 0, w₂ ≥ 0 (×4 signs) and u: composite Gauss–Legendre
    on a box that holds all the mass (w ≤ 5, |w_⊥|² ∈ [e^{−14}, e²]), no knowledge of the wells."""
    w, tw = composite_gl(0.0, 5.0, w_panels, order=6)
    u, tu = composite_gl(-14.0, 2.0, u_panels, order=6)
    return grid_moments(pot, w, tw, u, tu)


def grid_moments(pot: ParityPotential, w: np.ndarray, tw: np.ndarray, u: np.ndarray, tu: np.ndarray
                 ) -> dict[str, float]:
    """log Z and the law's moments on the tensor grid (w₁, w₂ ≥ 0 with weights tw, ×4 signs; u with tu)."""
    W1, W2, Uu = np.meshgrid(w, w, u, indexing="ij")
    Y = np.column_stack([W1.ravel(), W2.ravel(), Uu.ravel()])
    U, f = pot.values(Y)
    logm = np.log(4.0 * np.einsum("i,j,k->ijk", tw, tw, tu).ravel()) - U
    top = logm.max()
    e = np.exp(logm - top)
    lam = pot.net.A + f.Sigma / pot.net.s
    return {"log_Z": top + math.log(e.sum()), "g": float(e @ (f.J_S**2 / lam) / e.sum()),
            "wS2": float(e @ f.wS2 / e.sum()), "q": float(e @ f.q / e.sum())}


@pytest.mark.slow
@pytest.mark.parametrize("state", [(0.9, 35.0, 35.0), (0.4, 2.0, 60.0)], ids=["plain-like", "ard-like"])
def test_well_mixture_against_brute_force(state: tuple[float, float, float]) -> None:
    """Bulk rule + Laplace-centred aligned rules against a dense grid (k = 2, where one is affordable)."""
    pot = ParityPotential.gaussian(net(35, 2, kappa=0.025), *state)
    ref = brute_force(pot)
    for compiled in (True, False):
        L = law(pot, find_wells(pot, 1.0), compiled=compiled)
        assert L.log_Z == pytest.approx(ref["log_Z"], abs=2e-3)
        for key in ("g", "wS2", "q"):
            assert L.mean(key) == pytest.approx(ref[key], rel=3e-3)


def test_compiled_and_numpy_reductions_agree() -> None:
    pot = ParityPotential.gaussian(net(35, 3, kappa=0.02), 0.8, 30.0, 40.0)
    wells = find_wells(pot, 1.0)
    a, b = law(pot, wells, compiled=True, threshold=0.1), law(pot, wells, compiled=False, threshold=0.1)
    assert a.log_Z == pytest.approx(b.log_Z, abs=1e-11)
    for key in a.means:
        assert a.mean(key) == pytest.approx(b.mean(key), rel=1e-9, abs=1e-300)
    np.testing.assert_allclose(a.second, b.second, rtol=1e-9)


def test_central_limit_features_against_the_hypercube() -> None:
    """J_S(w) and Σ(w) of the reduction (w_⊥·x_⊥ Gaussian) against Monte Carlo over x ∈ {±1}^d at d − k = 400."""
    rng = np.random.default_rng(0)
    k, d_perp = 3, 400
    w_S = np.array([0.5, -0.4, 0.7])
    w_perp = rng.standard_normal(d_perp) * math.sqrt(0.6 / d_perp)
    f = _features(RELU, cube(k), np.r_[w_S, math.log(float(w_perp @ w_perp))][None, :])
    n = 200_000
    xs = rng.choice([-1.0, 1.0], size=(n, k))
    g = np.concatenate([rng.choice([-1.0, 1.0], size=(20_000, d_perp)) @ w_perp for _ in range(n // 20_000)])
    h = np.maximum(xs @ w_S + g, 0.0)
    chi = np.prod(xs, axis=1)
    for value, samples in ((f.J_S[0], h * chi), (f.Sigma[0], h * h)):
        assert abs(value - samples.mean()) < 4 * samples.std() / math.sqrt(n)


@pytest.mark.parametrize("model", ["mf", "mf_ard"])
def test_analytic_jacobian_matches_finite_differences(model: str) -> None:
    ard = ARD(alpha0=4.0, beta0=4.0 / 35, N=512) if model == "mf_ard" else None
    pop = PopulationParity(net(35, 2, kappa=0.03), 1.0, ard)
    x = np.array([0.6]) if ard is None else np.array([0.5, math.log(5.0), math.log(45.0)])
    J = pop.jacobian(x)
    for j in range(x.size):
        h = 1e-5
        e = np.zeros(x.size)
        e[j] = h
        col = (pop.residual(x + e) - pop.residual(x - e)) / (2 * h)
        # the analytic form differentiates the exact integral; the rule's own derivative differs by its error
        np.testing.assert_allclose(J[:, j], col, rtol=1e-2, atol=1e-3 * float(np.max(np.abs(J))))


def test_newton_jacobian_is_the_rules_own_derivative() -> None:
    """Without an aligned well the law is one fixed bulk rule: the Jacobian Newton, the continuation and the
    stability margin use is then the analytic one (no further law), equal to central differences of the
    residual to 1e-6 of each entry. With an aligned well it is the rule's forward difference."""
    ard = ARD(alpha0=4.0, beta0=4.0 / 35, N=512)
    pop = PopulationParity(net(35, 2, kappa=0.1), 1.0, ard)
    for x in (np.array([0.4, 0.86, 3.6]), np.array([0.9, math.log(35.0), math.log(35.0)])):
        assert pop.smooth_rule(x)
        J, Jc = pop.rule_jacobian(x), pop.jacobian_fd(x, h=1e-5)
        np.testing.assert_allclose(J, Jc, rtol=1e-6)
        margin = pop.stability(x)
        pop.smooth_rule = lambda y: False  # type: ignore[method-assign]  # the margin by differences
        assert margin == pytest.approx(pop.stability(x), rel=1e-6)
        del pop.smooth_rule
    aligned = PopulationParity(net(35, 2, kappa=0.03), 1.0, ard)
    x = np.array([0.5, math.log(5.0), math.log(45.0)])
    assert any(w.kind == "aligned" for w in aligned.state(x).wells) and not aligned.smooth_rule(x)
    J = aligned.rule_jacobian(x)
    np.testing.assert_array_equal(J, aligned.jacobian_fd(x, h=1e-7, central=False))
    # the rule's forward difference against its central one (O(h) apart)
    np.testing.assert_allclose(J, aligned.jacobian_fd(x, h=1e-5), rtol=1e-4, atol=1e-6 * float(np.max(np.abs(J))))


def test_the_law_without_aligned_wells_needs_no_central_well() -> None:
    """The central well only shares mass with aligned wells: leaving it out where there are none changes nothing."""
    pot = ParityPotential.gaussian(net(35, 2, kappa=0.1), 0.4, math.exp(0.86), math.exp(3.6))
    full, lean = find_wells(pot, 1.0), find_wells(pot, 1.0, lone_center=False)
    assert [w.kind for w in full] == ["center"] and lean == []
    a, b = law(pot, full, compiled=False), law(pot, lean, compiled=False)
    assert a.log_Z == b.log_Z and a.means == b.means
    np.testing.assert_array_equal(a.second, b.second)
    with_aligned = ParityPotential.gaussian(net(35, 2, kappa=0.03), 0.5, 5.0, 45.0)
    lean, full = find_wells(with_aligned, 1.0, lone_center=False), find_wells(with_aligned, 1.0)
    assert [w.kind for w in lean] == [w.kind for w in full] == ["center", "aligned"]
    for a_well, b_well in zip(lean, full, strict=True):
        np.testing.assert_array_equal(a_well.y, b_well.y)


@pytest.mark.parametrize("model", ["mf", "mf_ard"])
def test_free_entropy_gradient_is_the_scaled_residual(model: str) -> None:
    """∇Φ = D·F at any state (so the solutions are exactly the stationary points of Φ), D from the docs."""
    ard = ARD(alpha0=4.0, beta0=4.0 / 35, N=512) if model == "mf_ard" else None
    pop = PopulationParity(net(35, 2, kappa=0.03), 1.0, ard)
    x = np.array([0.6]) if ard is None else np.array([0.5, math.log(5.0), math.log(45.0)])
    F = pop.residual(x)
    D = pop.gradient_scale()
    for j in range(x.size):
        h = 1e-5
        e = np.zeros(x.size)
        e[j] = h
        dphi = (pop.free_entropy(x + e) - pop.free_entropy(x - e)) / (2 * h)
        # ∂Φ/∂log ρ = k(N/2 + a)(1 − e^{F_ρ}): the identity is exact; the rule's discretisation error shows
        expected = D[j] * F[j] if j == 0 else D[j] * (1.0 - math.exp(F[j])) / (-1.0)
        assert dphi == pytest.approx(expected, rel=2e-3, abs=1e-3 * abs(D[j]) * 1e-2)


def test_plain_mf_has_one_solution() -> None:
    """Φ is convex in t (the adapted kernel's target eigenvalue grows with t): every start reaches one t."""
    pop = PopulationParity(net(35, 2, kappa=0.02), 1.0, None)
    from solvers.core.newton import newton
    from solvers.core.options import SolverOptions

    sols = []
    for t0 in (0.02, 0.3, 0.7, 0.999):
        res = newton(pop.residual, np.array([t0]), SolverOptions(), jacobian=pop.jacobian,
                     project=lambda x: np.clip(x, 1e-9, 1.0))
        assert res.converged
        sols.append(float(res.x[0]))
    assert max(sols) - min(sols) < 1e-8
    ts = np.linspace(0.05, 1.0, 12)
    assert all(pop.stability(np.array([t])) > 0 for t in ts)


def test_ard_without_data_returns_the_isotropic_precision() -> None:
    """No reward and no readout cost: ⟨w_j²⟩ = 1/ρ_j, so the mean update's fixed point is ρ_j = α₀/β₀ = d/σ_w²."""
    d = 35
    ard = ARD(alpha0=4.0, beta0=4.0 / d, N=512)
    assert ard.precision(1.0 / d) == pytest.approx(d, rel=1e-14)
    pop = PopulationParity(net(d, 2, kappa=1e6), 1.0, ard)
    from solvers.core.newton import newton
    from solvers.core.options import SolverOptions

    res = newton(pop.residual, np.array([0.9, math.log(20.0), math.log(50.0)]), SolverOptions(), jacobian=pop.jacobian)
    assert res.converged
    # The weak hyperprior makes this fixed point nearly marginal (dρ_new/dρ = N/(N + 2α₀)): the moments'
    # quadrature error (~5e-5) is amplified N/(2α₀) = 64 times.
    np.testing.assert_allclose(np.exp(res.x[1:]), [d, d], rtol=1e-2)


def test_pinned_precisions_equal_plain_mf() -> None:
    """MF-ARD with ρ_j = d/σ_w² pinned is plain MF: the same law, the same t-equation and free entropy part."""
    d = 35
    plain = PopulationParity(net(d, 2), 1.0, None)
    ard = PopulationParity(net(d, 2), 1.0, ARD(alpha0=4.0, beta0=4.0 / d, N=512))
    for t in (0.3, 0.9):
        a, b = plain.residual(np.array([t])), ard.residual(np.array([t, math.log(d), math.log(d)]))
        assert a[0] == pytest.approx(b[0], rel=1e-10)
        assert plain.state(np.array([t])).log_Z == pytest.approx(
            ard.state(np.array([t, math.log(d), math.log(d)])).log_Z, rel=1e-10)


def test_orbit_reduced_rules_equal_full_tensor_rules() -> None:
    from solvers.theories.mean_field_ard.wells import gh_hyperoctahedral_orbits, gh_permutation_orbits, gh_tensor

    f = lambda z: np.exp(-0.3 * np.sum(z**2, axis=1)) * (1 + np.sum(z**2, axis=1) ** 2)  # noqa: E731
    for n, dim in itertools.product((3, 5, 7), (2, 3)):
        zt, lt = gh_tensor((n,) * dim)
        full = float(np.exp(lt) @ f(zt))
        zp, lp = gh_permutation_orbits(n, dim)
        zh, lh = gh_hyperoctahedral_orbits(n, dim)
        assert float(np.exp(lp) @ f(zp)) == pytest.approx(full, rel=1e-12)
        assert float(np.exp(lh) @ f(zh)) == pytest.approx(full, rel=1e-12)


@pytest.mark.slow
def test_finite_p_closure_against_kernel_ridge_regression() -> None:
    """N → ∞ (the prior's law): the EK closure of the reduced solver against KRR with the exact arc-cosine
    kernel on sampled hypercube data (8 data sets; the closure and the central-limit spectrum are the
    approximations, so the tolerance is a few per cent, not standard errors)."""
    from solvers.core.options import SolverOptions
    from solvers.theories import get
    from tests.payloads import solve_json

    th = get("mean_field_ard")
    d, k, P, kappa = 16, 2, 300, 0.1
    out = solve_json(th, th.spec_model.model_validate({"theory": "mean_field_ard", "d": d, "N": 10**8, "kappa": kappa,
                                                 "P": P, "target": {"kind": "parity", "k": k}}), SolverOptions())
    rng = np.random.default_rng(0)

    def arccos(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        nx, ny = np.linalg.norm(X, axis=1), np.linalg.norm(Y, axis=1)
        th_ = np.arccos(np.clip(X @ Y.T / np.outer(nx, ny), -1, 1))
        return np.outer(nx, ny) / (2 * np.pi * d) * (np.sin(th_) + (np.pi - th_) * np.cos(th_))

    test, train, overlap = [], [], []
    for _ in range(8):
        X, Xt = rng.choice([-1.0, 1.0], (P, d)), rng.choice([-1.0, 1.0], (3000, d))
        y, yt = X[:, :k].prod(1), Xt[:, :k].prod(1)
        alpha = np.linalg.solve(arccos(X, X) + kappa**2 * P * np.eye(P), y)
        ft, f = arccos(Xt, X) @ alpha, arccos(X, X) @ alpha
        test.append(np.mean((yt - ft) ** 2))
        train.append(np.mean((y - f) ** 2))
        overlap.append(np.mean(ft * yt))
    assert out["observables"]["test_mse"] == pytest.approx(np.mean(test), rel=0.02)
    assert out["observables"]["train_mse"] == pytest.approx(np.mean(train), rel=0.03)
    assert out["order_parameters"]["m_S"] == pytest.approx(np.mean(overlap), rel=0.08)


@pytest.mark.parametrize("activation", ["relu", "erf", "tanh"])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_centre_well_closed_forms_equal_the_general_local_expansion(activation: str, k: int) -> None:
    """At w_S = 0 the centre's moments (E[c], E[c x], E[c x xᵀ] times one smoothing per order) give the same
    Ũ, gradient and Hessian as the per-point expansion over the 2^k cube points."""
    net = Network(d=20, k=k, N=64.0, gamma=0.5, kappa=0.07, sigma_a2=1.3, activation=Activation(activation))
    pot = ParityPotential.gaussian(net, 0.6, 20.0, 25.0)
    for u in (-3.0, -0.2, 1.1):
        y = np.zeros(k + 1)
        y[k] = u
        U, g, H = pot.local(y)
        Uc, gc, Hc = pot.local_center(u)
        assert Uc == pytest.approx(U, rel=1e-13, abs=1e-13)
        np.testing.assert_allclose(gc, g, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(Hc, H, rtol=1e-12, atol=1e-12 * np.max(np.abs(H)))


def finite_p_overlap(P: int | None) -> float:
    """m_S of plain MF at d = 8, k = 2, N = 64, κ = 0.05: P training points, or the population limit (None)."""
    from solvers.core.options import SolverOptions
    from solvers.theories import get

    th = get("mean_field_ard")
    spec = {"theory": "mean_field_ard", "model": "mf", "d": 8, "N": 64, "kappa": 0.05,
            "target": {"kind": "parity", "k": 2}} | ({"P": P} if P is not None else {})
    b = th.solve(th.spec_model.model_validate(spec), SolverOptions()).equilibrium_branch
    assert b is not None and b.converged
    return float(b.report.order_parameters["m_S"])


def test_finite_p_with_fewer_irrelevant_coordinates_than_resolved_chaos_orders() -> None:
    """d − k = 6 < J_MAX = 12: the blocks j > d − k have no hypercube modes (C(6, j) = 0); the closure must not
    divide by them (it raised on a NaN before). Against the population solve, which has no closure: at P = 10⁶
    the finite-P m_S is the population's to 10⁻⁴ (measured 10⁻⁵), its deficit falls as 1/P (P·Δm the same at
    P = 10⁴ and 10⁶ to 2 %), and at P = 100 it is the 1/P extrapolation from P = 10⁴ to 1.5 % (measured 0.4 %:
    the O(1/P²) term; 0.480 against 0.482, population 0.534)."""
    m_inf = finite_p_overlap(None)
    m4, m6, m2 = finite_p_overlap(10**4), finite_p_overlap(10**6), finite_p_overlap(100)
    assert m6 == pytest.approx(m_inf, rel=1e-4)
    slope = 1e4 * (m_inf - m4)
    assert 1e6 * (m_inf - m6) == pytest.approx(slope, rel=2e-2)
    assert m2 == pytest.approx(m_inf - slope / 100, rel=1.5e-2)
