"""Exact limits and identities of the one-hidden-layer theory, each computed independently of the solver.

The reference kernels here are written out again from their closed forms and every linear-algebra
reference is dense (solve / slogdet), never the solver's eigenbasis.
"""

from __future__ import annotations

import numpy as np
import pytest

from solvers.theories.kernel_renormalization import THEORY
from tests.theories.test_kernel_renormalization_common import OPTIONS, arrays, make_spec, qbar_of, recipe_data, solve

ACTIVATIONS = ["erf", "relu", "linear"]


def ref_kernel(activation: str, A: np.ndarray, B: np.ndarray, lambda0: float) -> np.ndarray:
    """E[σ(w·a/√N0) σ(w·b/√N0)], w ~ N(0, I/λ0), for rows a of A and b of B."""
    n0 = A.shape[1]
    caa = (A * A).sum(1)[:, None] / (lambda0 * n0)
    cbb = (B * B).sum(1)[None, :] / (lambda0 * n0)
    cab = A @ B.T / (lambda0 * n0)
    if activation == "linear":
        return cab
    if activation == "erf":
        return 2 / np.pi * np.arcsin(np.clip(2 * cab / np.sqrt((1 + 2 * caa) * (1 + 2 * cbb)), -1, 1))
    cos = np.clip(cab / np.sqrt(caa * cbb), -1, 1)
    th = np.arccos(cos)
    return np.sqrt(caa * cbb) / (2 * np.pi) * (np.sin(th) + (np.pi - th) * cos)


def dense_action(K: np.ndarray, y: np.ndarray, Q: float, T: float, N1: float, lambda1: float) -> float:
    A = T * np.eye(len(y)) + Q / lambda1 * K
    return Q - np.log(Q) + (np.linalg.slogdet(A)[1] + y @ np.linalg.solve(A, y)) / N1


def gp_regression(K, k0, k00, y, noise, prior_scale):
    """Plain GP regression with prior kernel prior_scale·K and noise variance ``noise``."""
    G = prior_scale * K + noise * np.eye(len(y))
    L = np.linalg.cholesky(G)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    v = np.linalg.solve(L, prior_scale * k0.T)
    return prior_scale * k0 @ alpha, prior_scale * k00 - (v * v).sum(0)


@pytest.fixture(scope="module")
def data():
    return recipe_data()


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_infinite_width_is_gp_regression_with_kernel_K_over_lambda1(data, activation: str) -> None:
    X, y, Xt, yt = data
    lambda0, lambda1, T = 1.7, 0.6, 0.2
    K = ref_kernel(activation, X, X, lambda0)
    k0 = ref_kernel(activation, Xt, X, lambda0)
    k00 = np.diagonal(ref_kernel(activation, Xt, Xt, lambda0))
    mean, var = gp_regression(K, k0, k00, y, T, 1 / lambda1)
    eps_gp = float(np.mean((yt - mean) ** 2 + var))
    wide = solve(make_spec(arrays(*data), activation=activation, N1=10**9, T=T, lambda0=lambda0, lambda1=lambda1))
    assert qbar_of(wide) == pytest.approx(1.0, abs=1e-6)
    assert np.allclose(wide["observables"]["test_mean"], mean, rtol=1e-6, atol=1e-8)
    assert np.allclose(wide["observables"]["test_variance"], var, rtol=1e-6, atol=1e-8)
    # the NNGP error of any finite network is the same regression, exactly
    narrow = solve(make_spec(arrays(*data), activation=activation, N1=7, T=T, lambda0=lambda0, lambda1=lambda1))
    assert narrow["observables"]["generalization_error_nngp"] == pytest.approx(eps_gp, rel=1e-10)
    # with Q̄ ≠ 1 the predictor is the same regression with prior (Q̄/λ1) K
    q = qbar_of(narrow)
    mean_q, var_q = gp_regression(K, k0, k00, y, T, q / lambda1)
    assert np.allclose(narrow["observables"]["test_mean"], mean_q, rtol=1e-9, atol=1e-11)
    assert np.allclose(narrow["observables"]["test_variance"], var_q, rtol=1e-9, atol=1e-11)
    assert narrow["observables"]["generalization_error"] == pytest.approx(
        float(np.mean((yt - mean_q) ** 2 + var_q)), rel=1e-10
    )
    # training error: posterior ⟨(y − f)²⟩ on the training set, from the dense posterior of f(X)
    KR = q / lambda1 * K
    G = np.linalg.solve(KR + T * np.eye(len(y)), np.column_stack([y, KR]))
    f_mean, f_cov = KR @ G[:, 0], KR - KR @ G[:, 1:]
    assert narrow["observables"]["train_error"] == pytest.approx(
        float(np.mean((y - f_mean) ** 2 + np.diagonal(f_cov))), rel=1e-9
    )


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("N1", [10, 30, 300])
def test_zero_temperature_closed_form(data, activation: str, N1: int) -> None:
    X, y, _, _ = data
    lambda1 = 0.5
    K = ref_kernel(activation, X, X, 2.0)
    alpha = len(y) / N1
    c = lambda1 * float(y @ np.linalg.solve(K, y)) / N1
    closed = ((1 - alpha) + np.sqrt((1 - alpha) ** 2 + 4 * c)) / 2
    at_zero = solve(make_spec(arrays(*data), activation=activation, N1=N1, T=0.0, lambda0=2.0, lambda1=lambda1))
    assert qbar_of(at_zero) == pytest.approx(closed, rel=1e-10)
    cold = solve(make_spec(arrays(*data), activation=activation, N1=N1, T=1e-8, lambda0=2.0, lambda1=lambda1))
    kappa_min = np.linalg.eigvalsh(K / lambda1).min()
    assert qbar_of(cold) == pytest.approx(closed, rel=50 * 1e-8 / kappa_min)
    # T = 0: the mean predictor is kernel interpolation and the training error vanishes
    assert at_zero["observables"]["train_error"] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_residual_and_hessian_are_derivatives_of_the_action(data, activation: str) -> None:
    X, y, _, _ = data
    N1, T, lambda0, lambda1 = 23, 0.3, 0.8, 1.9
    spec = make_spec(arrays(*data), activation=activation, N1=N1, T=T, lambda0=lambda0, lambda1=lambda1)
    problem = THEORY.problem(spec, None, OPTIONS)
    K = ref_kernel(activation, X, X, lambda0)
    for Q in [0.05, 0.7, 1.0, 1.6, 12.0]:
        h = 1e-6 * Q
        dS = (dense_action(K, y, Q + h, T, N1, lambda1) - dense_action(K, y, Q - h, T, N1, lambda1)) / (2 * h)
        # the residual is ∂S/∂log Q̄ = Q̄ dS/dQ̄ weighted by 1/(1 + Q̄) (same roots, O(1) for any Q̄)
        residual = float(problem.F(np.array([np.log(Q)]), 0.0)[0])
        assert residual * (1 + Q) == pytest.approx(Q * dS, rel=1e-6, abs=1e-8)
        s, e = np.log(Q), 1e-5
        fd = (problem.F(np.array([s + e]), 0.0)[0] - problem.F(np.array([s - e]), 0.0)[0]) / (2 * e)
        assert problem.jacobian(np.array([s]), 0.0)[0, 0] == pytest.approx(fd, rel=1e-6, abs=1e-8)
        assert -problem.free_entropy(np.array([s]), 0.0) == pytest.approx(
            dense_action(K, y, Q, T, N1, lambda1), rel=1e-12
        )


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_fixed_point_form_holds_at_the_root(data, activation: str) -> None:
    X, y, _, _ = data
    N1, T, lambda1 = 40, 0.05, 1.3
    res = solve(make_spec(arrays(*data), activation=activation, N1=N1, T=T, lambda1=lambda1))
    Q = qbar_of(res)
    A = T * np.eye(len(y)) + Q / lambda1 * ref_kernel(activation, X, X, 1.0)
    Ai_y = np.linalg.solve(A, y)
    rhs = 1 - len(y) / N1 + T / N1 * np.trace(np.linalg.inv(A)) + y @ Ai_y / N1 - T / N1 * Ai_y @ Ai_y
    assert pytest.approx(rhs, rel=1e-11) == Q


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_priors_enter_through_their_product_only_for_homogeneous_activations(data, activation: str) -> None:
    base = solve(make_spec(arrays(*data), activation=activation, N1=30, T=0.1, lambda0=1.0, lambda1=1.0))
    moved = solve(make_spec(arrays(*data), activation=activation, N1=30, T=0.1, lambda0=2.0, lambda1=0.5))
    same = np.isclose(qbar_of(base), qbar_of(moved), rtol=1e-9, atol=0)
    assert same == (activation != "erf")
    if same:
        for key in ("generalization_error", "generalization_error_nngp", "train_error"):
            assert moved["observables"][key] == pytest.approx(base["observables"][key], rel=1e-9)
        assert np.allclose(moved["observables"]["test_mean"], base["observables"]["test_mean"], rtol=1e-9)
    else:
        assert abs(qbar_of(base) - qbar_of(moved)) > 1e-3


