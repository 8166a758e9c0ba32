"""Linear activation: the saddle point against the exact finite-width posterior.

For σ(h) = h and fixed readout v, f(X) ~ N(0, q C) exactly with q = ‖v‖²/N1, whose prior density is
∝ q^(N1/2 − 1) e^(−λ1 N1 q/2). So the exact posterior is a 1-D integral over q, and every observable
is exact at fixed q by Gaussian conditioning. Those fixed-q formulas are checked first against the
full weight-space Gaussian posterior of a tiny network (machine precision); then the q-average is
compared with the saddle point, whose gap must shrink like 1/N1.
"""

from __future__ import annotations

import numpy as np
import pytest

from solvers.theories.kernel_renormalization import THEORY
from tests.theories.test_kernel_renormalization_common import arrays, make_spec, qbar_of, recipe_data, solve


# ---- fixed q: weight-space Gaussian posterior of a tiny linear network -------------------------
def test_fixed_q_observables_equal_the_weight_space_posterior() -> None:
    rng = np.random.default_rng(7)
    P, N0, N1, Pt = 6, 4, 3, 2
    lambda0, lambda1, T = 1.3, 0.7, 0.3
    X, Xt = rng.standard_normal((P, N0)), rng.standard_normal((Pt, N0))
    y = np.array([1.0, -1.0, 1.0, 1.0, -1.0, -1.0])
    v = rng.standard_normal(N1)
    q = float(v @ v) / N1

    # f(x) = Σ_i v_i w_i·x/√(N0 N1) = Φ vec(W); prior vec(W) ~ N(0, I/λ0); likelihood N(y; f, T)
    def design(Z: np.ndarray) -> np.ndarray:
        return np.einsum("i,mk->mik", v, Z).reshape(Z.shape[0], N1 * N0) / np.sqrt(N0 * N1)

    Phi, Phi0 = design(X), design(Xt)
    cov = np.linalg.inv(lambda0 * np.eye(N1 * N0) + Phi.T @ Phi / T)
    mean = cov @ Phi.T @ y / T
    pred_mean, pred_var = Phi0 @ mean, np.einsum("ij,jk,ik->i", Phi0, cov, Phi0)
    W_mean, W_cov = mean.reshape(N1, N0), cov.reshape(N1, N0, N1, N0)
    ww = (np.einsum("ih,ik->hk", W_mean, W_mean) + np.einsum("ihik->hk", W_cov)) / N1  # unit-averaged ⟨w wᵀ⟩
    ww_mean_part = np.einsum("ih,ik->hk", W_mean, W_mean) / N1
    # feature kernel K̂ = (1/N1) Σ_i h_i h_iᵀ with h_i = X w_i/√N0
    Khat = X @ ww @ X.T / N0
    u = np.where(y > 0, 1 / np.sum(y > 0), -1 / np.sum(y < 0))
    D2_exact = float(u @ Khat @ u)

    spec = make_spec(arrays(X, y, Xt, np.zeros(Pt)), activation="linear", N1=N1, T=T, lambda0=lambda0, lambda1=lambda1)
    obs = THEORY.problem(spec).report(np.array([np.log(lambda1 * q)]), 0.0).observables
    assert np.allclose(obs["test_mean"], pred_mean, rtol=1e-12, atol=1e-14)
    assert np.allclose(obs["test_variance"], pred_var, rtol=1e-11, atol=1e-14)
    assert obs["class_distance"]["D2"] == pytest.approx(D2_exact, rel=1e-12)
    wc = obs["weight_correlations"]
    Lambda = lambda0 * ww - np.eye(N0)  # = Λ1 + Λ2
    assert wc["trace_lambda2"] == pytest.approx(lambda0 * np.trace(ww_mean_part), rel=1e-11)
    assert wc["trace_lambda1"] + wc["trace_lambda2"] == pytest.approx(np.trace(Lambda), rel=1e-11)
    eig = np.linalg.eigvalsh(Lambda)
    assert wc["max_eigenvalue"] == pytest.approx(eig[-1], rel=1e-10)
    assert wc["min_eigenvalue"] == pytest.approx(eig[0], rel=1e-10)


