"""The single-neuron mean-field law on a finite data set (NumPy; the particle solver has a JAX twin).

Given the residual r = y − f̄ on the P training points, one hidden unit w with the readout a
integrated out has

    U(w)    = ½ Σ_j ρ_j w_j² + ½ log(Λ(w)/A_a) − J_r(w)² / (2 κ² s Λ(w)),     s = κ² N^{2γ},
    Λ(w)    = A_a + Σ(w)/s,  A_a = 1/σ_a²,   Σ(w) = mean_μ φ(wᵀx_μ)²,   J_r(w) = mean_μ φ(wᵀx_μ) r_μ,
    ⟨a|w⟩   = J_r(w) / (κ² N^γ Λ(w)),    E[a²|w] = 1/Λ(w) + ⟨a|w⟩²,
    f̄(x)    = N^{1−γ} E_w[⟨a|w⟩ φ(wᵀx)].

(Completing the square: with f = f₋ + N^{−γ} a φ, the a-dependent part of the log-likelihood plus
log-prior is −Λa²/2 + B a, B = N^{−γ} J_r/κ²; ∫ da gives √(2π/Λ) e^{B²/(2Λ)}.) ρ_j = d/σ_w² for plain MF.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.theories.mean_field_ard.activations import Activation


@dataclass(frozen=True)
class Scalings:
    N: float
    gamma: float
    kappa: float
    sigma_a2: float

    @property
    def s(self) -> float:
        return self.kappa**2 * self.N ** (2.0 * self.gamma)

    @property
    def A(self) -> float:
        return 1.0 / self.sigma_a2


@dataclass(frozen=True)
class NeuronLaw:
    """U and the conditional readout moments at a batch of weights (rows of W)."""

    U: np.ndarray
    Lambda: np.ndarray
    J_r: np.ndarray
    Sigma: np.ndarray
    a_mean: np.ndarray
    a_second: np.ndarray


def neuron_law(act: Activation, sc: Scalings, W: np.ndarray, X: np.ndarray, r: np.ndarray,
               precision: np.ndarray) -> NeuronLaw:
    """The potential of the rows of W (n, d) against the residual r on inputs X (P, d)."""
    Phi = act(W @ X.T)  # (n, P)
    P = X.shape[0]
    J = Phi @ r / P
    S = np.mean(Phi * Phi, axis=1)
    lam = sc.A + S / sc.s
    U = 0.5 * (W * W) @ precision + 0.5 * np.log(lam / sc.A) - J * J / (2.0 * sc.kappa**2 * sc.s * lam)
    a_mean = J / (sc.kappa**2 * sc.N**sc.gamma * lam)
    return NeuronLaw(U, lam, J, S, a_mean, 1.0 / lam + a_mean**2)


def mean_predictor(act: Activation, sc: Scalings, W: np.ndarray, law: NeuronLaw, X: np.ndarray,
                   weights: np.ndarray | None = None) -> np.ndarray:
    """f̄(x) = N^{1−γ} Σ_i p_i ⟨a|w_i⟩ φ(w_iᵀx) over the weighted rows of W (uniform by default)."""
    p = np.full(W.shape[0], 1.0 / W.shape[0]) if weights is None else weights
    return sc.N ** (1.0 - sc.gamma) * (act(X @ W.T) @ (p * law.a_mean))
