"""The matrix_denoising problem at finite d: its log-posterior, its estimators at the teacher, and the
sampled MMSE and overlap against the theory's m_S(λ)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import norm

from solvers.core.options import SolverOptions
from solvers.theories.matrix_denoising import THEORY
from solvers.theories.matrix_denoising.experiment import ExperimentSizes, build_target, theory_observables
from solvers.theories.matrix_denoising.spec import MatrixDenoisingSpec
from tests.experiments.sampling_helpers import product, run_nuts
from tests.payloads import solve_json

jax.config.update("jax_enable_x64", True)


def _spec(**fields: object) -> MatrixDenoisingSpec:
    return MatrixDenoisingSpec.model_validate({"theory": "matrix_denoising", "gamma": 0.5, "readout": "ones",
                                               "snr": 2.0, **fields})


@pytest.mark.parametrize("readout", ["ones", "rademacher", "gaussian"])
def test_log_posterior_equals_the_goe_density(readout: str) -> None:
    """Regenerate W⁰, v and Z from the documented seed streams; the likelihood is the product of the
    independent Gaussian entries of Y − √λ S̃(W) on and above the diagonal."""
    spec, d, seed = _spec(readout=readout, gamma=0.75), 6, 3
    target = build_target(spec, ExperimentSizes(d=d), seed=seed)
    k = round(0.75 * d)
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)]
    W0 = streams[0].standard_normal((k, d))
    if readout == "ones":
        v = np.ones(k)
    elif readout == "rademacher":
        v = streams[1].choice([-1.0, 1.0], size=k)
    else:
        v = streams[1].standard_normal(k)
    A = streams[2].standard_normal((d, d))

    def S(W: np.ndarray) -> np.ndarray:
        return W.T @ np.diag(v) @ W / np.sqrt(k * d)

    Y = np.sqrt(spec.snr) * S(W0) + (A + A.T) / np.sqrt(2 * d)
    iu = np.triu_indices(d, 1)
    for theta in np.random.default_rng(0).standard_normal((3, target.dim)):
        R = Y - np.sqrt(spec.snr) * S(theta.reshape(k, d))
        lik = norm(0, np.sqrt(1 / d)).logpdf(R[iu]).sum() + norm(0, np.sqrt(2 / d)).logpdf(np.diag(R)).sum()
        assert float(target.log_likelihood(jnp.asarray(theta))) == pytest.approx(lik, rel=1e-11)
        assert float(target.log_prior(jnp.asarray(theta))) == pytest.approx(-0.5 * theta @ theta, rel=1e-12)


@pytest.mark.parametrize("readout", ["ones", "four_point"])
def test_the_teacher_is_a_perfect_estimate(readout: str) -> None:
    target = build_target(_spec(readout=readout), ExperimentSizes(d=10), seed=2)
    est = target.estimators(target.init["teacher"](jax.random.PRNGKey(0)))
    assert float(est["mmse"]) == 0.0
    assert float(est["overlap"]) == pytest.approx(1.0, abs=1e-14)


def test_theory_names_match_the_estimators() -> None:
    target = build_target(_spec(), ExperimentSizes(d=8))
    est = target.estimators(target.init["prior"](jax.random.PRNGKey(0)))
    assert set(theory_observables(solve_json(THEORY, _spec(), SolverOptions()))) == set(est)


@pytest.mark.slow
def test_sampled_mmse_and_overlap_match_the_theory() -> None:
    """γ = 1/2, v = 1, λ = 2, d = 16 (k = 8): three independent teachers and noises, sampled as one product
    target. The instance-to-instance spread sets the error (it contains the Monte-Carlo errors); the
    finite-d allowance 3 mmse/d is the O(1/d) bias bound of the theory's own Monte Carlo tests of mmse_S
    (rotation-invariant estimators at d = 600)."""
    spec, d, m = _spec(), 16, 3
    targets = {f"s{i}": build_target(spec, ExperimentSizes(d=d), seed=i) for i in range(m)}
    run = run_nuts(product(targets), warmup=150, draws=150)
    theory = theory_observables(solve_json(THEORY, spec, SolverOptions()))
    assert run.divergences == 0
    for name in ("mmse", "overlap"):
        est = [run.estimate(f"s{i}/{name}") for i in range(m)]
        assert all(e.rhat < 1.05 for e in est), (name, [e.rhat for e in est])
        values = np.array([float(e.mean) for e in est])
        se = values.std(ddof=1) / math.sqrt(m)
        assert abs(values.mean() - theory[name]) < 4 * se + 3 * theory["mmse"] / d, (name, values, theory[name])