# ---- the exact posterior over q ----------------------------------------------------------------
class ExactLinear:
    """Exact finite-N1 averages for the linear network, by quadrature over log q (independent code)."""

    def __init__(self, X, y, Xt, yt, lambda0: float, lambda1: float, T: float) -> None:
        N0 = X.shape[1]
        C = X @ X.T / (lambda0 * N0)
        self.c, U = np.linalg.eigh(C)
        self.y_t, self.k0 = U.T @ y, (Xt @ X.T / (lambda0 * N0)) @ U
        self.c00 = np.einsum("ij,ij->i", Xt, Xt) / (lambda0 * N0)
        self.yt, self.lambda0, self.lambda1, self.T, self.N0 = yt, lambda0, lambda1, T, N0
        u = np.where(y > 0, 1 / np.sum(y > 0), -1 / np.sum(y < 0))
        self.u_t, self.Z = U.T @ u, U.T @ X

    def _log_density(self, ell: np.ndarray, N1: float) -> np.ndarray:
        q = np.exp(ell)
        a = q[:, None] * self.c + self.T
        # density in log q: q^(N1/2) e^(−λ1 N1 q/2) N(y; 0, qC + T)
        return 0.5 * N1 * ell - 0.5 * self.lambda1 * N1 * q - 0.5 * np.log(a).sum(1) - 0.5 * (self.y_t**2 / a).sum(1)

    def averages(self, N1: float) -> dict[str, float | np.ndarray]:
        coarse = np.linspace(-10, 10, 4001)
        centre = coarse[np.argmax(self._log_density(coarse, N1))]
        ell = np.linspace(centre - 2.0, centre + 2.0, 16001)
        lp = self._log_density(ell, N1)
        w = np.exp(lp - lp.max())
        w /= w.sum()
        q = np.exp(ell)
        a = q[:, None] * self.c + self.T
        gamma = q[:, None] * np.einsum("tp,gp->gt", self.k0, self.y_t / a)
        var = q[:, None] * self.c00 - q[:, None] ** 2 * np.einsum("tp,gp->gt", self.k0**2, 1 / a)
        eps = ((self.yt - gamma) ** 2 + var).mean(1)
        ku = self.c * self.u_t
        delta = -q * (ku**2 / a).sum(1) + q * ((ku * self.y_t) / a).sum(1) ** 2  # Δ1 + Δ2 at fixed q
        pref = q / (self.lambda0 * self.N0)  # N1 · (q/(λ0 N0 N1))
        tr1 = -pref * ((self.Z**2).sum(1) / a).sum(1)
        tr2 = pref * (((self.y_t / a) @ self.Z) ** 2).sum(1)
        return {
            "Qbar": self.lambda1 * float(w @ q),
            "test_mean": w @ gamma,
            "eps": float(w @ eps),
            "delta": float(w @ delta),
            "tr1": float(w @ tr1),
            "tr2": float(w @ tr2),
        }


def _theory(data, N1: float, T: float, lambda1: float) -> dict[str, float | np.ndarray]:
    res = solve(make_spec(data, activation="linear", N1=N1, T=T, lambda1=lambda1))
    obs = res["observables"]
    cd, wc = obs["class_distance"], obs["weight_correlations"]
    return {
        "Qbar": qbar_of(res),
        "test_mean": np.array(obs["test_mean"]),
        "eps": obs["generalization_error"],
        "delta": cd["delta1"] + cd["delta2"],
        "tr1": N1 * wc["trace_lambda1"],
        "tr2": N1 * wc["trace_lambda2"],
    }


def test_saddle_point_approaches_the_exact_posterior_like_one_over_N1() -> None:
    X, y, Xt, yt = recipe_data()
    T, lambda1 = 0.1, 1.0
    exact = ExactLinear(X, y, Xt, yt, 1.0, lambda1, T)
    data = arrays(X, y, Xt, yt)
    widths = [10, 30, 100, 300, 1000, 3000]
    gaps: dict[str, list[float]] = {}
    for N1 in widths:
        th, ex = _theory(data, N1, T, lambda1), exact.averages(N1)
        for key in th:
            gaps.setdefault(key, []).append(float(np.max(np.abs(np.asarray(th[key]) - np.asarray(ex[key])))))
    for key, g in gaps.items():
        g = np.array(g)
        scaled = np.array(widths) * g
        # O(1/N1): N1·gap settles to a constant (or to 0, for Q̄ whose gap is O(α/N1)) ...
        assert scaled[-1] <= 1.25 * scaled[-2], (key, g)
        # ... the gap has shrunk by far more than the noise of a non-converging comparison ...
        assert g[-1] <= g[0] / 20, (key, g)
        assert g[-2] < g[2], (key, g)


def test_exact_posterior_mode_satisfies_the_shifted_saddle_equation() -> None:
    """The exact density in q is exp(−(N1/2) S(λ1 q))/q: its mode solves (N1/2) S'(Q̄) + 1/Q̄ = 0."""
    X, y, Xt, yt = recipe_data()
    T, N1 = 0.1, 20
    exact = ExactLinear(X, y, Xt, yt, 1.0, 1.0, T)
    ell = np.linspace(-1.0, 1.0, 200001)
    # density of q (not of log q): divide by q, i.e. subtract ell from the log density in log q
    mode = float(np.exp(ell[np.argmax(exact._log_density(ell, N1) - ell)]))
    # S'(Q̄) from the one-variable action with K = C, λ1 = 1, by central differences of an independent S
    def S(Q: float) -> float:
        a = Q * exact.c + T
        return Q - np.log(Q) + (np.log(a).sum() + (exact.y_t**2 / a).sum()) / N1

    h = 1e-6
    dS = (S(mode + h) - S(mode - h)) / (2 * h)
    assert (N1 / 2) * dS + 1 / mode == pytest.approx(0.0, abs=1e-3)
