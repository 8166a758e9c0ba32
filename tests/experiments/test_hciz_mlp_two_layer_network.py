"""The finite two-hidden-layer network (μ1 ≠ 0): its JAX activations carry the theory's Hermite data, the target's
estimators and likelihood are right at the teacher, the per-neuron alignment undoes every symmetry, and the network
sampled by NUTS decides between the three prefactor forms of the theory.

Prefactor setting (benchmarks/hciz_prefactors.py, where the full comparison runs at d = 12…24 and several α):
σ₁ ∝ tanh 2x (μ₁ = 0.915), σ₂ = 0.4x + c He₃/6 (ν₁ = 0.4), γ = (1/2, 1), v = 1, Gaussian weights, Δ = 0.1, α = 4.
The theory's fully specialised branch gives ε* = 0.0341 (derived), 0.124 (ONES notebook, ν₁² in Q̂₂:₁) and 0.0486
(GAUSS notebook, α/γ₂ in Q̂₁); HMC from the teacher tracks that branch. At d = 16 (k₁ = 8, k₂ = 16, n = 1024) the
measured ε* = ½·Gibbs error falls within the finite-size allowance of the derived form and every other form is
more than five standard errors plus that allowance away.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from service.serialize import branch_tables
from solvers.core.options import SolverOptions
from solvers.numerics.hermite import gauss_legendre_halflines
from solvers.theories import get
from solvers.theories.hciz_mlp.experiment import (
    ExperimentSizes,
    activation,
    aligned_draws,
    aligned_overlaps,
    build_target,
    theory_observables,
)
from tests.payloads import sweep_json

jax.config.update("jax_enable_x64", True)

THEORY = get("hciz_mlp")
T2 = {"name": "tanh2", "unit_variance": True}
H = {"hermite": [0.0, 0.4, 0.0, float(np.sqrt(6 * 0.84))]}
TEACHER = jax.random.PRNGKey(0)


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
    s = np.asarray(activation(spec.activation)(jnp.asarray(z)), dtype=float)
    assert np.dot(w, s) == pytest.approx(a.mu0, abs=1e-5)
    assert np.dot(w, s * z) == pytest.approx(a.mu1, abs=1e-5)
    assert np.dot(w, s * (z * z - 1)) == pytest.approx(a.mu2, abs=1e-5)
    assert np.dot(w, s * s) == pytest.approx(a.second_moment, rel=1e-5)


def test_target_at_the_teacher() -> None:
    target = build_target(spec_of(), ExperimentSizes(d=10, n_test=500), seed=3)
    teacher = target.init["teacher"](TEACHER)
    est = target.estimators(teacher)
    d, (k1, k2), n = target.info["d"], target.info["widths"], target.n_data
    assert float(est["generalization_error"]) == 0.0
    # the residuals at the teacher are the label noise: (1/n) Σ z² Δ, within 4 standard errors of Δ
    assert float(est["train_mse"]) == pytest.approx(0.1, abs=4 * 0.1 * np.sqrt(2.0 / n))
    assert np.isfinite(float(target.logdensity(teacher)))
    assert target.dim == k1 * d + k2 * k1 and n == 200
    assert len(target.info["v2"]) == k1


def test_theory_names_match_the_two_layer_estimators() -> None:
    spec = spec_of(alpha=4.0, readout="four_point")
    target = build_target(spec, ExperimentSizes(d=10, n_test=20))
    est = target.estimators(target.init["prior"](TEACHER))
    report = THEORY.solve(spec, SolverOptions(quadrature_order=8))
    for branch in [None, *[b.name for b in report.branches]]:
        theory = theory_observables(report, branch=branch)
        assert {"generalization_error", "Q_1", "Q_2", "Q_weighted"} <= set(theory) <= set(est)
        for key, value in theory.items():
            assert np.shape(value) == np.shape(est[key]), key


@pytest.mark.parametrize("readout", ["ones", "rademacher"])
def test_alignment_undoes_permutations_and_sign_flips(readout: str) -> None:
    """A teacher with permuted (and, σ₁ odd, sign-flipped) first-layer neurons and permuted second-layer neurons
    (sign-flipped across opposite readouts, σ₂ odd) is the same network: every aligned overlap is 1."""
    spec = spec_of(readout=readout)
    target = build_target(spec, ExperimentSizes(d=12, n_test=500), seed=1)
    d, (k1, k2) = target.info["d"], target.info["widths"]
    v = np.asarray(target.info["readout_values"])
    theta = np.asarray(target.init["teacher"](TEACHER), dtype=float)
    W1, W2 = theta[: k1 * d].reshape(k1, d), theta[k1 * d :].reshape(k2, k1)
    rng = np.random.default_rng(0)
    p1, s1 = rng.permutation(k1), rng.choice([-1.0, 1.0], k1)
    W1s, W2s = s1[:, None] * W1[p1], W2[:, p1] * s1[None, :]
    p2 = rng.permutation(k2)
    if readout == "ones":
        W2s = W2s[p2]
    else:  # move each row to a random row; flip it when the readouts there have opposite signs
        flip = v[p2] != v
        W2s = W2s[p2] * np.where(flip, -1.0, 1.0)[:, None]
    moved = jnp.asarray(np.concatenate([W1s.ravel(), W2s.ravel()]))
    # the network function is unchanged ...
    assert float(target.estimators(moved)["generalization_error"]) < 1e-10
    draws = {k: np.asarray(x)[None, None] for k, x in target.estimators(moved).items()}
    ov = aligned_overlaps(target, spec, draws)
    # ... and the alignment recovers the teacher labels
    assert np.allclose(ov["Q1"], 1.0, atol=1e-5) and np.allclose(ov["Q21"], 1.0, atol=1e-5)
    assert np.allclose(ov["Q2"], 1.0, atol=1e-5)


# ---- the prefactor forms against NUTS --------------------------------------------------------------------
PREFACTOR_SPEC = {"theory": "hciz_mlp", "depth": 2, "activation": [T2, H], "gamma": [0.5, 1.0], "readout": "ones",
                  "Delta": 0.1, "alpha": 4.0}
#: Finite-size allowance: at d = 16…24 the measured ε* deviated from the derived form by at most 6 % over two
#: teacher instances (docs/theories/hciz_mlp.md); the forms to be excluded differ by 43 % and 260 %.
FINITE_SIZE = 0.10


def specialised_eps(prefactors: str) -> float:
    """ε* of the stable fully specialised branch at α = 4, traced down from α = 8 by continuation."""
    spec = THEORY.spec_model.model_validate({**PREFACTOR_SPEC, "alpha": 8.0, "prefactors": prefactors})
    res = sweep_json(THEORY, spec, "alpha", [8.0, 6.0, 5.0, 4.0], "continuation", SolverOptions(quadrature_order=8))
    point = res["points"][-1]
    return next(branch_tables(point, b)[1]["generalization_error"] for b in point["branches"]
                if b["name"] == "specialized" and b["stable"])


@pytest.mark.slow
def test_hmc_follows_the_derived_prefactors() -> None:
    from solvers.experiments import SamplerOptions, run_block, summarize

    theory = {pf: specialised_eps(pf) for pf in ("derived", "ones_notebook", "gauss_notebook")}
    spec = THEORY.spec_model.model_validate(PREFACTOR_SPEC)
    target = build_target(spec, ExperimentSizes(d=16, n_test=4000), seed=0)
    options = SamplerOptions(method="nuts", chains=1, warmup=80, draws=40, seed=1000, init="teacher")
    checkpoint, draws = run_block(target, options, None, options.draws)
    result = summarize(target, options, checkpoint, aligned_draws(target, spec, draws))
    eps = result.estimates["generalization_error"]
    assert result.sampler.divergences == 0
    se, allowance = float(eps.stderr), FINITE_SIZE * theory["derived"]
    assert abs(float(eps.mean) - theory["derived"]) < 5 * se + allowance, (eps, theory)
    for other in ("ones_notebook", "gauss_notebook"):
        assert abs(float(eps.mean) - theory[other]) > 5 * se + allowance, (other, eps, theory)
