"""The finite two-hidden-layer network: its JAX activations carry the theory's Hermite data, the target's
estimators and likelihood are right at the teacher, and the per-neuron alignment undoes every symmetry."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.numerics.hermite import gauss_legendre_halflines
from solvers.theories import get
from solvers.theories.hciz_mlp.experiment_deep2 import aligned_overlaps, build_experiment, jax_activation

THEORY = get("hciz_mlp")
T2 = {"name": "tanh2", "unit_variance": True}
H = {"hermite": [0.0, 0.4, 0.0, float(np.sqrt(6 * 0.84))]}


def spec_of(**kw):
    return THEORY.spec_model.model_validate({"theory": "hciz_mlp", "depth": 2, "activation": [T2, H],
                                             "gamma": [0.5, 1.0], "Delta": 0.1, "alpha": 2.0, **kw})


@pytest.mark.parametrize("act", [T2, H, {"name": "tanh", "remove_linear": True, "unit_variance": True}, "erf",
                                 {"name": "relu", "unit_variance": True}])
def test_jax_activation_has_the_theory_hermite_data(act) -> None:
    """μ0, μ1, μ2 and E σ² of the JAX σ (Gauss–Legendre on each half-line, exact at a kink) equal the theory's
    activation data."""
    spec = THEORY.spec_model.model_validate({"theory": "hciz_mlp", "activation": act, "gamma": 0.5, "alpha": 1.0,
                                             "Delta": 0.1})
    a = spec.activations[0]
    z, w = gauss_legendre_halflines(200)
    s = np.asarray(jax_activation(spec.activation)(z), dtype=float)
    assert np.dot(w, s) == pytest.approx(a.mu0, abs=1e-5)
    assert np.dot(w, s * z) == pytest.approx(a.mu1, abs=1e-5)
    assert np.dot(w, s * (z * z - 1)) == pytest.approx(a.mu2, abs=1e-5)
    assert np.dot(w, s * s) == pytest.approx(a.second_moment, rel=1e-5)


def test_target_at_the_teacher() -> None:
    ex = build_experiment(spec_of(), d=10, seed=3, n_test=500)
    est = ex.target.estimators(ex.teacher)
    assert float(est["generalization_error"]) == 0.0
    # the residuals at the teacher are the label noise: (1/n) Σ z² Δ, within 4 standard errors of Δ
    assert float(est["train_mse"]) == pytest.approx(0.1, abs=4 * 0.1 * np.sqrt(2.0 / ex.n))
    assert np.isfinite(float(ex.target.logdensity(ex.teacher)))
    assert ex.target.dim == ex.k1 * ex.d + ex.k2 * ex.k1 and ex.n == 200
    assert ex.v2.shape == (ex.k1,)


@pytest.mark.parametrize("readout", ["ones", "rademacher"])
def test_alignment_undoes_permutations_and_sign_flips(readout: str) -> None:
    """A teacher with permuted (and, σ₁ odd, sign-flipped) first-layer neurons and permuted second-layer neurons
    (sign-flipped across opposite readouts, σ₂ odd) is the same network: every aligned overlap is 1."""
    import jax.numpy as jnp

    spec = spec_of(readout=readout)
    ex = build_experiment(spec, d=12, seed=1, n_test=500)
    d, k1, k2 = ex.d, ex.k1, ex.k2
    theta = np.asarray(ex.teacher, dtype=float)
    W1, W2 = theta[: k1 * d].reshape(k1, d), theta[k1 * d :].reshape(k2, k1)
    rng = np.random.default_rng(0)
    p1, s1 = rng.permutation(k1), rng.choice([-1.0, 1.0], k1)
    W1s, W2s = s1[:, None] * W1[p1], W2[:, p1] * s1[None, :]
    p2 = rng.permutation(k2)
    if readout == "ones":
        W2s = W2s[p2]
    else:  # move each row to a random row; flip it when the readouts there have opposite signs
        flip = ex.v[p2] != ex.v
        W2s = W2s[p2] * np.where(flip, -1.0, 1.0)[:, None]
    moved = jnp.asarray(np.concatenate([W1s.ravel(), W2s.ravel()]))
    # the network function is unchanged ...
    assert float(ex.target.estimators(moved)["generalization_error"]) < 1e-10
    draws = {k: np.asarray(v)[None, None] for k, v in ex.target.estimators(moved).items()}
    ov = aligned_overlaps(ex, spec, draws)
    # ... and the alignment recovers the teacher labels
    assert np.allclose(ov["Q1"], 1.0, atol=1e-5) and np.allclose(ov["Q21"], 1.0, atol=1e-5)
    assert np.allclose(ov["Q2"], 1.0, atol=1e-5)
