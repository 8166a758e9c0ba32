"""The single-neuron potential: completing the square in a, and the map onto the cavity theory."""

from __future__ import annotations

import math

import numpy as np
import pytest

from solvers.theories.mean_field_ard.activations import Activation
from solvers.theories.mean_field_ard.finite_potential import Scalings, neuron_law
from solvers.theories.mean_field_ard.single_index import population_terms
from solvers.theories.rubin_cavity.common.potential import OverlapPotential


@pytest.mark.parametrize("activation", ["relu", "erf", "tanh"])
@pytest.mark.parametrize("gamma", [0.5, 1.0])
def test_readout_integrated_out_matches_quadrature_over_a(activation: str, gamma: float) -> None:
    """⟨a|w⟩, E[a²|w] and U(w) − prior(w) against brute-force quadrature over a of the joint density.

    Joint density of a given w and the other units' output f₋: N(a; 0, σ_a²) ·
    exp[−(1/(2κ²P)) Σ_μ (r_μ − N^{−γ} a φ_μ)²] with r = y − f₋, normalised by the same at a = 0.
    """
    rng = np.random.default_rng(3)
    P, d, N, kappa, sigma_a2 = 40, 6, 64, 0.3, 1.7
    X = rng.standard_normal((P, d))
    r = rng.standard_normal(P)
    W = rng.standard_normal((3, d)) * 0.8
    act = Activation(activation)
    sc = Scalings(N=N, gamma=gamma, kappa=kappa, sigma_a2=sigma_a2)
    law = neuron_law(act, sc, W, X, r, precision=np.zeros(d))
    a = np.linspace(-60.0, 60.0, 120_001)
    da = a[1] - a[0]
    for i in range(W.shape[0]):
        phi = act(X @ W[i])
        # exponent in a, without the a-independent Σ r² term (it cancels in the normalisation)
        data_term = N**-gamma * a * (phi @ r) - 0.5 * N ** (-2 * gamma) * a * a * (phi @ phi)
        expo = -(a * a) / (2 * sigma_a2) + data_term / (kappa**2 * P)
        top = expo.max()
        wts = np.exp(expo - top)
        Z = wts.sum() * da / math.sqrt(2 * math.pi * sigma_a2)  # ∫ N(a; 0, σ_a²) e^{…} da / e^{top}
        mean = (a * wts).sum() / wts.sum()
        second = (a * a * wts).sum() / wts.sum()
        assert law.a_mean[i] == pytest.approx(mean, rel=1e-8, abs=1e-10)
        assert law.a_second[i] == pytest.approx(second, rel=1e-8)
        assert law.U[i] == pytest.approx(-(math.log(Z) + top), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("b,c", [(0.8, -0.3), (0.3, 0.2)])
def test_population_potential_equals_cavity_potential(b: float, c: float) -> None:
    """MF single-neuron potential (erf, population averages of r = bH1 + cH3) equals rubin_cavity's U(ρ; b, c).

    Map: κ² = T/P (mean vs summed loss) and s_a² = σ_a² N^{−2γ} (the variance of N^{−γ} a); the
    perpendicular norm is the cavity theory's σ_w² and the MF prior d|w|²/(2σ_w²) splits into
    d ρ²/(2σ_w²) + d q⊥/(2σ_w²); the latter is constant.
    """
    D, sigma_w2, T, P = 150, 0.5, 0.18, 3000
    N, gamma, sigma_a2 = 700, 0.5, 8.0 / 700
    s_a2 = sigma_a2 * N ** (-2 * gamma)
    kappa = math.sqrt(T / P)
    sc = Scalings(N=N, gamma=gamma, kappa=kappa, sigma_a2=sigma_a2)
    cavity = OverlapPotential(sigma_w2=sigma_w2, b=b, c=c, u=P**2 * s_a2 / (T**2 * D), lam=s_a2 * P / T, D=D)
    rho = np.linspace(0.0, 1.4, 15)
    q_perp = np.full_like(rho, sigma_w2)
    J, S = population_terms(Activation("erf"), rho, q_perp, {1: b, 3: c})
    lam = sc.A + S / sc.s
    U_mf = D * (rho**2 + q_perp) / (2 * sigma_w2) + 0.5 * np.log(lam / sc.A) - J * J / (2 * sc.kappa**2 * sc.s * lam)
    U_mf -= D * q_perp / (2 * sigma_w2)
    np.testing.assert_allclose(U_mf, D * cavity.value(rho), rtol=1e-10, atol=1e-9)
