"""The two-order-parameter (mean-corrected) ReLU action S(Q̄, Q).

Checked against: the dense formula of the note, its own finite differences, the m = 0 reduction to
the one-variable action, and an exactly solvable non-zero-mean network (affine activation
σ(h) = h + c, whose posterior is a 2-D integral over the readout's mean and norm).
"""

from __future__ import annotations

import numpy as np
import pytest

from solvers.theories.kernel_renormalization.kernels import KernelBlocks
from solvers.theories.kernel_renormalization.mean_action import MeanCorrectedAction
from solvers.theories.kernel_renormalization.model import Model
from solvers.theories.kernel_renormalization.observables import Posterior
from solvers.theories.kernel_renormalization.scalar_action import ScalarAction
from solvers.theories.kernel_renormalization.spectrum import spectrum_of
from tests.theories.test_kernel_renormalization_common import arrays, make_spec, qbar_of, recipe_data, solve
from tests.theories.test_kernel_renormalization_limits import ref_kernel

SETTINGS = dict(activation="relu", N1=25, T=0.2, lambda0=1.3, lambda1=0.7)


def _dense_parts(Q: float, Qbar: float):
    X, y, _, _ = recipe_data()
    l0, l1, T, N1 = SETTINGS["lambda0"], SETTINGS["lambda1"], SETTINGS["T"], SETTINGS["N1"]
    K = ref_kernel("relu", X, X, l0)
    m = np.sqrt((X * X).sum(1) / (l0 * X.shape[1]) / (2 * np.pi))
    KR = Qbar / l1 * K - (Qbar - 1 / (1 + Q)) * np.outer(m, m) / l1
    A = T * np.eye(len(y)) + KR
    S = -Qbar * Q + np.log(1 + Q) + (np.linalg.slogdet(A)[1] + y @ np.linalg.solve(A, y)) / N1
    return S, KR, A, K, m


def _model() -> Model:
    return Model(make_spec(arrays(*recipe_data()), relu_mean_correction=True, **SETTINGS))


def test_action_matches_the_dense_formula() -> None:
    model = _model()
    act = model.mean_action(model.settings)
    for Qbar, Q in [(1.0, 0.0), (0.6, 0.9), (1.8, -0.3), (1.2, 2.5)]:
        S, *_ = _dense_parts(Q, Qbar)
        assert act.value(np.array([np.log(Qbar), np.log1p(Q)])) == pytest.approx(S, rel=1e-12)


def test_gradient_and_hessian_are_derivatives_of_the_action() -> None:
    model = _model()
    act = model.mean_action(model.settings)
    e = 1e-6
    for x in [np.array([0.1, -0.2]), np.array([-0.5, 0.4]), np.array([0.3, 0.3])]:
        g = np.array([(act.value(x + e * v) - act.value(x - e * v)) / (2 * e) for v in np.eye(2)])
        assert np.allclose(act.gradient(x), g, rtol=1e-6, atol=1e-9)
        H = np.column_stack([(act.gradient(x + e * v) - act.gradient(x - e * v)) / (2 * e) for v in np.eye(2)])
        assert np.allclose(act.hessian(x), H, rtol=1e-6, atol=1e-8)


def test_zero_mean_reduces_to_the_one_variable_action() -> None:
    rng = np.random.default_rng(1)
    beta, y_t = rng.uniform(0.01, 3, 40), rng.standard_normal(40)
    mc = MeanCorrectedAction(beta, np.zeros(40), y_t, 0.8, 0.3, 17.0)
    sc = ScalarAction(0.8 * beta, y_t**2, 0.3, 17.0, 1)
    (root,) = mc.stationary_points()
    (s,) = sc.stationary_points()
    assert root[0] == pytest.approx(s, abs=1e-12)
    assert root[1] == pytest.approx(-s, abs=1e-12)  # 1/(1 + Q) = Q̄
    assert mc.value(root) == pytest.approx(sc.value(np.array([s])) - 1.0, rel=1e-12)


