"""Deep networks: the vanilla recursion against an exact deep-linear posterior, the T = 0 polynomial,
and the nested recursion against the vanilla one where they must coincide."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.theories.kernel_renormalization import THEORY
from solvers.theories.kernel_renormalization.model import Model
from tests.theories.test_kernel_renormalization_common import OPTIONS, arrays, make_spec, recipe_data, solve


def ref_deep_kernel(activation: str, X: np.ndarray, lambda0: float, lambda1: float, depth: int) -> np.ndarray:
    """K^(L) with K^(ℓ) = F_σ(K^(ℓ−1))/λ1 by the closed forms (one fresh implementation per layer)."""
    K = X @ X.T / (lambda0 * X.shape[1])
    for _ in range(depth):
        d = np.diagonal(K)
        if activation == "linear":
            F = K
        elif activation == "erf":
            F = 2 / np.pi * np.arcsin(np.clip(2 * K / np.sqrt(np.outer(1 + 2 * d, 1 + 2 * d)), -1, 1))
        else:
            cos = np.clip(K / np.sqrt(np.outer(d, d)), -1, 1)
            th = np.arccos(cos)
            F = np.sqrt(np.outer(d, d)) / (2 * np.pi) * (np.sin(th) + (np.pi - th) * cos)
        K = F / lambda1
    return K


@pytest.mark.parametrize("activation", ["erf", "relu", "linear"])
@pytest.mark.parametrize("depth", [2, 3])
def test_zero_temperature_polynomial(activation: str, depth: int) -> None:
    """T = 0: q^(L+1) − (1 − α) q^L − yᵀ[K^(L)]^(-1) y/N1 = 0 with all Q̄_ℓ = q."""
    X, y, Xt, yt = recipe_data()
    N1, lambda0, lambda1 = 20, 1.3, 0.9
    K = ref_deep_kernel(activation, X, lambda0, lambda1, depth)
    c, alpha = float(y @ np.linalg.solve(K, y)) / N1, len(y) / N1
    roots = np.roots([1.0, -(1 - alpha)] + [0.0] * (depth - 1) + [-c])
    q = float(max(r.real for r in roots if abs(r.imag) < 1e-9 and r.real > 0))
    out = solve(make_spec(arrays(X, y, Xt, yt), activation=activation, depth=depth, N1=N1, T=0.0,
                          lambda0=lambda0, lambda1=lambda1))
    assert np.allclose(out["order_parameters"]["Qbar"], q, rtol=1e-9)


def test_vanilla_stationary_points_are_symmetric_minima() -> None:
    spec = make_spec(arrays(*recipe_data()), activation="erf", depth=3, N1=25, T=0.05)
    out = solve(spec)
    q = np.array(out["order_parameters"]["Qbar"])
    assert np.allclose(q, q[0], rtol=1e-12)
    problem = THEORY.problem(spec, None, OPTIONS)
    x = np.log(q)
    J = problem.jacobian(x, 0.0)
    e = 1e-6
    fd = np.column_stack([(problem.F(x + e * v, 0.0) - problem.F(x - e * v, 0.0)) / (2 * e) for v in np.eye(3)])
    assert np.allclose(J, fd, rtol=1e-6, atol=1e-9)
    assert np.linalg.eigvalsh(J).min() > 0
    assert out["branches"][0]["stable"] is True


class ExactDeepLinear:
    """Two hidden linear layers of equal width N: f ~ N(0, q_v g C) given (q_v, g) with independent
    priors q_v = ‖v‖²/N, g = ‖W2ᵀv‖²/(N‖v‖²) ~ Gamma(N/2, 2/(λ1 N)); a 2-D quadrature is exact."""

    def __init__(self, X, y, Xt, lambda0, lambda1, T) -> None:
        n0 = X.shape[1]
        self.c, U = np.linalg.eigh(X @ X.T / (lambda0 * n0))
        self.y_t, self.k0 = U.T @ y, (Xt @ X.T / (lambda0 * n0)) @ U
        self.lambda1, self.T = lambda1, T

    def _log_density(self, l1, l2, N):
        qe = np.exp(l1 + l2)
        a = qe[..., None] * self.c + self.T
        prior = 0.5 * N * (l1 + l2) - 0.5 * self.lambda1 * N * (np.exp(l1) + np.exp(l2))
        return prior - 0.5 * np.log(a).sum(-1) - 0.5 * (self.y_t**2 / a).sum(-1)

    def averages(self, N: float) -> tuple[float, np.ndarray]:
        g = np.linspace(-3, 3, 301)
        v = self._log_density(*np.meshgrid(g, g, indexing="ij"), N)
        i, j = np.unravel_index(np.argmax(v), v.shape)
        w = 8 / np.sqrt(N) + 0.3
        L1, L2 = np.meshgrid(np.linspace(g[i] - w, g[i] + w, 501), np.linspace(g[j] - w, g[j] + w, 501), indexing="ij")
        lp = self._log_density(L1, L2, N)
        W = np.exp(lp - lp.max())
        W /= W.sum()
        qe = np.exp(L1 + L2)
        gamma = np.einsum("ij,ijt->t", W, qe[..., None] * np.einsum("tp,ijp->ijt", self.k0, self.y_t / (
            qe[..., None] * self.c + self.T)))
        return self.lambda1 * float((W * np.exp(L1)).sum()), gamma


def test_deep_linear_saddle_point_approaches_the_exact_posterior() -> None:
    X, y, Xt, yt = recipe_data()
    lambda0, lambda1, T = 1.0, 0.8, 0.1
    exact = ExactDeepLinear(X, y, Xt, lambda0, lambda1, T)
    widths = [10, 100, 300, 1000]
    gq, gm = [], []
    for N in widths:
        out = solve(make_spec(arrays(X, y, Xt, yt), activation="linear", depth=2, N1=N, T=T,
                              lambda0=lambda0, lambda1=lambda1))
        q_exact, mean_exact = exact.averages(N)
        gq.append(abs(out["order_parameters"]["Qbar"][0] - q_exact))
        gm.append(float(np.max(np.abs(np.array(out["observables"]["test_mean"]) - mean_exact))))
    for g in (np.array(gq), np.array(gm)):
        scaled = np.array(widths) * g
        assert scaled[-1] <= 1.25 * scaled[-2], g  # O(1/N): N·gap settles
        assert g[1] > g[2] > g[3], g
        assert g[-1] <= g[0] / 5, g


# ---- nested recursion ------------------------------------------------------------------------
def _nested_and_vanilla(activation: str, depth: int):
    spec = make_spec(arrays(*recipe_data()), activation=activation, depth=depth, N1=30, T=0.07,
                     lambda0=1.4, lambda1=0.6, deep_kernel="nested")
    model = Model(spec)
    return model.nested_action(model.settings), model.scalar_action(model.settings)


@pytest.mark.parametrize("activation", ["relu", "linear"])
def test_nested_equals_vanilla_for_homogeneous_activations(activation: str) -> None:
    nested, vanilla = _nested_and_vanilla(activation, 3)
    rng = np.random.default_rng(0)
    for _ in range(4):
        s = rng.normal(0, 0.4, 3)  # asymmetric points too: the actions agree everywhere
        assert nested.value(s) == pytest.approx(vanilla.value(s), rel=1e-11)
        assert np.allclose(nested.gradient(s), vanilla.gradient(s), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("activation", ["erf", "relu"])
def test_nested_gradient_is_the_derivative_of_the_nested_action(activation: str) -> None:
    nested, _ = _nested_and_vanilla(activation, 3)
    s = np.array([0.2, -0.3, 0.1])
    e = 1e-6
    fd = np.array([(nested.value(s + e * v) - nested.value(s - e * v)) / (2 * e) for v in np.eye(3)])
    assert np.allclose(nested.gradient(s), fd, rtol=1e-6, atol=1e-8)


def test_nested_erf_solution_differs_from_vanilla_and_is_a_minimum() -> None:
    base = dict(activation="erf", depth=2, N1=15, T=0.02, lambda0=0.5, lambda1=0.7)
    nested = solve(make_spec(arrays(*recipe_data()), deep_kernel="nested", **base))
    vanilla = solve(make_spec(arrays(*recipe_data()), deep_kernel="vanilla", **base))
    qn, qv = np.array(nested["order_parameters"]["Qbar"]), np.array(vanilla["order_parameters"]["Qbar"])
    assert not np.allclose(qn, qv, rtol=1e-3)
    assert nested["branches"][0]["stable"] is True
    assert "nested" in nested["diagnostics"]["action_form"]
    # the nested predictor is GP regression with the nested K_R: check against dense algebra
    X, y, Xt, _ = recipe_data()
    Z = np.vstack([X, Xt])
    K = Z @ Z.T / (base["lambda0"] * Z.shape[1])
    for q in qn:
        d = np.diagonal(K)
        K = q / base["lambda1"] * 2 / np.pi * np.arcsin(2 * K / np.sqrt(np.outer(1 + 2 * d, 1 + 2 * d)))
    P = len(y)
    mean = K[P:, :P] @ np.linalg.solve(K[:P, :P] + base["T"] * np.eye(P), y)
    assert np.allclose(nested["observables"]["test_mean"], mean, rtol=1e-8, atol=1e-10)