def test_high_temperature_expansion(data) -> None:
    """T → ∞: Q̄ = 1 − Tr K/(λ1 N1 T) + O(T^-2)."""
    X, _, _, _ = data
    N1, lambda1 = 30, 0.7
    trK = np.trace(ref_kernel("erf", X, X, 1.0))
    for T in [1e3, 1e4]:
        q = qbar_of(solve(make_spec(arrays(*data), N1=N1, T=T, lambda1=lambda1)))
        assert q - (1 - trK / (lambda1 * N1 * T)) == pytest.approx(0.0, abs=20 * (trK / lambda1) ** 2 / T**2)


def test_class_distance_limits(data) -> None:
    """T → 0: Δ1 → −uᵀKu and Δ2 → 4λ1/Q̄ (±1 labels); T → ∞: T Δ1 → −(Q̄/λ1) uᵀK²u, T² Δ2 → (Q̄/λ1)(uᵀKy)²."""
    X, y, _, _ = data
    lambda0, lambda1, N1 = 1.4, 0.8, 30
    K = ref_kernel("erf", X, X, lambda0)
    u = np.where(y > 0, 1 / np.sum(y > 0), -1 / np.sum(y < 0))
    cold = solve(make_spec(arrays(*data), N1=N1, T=1e-10, lambda0=lambda0, lambda1=lambda1))
    cd, q = cold["observables"]["class_distance"], qbar_of(cold)
    assert cd["D2_nngp"] == pytest.approx(u @ K @ u, rel=1e-10)
    assert cd["delta1"] == pytest.approx(-(u @ K @ u), rel=1e-5)
    assert cd["delta2"] == pytest.approx(4 * lambda1 / q, rel=1e-5)
    assert cd["D2"] == pytest.approx(cd["D2_nngp"] + (cd["delta1"] + cd["delta2"]) / N1, rel=1e-12)
    T = 1e6
    hot = solve(make_spec(arrays(*data), N1=N1, T=T, lambda0=lambda0, lambda1=lambda1))
    cd, q = hot["observables"]["class_distance"], qbar_of(hot)
    assert T * cd["delta1"] == pytest.approx(-(q / lambda1) * (u @ K @ K @ u), rel=1e-4)
    assert T**2 * cd["delta2"] == pytest.approx((q / lambda1) * (u @ K @ y) ** 2, rel=1e-4)