def test_solver_end_to_end() -> None:
    out = solve(make_spec(arrays(*recipe_data()), relu_mean_correction=True, **SETTINGS))
    vanilla = solve(make_spec(arrays(*recipe_data()), **SETTINGS))
    assert out["branches"][0]["stable"] is True and out["equilibrium"] == "renormalized"
    Qbar, Q = out["order_parameters"]["Qbar"], out["order_parameters"]["Q"]
    S, _, A, _, m = _dense_parts(Q, Qbar)
    # stationary in both variables of the dense action
    e = 1e-6
    assert (_dense_parts(Q, Qbar + e)[0] - _dense_parts(Q, Qbar - e)[0]) / (2 * e) == pytest.approx(0, abs=1e-7)
    assert (_dense_parts(Q + e, Qbar)[0] - _dense_parts(Q - e, Qbar)[0]) / (2 * e) == pytest.approx(0, abs=1e-7)
    assert out["observables"]["action"] == pytest.approx(S, rel=1e-12)
    # predictions are GP regression with the corrected K_R
    X, y, Xt, _ = recipe_data()
    l0, l1 = SETTINGS["lambda0"], SETTINGS["lambda1"]
    m0 = np.sqrt((Xt * Xt).sum(1) / (l0 * Xt.shape[1]) / (2 * np.pi))
    k0R = Qbar / l1 * ref_kernel("relu", Xt, X, l0) - (Qbar - 1 / (1 + Q)) * np.outer(m0, m) / l1
    assert np.allclose(out["observables"]["test_mean"], k0R @ np.linalg.solve(A, y), rtol=1e-9, atol=1e-11)
    # at Q̄ = 1, Q = 0 both actions give the same NNGP kernel K/λ1, computed in different eigenbases
    assert out["observables"]["generalization_error_nngp"] == pytest.approx(
        vanilla["observables"]["generalization_error_nngp"], rel=1e-10
    )
    # the correction moves Q̄ only at O(1/N1) here (see the docs), and never by a lot
    assert abs(Qbar - qbar_of(vanilla)) < 1 / SETTINGS["N1"]


class ExactAffine:
    """σ(h) = h + c: given v, f ~ N(c r 1, q C) exactly, r = Σv_i/√N1, q = ‖v‖²/N1 = (r² + z)/N1,
    r ~ N(0, 1/λ1), z = ‖v_⊥‖² ~ Gamma((N1 − 1)/2, 2/λ1) independent. Posterior: 2-D quadrature."""

    def __init__(self, X, y, Xt, c: float, lambda1: float, T: float) -> None:
        n0 = X.shape[1]
        self.cv, U = np.linalg.eigh(X @ X.T / n0)
        self.y_t, self.one_t, self.k0 = U.T @ y, U.T @ np.ones(len(y)), (Xt @ X.T / n0) @ U
        self.c, self.lambda1, self.T = c, lambda1, T

    def averages(self, N1: float) -> tuple[float, np.ndarray]:
        lam, c = self.lambda1, self.c
        r = np.linspace(-7, 7, 281) / np.sqrt(lam)
        centre = np.log((N1 - 1) / lam)
        lz = np.linspace(centre - 10 / np.sqrt(N1) - 0.3, centre + 10 / np.sqrt(N1) + 0.3, 281)
        R, LZ = np.meshgrid(r, lz, indexing="ij")
        q = (R**2 + np.exp(LZ)) / N1
        a = q[..., None] * self.cv + self.T
        res = self.y_t - c * R[..., None] * self.one_t
        lp = -0.5 * np.log(a).sum(-1) - 0.5 * (res**2 / a).sum(-1) - lam * R**2 / 2 + (N1 - 1) / 2 * LZ
        lp -= lam * np.exp(LZ) / 2
        W = np.exp(lp - lp.max())
        W /= W.sum()
        mean = c * R[..., None] + q[..., None] * np.einsum("tp,ijp->ijt", self.k0, res / a)
        return lam * float((W * q).sum()), np.einsum("ij,ijt->t", W, mean)


def test_mean_corrected_action_approaches_an_exact_non_zero_mean_network() -> None:
    rng = np.random.default_rng(0)
    P, N0, Pt = 16, 24, 4
    X, Xt = rng.standard_normal((P, N0)), rng.standard_normal((Pt, N0))
    y = np.sign(X @ rng.standard_normal(N0)) + 1.0  # unbalanced labels load the mean mode
    c, lambda1, T = 1.0, 0.5, 0.5
    exact = ExactAffine(X, y, Xt, c, lambda1, T)
    # the same network in the theory's language: K − m mᵀ = C, m = c·1, K_R = (Q̄/λ1) C + m mᵀ/(λ1 (1 + Q))
    C = KernelBlocks(X @ X.T / N0, Xt @ X.T / N0, (Xt * Xt).sum(1) / N0)
    K = KernelBlocks(C.train + c * c, C.cross + c * c, C.test_diag + c * c)
    sp = spectrum_of(K, y, np.zeros(Pt), mean=(c * np.ones(P), c * np.ones(Pt)))
    assert sp.m_t is not None
    widths = [12, 40, 120, 400]
    gq, gm = [], []
    for N1 in widths:
        act = MeanCorrectedAction(sp.kappa, sp.m_t, sp.y_t, 1 / lambda1, T, float(N1))
        (x,) = act.stationary_points()
        assert act.stability(x) > 0
        mean, _ = Posterior(sp, np.exp(x[0]) / lambda1, np.exp(-x[1]) / lambda1, T).predictive()
        q_exact, mean_exact = exact.averages(N1)
        gq.append(abs(np.exp(x[0]) - q_exact))
        gm.append(float(np.max(np.abs(mean - mean_exact))))
    for g in (np.array(gq), np.array(gm)):
        scaled = np.array(widths) * g
        assert scaled[-1] <= 1.3 * scaled[-2], g  # O(1/N1)
        assert g[-1] <= g[0] / 8, g
