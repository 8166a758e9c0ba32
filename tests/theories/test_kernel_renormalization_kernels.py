"""NNGP kernels against Monte Carlo over Gaussian weights, and their derivatives against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.theories.kernel_renormalization.kernels import (
    activation_function,
    activation_mean,
    derivative_mean,
    input_covariance,
    propagate,
    propagate_train_tangent,
)

ACTIVATIONS = ["erf", "relu", "linear"]


def _inputs(seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((5, 4))
    X[1] = 0.8 * X[0] + 0.3 * X[1]  # a strongly correlated pair
    X[2] *= 2.5  # a large-norm input
    return X, rng.standard_normal((3, 4))


def _joint(blocks) -> tuple[np.ndarray, np.ndarray]:
    """Train block and test-train block stacked as rows of one (P + P_test) × P matrix, plus test diagonal."""
    return np.vstack([blocks.train, blocks.cross]), blocks.test_diag


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_one_layer_kernel_matches_monte_carlo(activation: str) -> None:
    lambda0 = 0.7
    X, Xt = _inputs()
    K = propagate(activation, input_covariance(X, Xt, lambda0))
    rng = np.random.default_rng(11)
    n = 400_000
    W = rng.standard_normal((n, X.shape[1])) / np.sqrt(lambda0)  # w ~ N(0, 1/λ0)
    sigma = activation_function(activation)
    phi = sigma(np.vstack([X, Xt]) @ W.T / np.sqrt(X.shape[1]))  # (P + P_test, n)
    P = X.shape[0]
    mc = phi @ phi[:P].T / n
    se = np.sqrt(np.maximum((phi**2) @ (phi[:P] ** 2).T / n - mc**2, 0.0) / n)
    want, test_diag = _joint(K)
    assert np.all(np.abs(mc - want) <= 5 * se + 1e-12)
    mc_diag = np.mean(phi[P:] ** 2, axis=1)
    se_diag = np.std(phi[P:] ** 2, axis=1) / np.sqrt(n)
    assert np.all(np.abs(mc_diag - test_diag) <= 5 * se_diag + 1e-12)


def test_relu_diagonal_is_half_the_variance() -> None:
    X, Xt = _inputs()
    C = input_covariance(X, Xt, 1.3)
    K = propagate("relu", C)
    assert np.allclose(np.diagonal(K.train), np.diagonal(C.train) / 2, rtol=1e-15, atol=0)
    assert np.allclose(K.test_diag, C.test_diag / 2, rtol=1e-15, atol=0)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_one_point_functions_match_monte_carlo(activation: str) -> None:
    c = np.array([0.05, 0.5, 1.0, 3.0])
    h = np.random.default_rng(5).standard_normal((200_000, 1)) * np.sqrt(c)
    sigma = activation_function(activation)
    mean_mc, mean_se = sigma(h).mean(0), sigma(h).std(0) / np.sqrt(h.shape[0])
    assert np.all(np.abs(mean_mc - activation_mean(activation, c)) <= 5 * mean_se + 1e-12)
    # Stein's lemma: E[σ'(h)] = E[h σ(h)]/c, an estimator that needs no derivative of σ
    stein = (h * sigma(h)) / c
    slope_mc, slope_se = stein.mean(0), stein.std(0) / np.sqrt(h.shape[0])
    assert np.all(np.abs(slope_mc - derivative_mean(activation, c)) <= 5 * slope_se + 1e-12)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_two_layer_recursion_matches_monte_carlo(activation: str) -> None:
    """K^(2) = F(F(C)/λ1): sample a wide first layer, then second-layer pre-activations given it."""
    lambda0, lambda1 = 1.2, 0.8
    X, Xt = _inputs()
    Z = np.vstack([X, Xt])
    C = input_covariance(X, Xt, lambda0)
    want = propagate(activation, propagate(activation, C).scaled(1 / lambda1))
    sigma = activation_function(activation)
    rng = np.random.default_rng(21)
    P, batches, n = X.shape[0], 12, 50_000
    estimates = []
    for _ in range(batches):
        W1 = rng.standard_normal((n, Z.shape[1])) / np.sqrt(lambda0)
        phi1 = sigma(Z @ W1.T / np.sqrt(Z.shape[1]))
        # given the first layer, second-layer pre-activations are exactly N(0, K̂1/λ1), K̂1 = φ1φ1ᵀ/n
        cov = phi1 @ phi1.T / n / lambda1
        L = np.linalg.cholesky(cov + 1e-12 * np.eye(cov.shape[0]))
        phi2 = sigma(L @ rng.standard_normal((Z.shape[0], n)))
        estimates.append(np.hstack([phi2 @ phi2[:P].T / n, np.mean(phi2**2, axis=1)[:, None]]))
    est = np.array(estimates)
    mean, se = est.mean(0), est.std(0, ddof=1) / np.sqrt(batches)
    joint, test_diag = _joint(want)
    assert np.all(np.abs(mean[:, :P] - joint) <= 5 * se[:, :P] + 2e-3 * np.abs(joint).max())
    assert np.all(np.abs(mean[P:, P] - test_diag) <= 5 * se[P:, P] + 2e-3 * np.abs(test_diag).max())


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_layer_tangent_matches_finite_differences(activation: str) -> None:
    X, Xt = _inputs()
    C = input_covariance(X, Xt, 0.9).train
    rng = np.random.default_rng(2)
    D = rng.standard_normal(C.shape)
    D = D + D.T
    h = 1e-6

    def F(c: np.ndarray) -> np.ndarray:
        from solvers.theories.kernel_renormalization.kernels import KernelBlocks

        return propagate(activation, KernelBlocks(c, np.zeros((0, c.shape[0])), np.zeros(0))).train

    fd = (F(C + h * D) - F(C - h * D)) / (2 * h)
    assert np.allclose(propagate_train_tangent(activation, C, D), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_homogeneity_of_the_layer_map(activation: str) -> None:
    X, Xt = _inputs()
    C = input_covariance(X, Xt, 1.0)
    K1, K3 = propagate(activation, C), propagate(activation, C.scaled(3.0))
    homogeneous = np.allclose(K3.train, 3.0 * K1.train, rtol=1e-12)
    assert homogeneous == (activation != "erf")
