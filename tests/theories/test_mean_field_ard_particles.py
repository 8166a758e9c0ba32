"""The particle solver: the N → ∞ kernel-ridge limit, agreement with the reduced solver, ARD, symmetry.

The reduced solver is exact (no central-limit step) for a k = 1 ReLU parity, where J_S(w) = w₁/2 and
Σ(w) = |w|²/2 on any sign-symmetric input law; on the full hypercube {±1}^8 the particle solver's
training set is the population itself. Tolerances are stated in Monte-Carlo standard errors.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import chi2

from solvers.core.options import SolverOptions
from solvers.theories import get
from solvers.theories.mean_field_ard import particles
from solvers.theories.mean_field_ard.ard import ARD
from solvers.theories.mean_field_ard.particle_sampler import Physics
from solvers.theories.mean_field_ard.spec import ParticleSpec
from solvers.theories.rubin_cavity.common.erf_moments import arcsin_kernel
from tests.payloads import solve_json

D = 8
CUBE = np.array(list(itertools.product([-1.0, 1.0], repeat=D)))
SETTINGS = {"n": 512, "inner_steps": 50, "average_steps": 25, "warmup": 100, "tol": 1e-4}


def arccos_kernel(X: np.ndarray, s: float) -> np.ndarray:
    """E_w[relu(w·x) relu(w·x')] for w ~ N(0, s I) (Cho & Saul, order 1)."""
    n = np.linalg.norm(X, axis=1)
    c = np.clip(X @ X.T / np.outer(n, n), -1.0, 1.0)
    th = np.arccos(c)
    return s * np.outer(n, n) / (2 * np.pi) * (np.sin(th) + (np.pi - th) * np.cos(th))


@pytest.mark.slow
@pytest.mark.parametrize("activation", ["relu", "erf"])
def test_infinite_width_is_kernel_ridge_regression(activation: str) -> None:
    """N → ∞ at γ = ½: p_MF is the prior and f̄ = K (K + κ²P/σ_a² I)⁻¹ y with the NNGP kernel σ_a² K."""
    rng = np.random.default_rng(5)
    P, kappa, sigma_a2, sigma_w2 = 256, 0.15, 1.3, 1.0
    X = rng.standard_normal((P, D))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2]
    K = arccos_kernel(X, sigma_w2 / D) if activation == "relu" else arcsin_kernel(X, X, sigma_w2 / D)
    f_krr = K @ np.linalg.solve(K + kappa**2 * P / sigma_a2 * np.eye(P), y)
    res = particles.solve(Physics(activation, 1e9, 0.5, kappa, sigma_a2), X, y, np.full(D, D / sigma_w2), None,
                          ParticleSpec(**SETTINGS, outer_iterations=30), "symmetric", [0], 0.05)
    assert res.converged
    err = math.sqrt(float(np.mean((res.fbar - f_krr) ** 2)))
    # the solver's own Monte-Carlo error of the residual bounds the distance to the exact fixed point
    assert err < 5 * res.mc_error + 1e-3, (err, res.mc_error)
    # and p_MF is the prior: every coordinate's second moment is σ_w²/d (independent chains, 5 standard errors)
    w2 = res.state.W**2
    assert np.all(np.abs(w2.mean(axis=0) - sigma_w2 / D) < 5 * w2.std(axis=0) / math.sqrt(w2.shape[0]))


def cube_spec(model: str, solver: str, **extra: object) -> dict:
    y = CUBE[:, 0]
    data = {"kind": "arrays", "X": CUBE.tolist(), "y": y.tolist(), "X_test": CUBE.tolist(), "y_test": y.tolist()}
    base = {"theory": "mean_field_ard", "model": model, "d": D, "N": 64, "kappa": 0.1,
            "target": {"kind": "parity", "k": 1}}
    if solver == "particles":
        base |= {"solver": "particles", "data": data, "particles": {**SETTINGS, "outer_iterations": 40}}
    return base | extra


@pytest.fixture(scope="module")
def solved() -> dict[str, tuple[dict, dict]]:
    """The reduced solve, and the particle solve from the symmetric start (the branch both solvers describe)."""
    from service.serialize import branch_json
    from solvers.theories.mean_field_ard import particle_report
    from solvers.theories.mean_field_ard.data import dataset

    th = get("mean_field_ard")
    out = {}
    for model in ("mf", "mf_ard", "mf_ard_per_unit"):
        name, extra = ("mf_ard", {"ard": {"precisions": "per_unit"}}) if model == "mf_ard_per_unit" else (model, {})
        red = solve_json(th, th.spec_model.model_validate(cube_spec(name, "reduced", **extra)), SolverOptions())
        spec = th.spec_model.model_validate(cube_spec(name, "particles", **extra))
        data = dataset(spec)
        res = particles.solve(particle_report.physics(spec), data.X, data.y, particle_report.whitening(spec),
                              particle_report.ard_of(spec), spec.particles, "symmetric", [0], spec.seed_asymmetry)
        out[model] = (red, {"branches": [branch_json(particle_report.branch(spec, "symmetric", res, data))]})
    return out


@pytest.mark.slow
@pytest.mark.parametrize("model", ["mf", "mf_ard", "mf_ard_per_unit"])
def test_reduced_and_particle_solvers_agree(solved: dict, model: str) -> None:
    red, par = solved[model]
    b = next(x for x in par["branches"] if x["converged"])
    se_m, se_mse = b["observables"]["m_S_stderr"], b["observables"]["test_mse_stderr"]
    assert abs(b["order_parameters"]["m_S"] - red["order_parameters"]["m_S"]) < 3 * se_m
    assert abs(b["observables"]["test_mse"] - red["observables"]["test_mse"]) < 3 * se_mse
    if model != "mf":
        for key in ("rho_relevant", "rho_irrelevant"):
            assert b["order_parameters"][key] == pytest.approx(red["order_parameters"][key], rel=0.1)
        for key in ("second_moment_relevant", "second_moment_irrelevant"):
            assert b["observables"][key] == pytest.approx(red["observables"][key], rel=0.1)


@pytest.mark.slow
def test_symmetric_branch_treats_irrelevant_coordinates_alike(solved: dict) -> None:
    """Permutation symmetry: ⟨w_j²⟩ on the seven irrelevant coordinates are equal (χ² homogeneity test)."""
    th = get("mean_field_ard")
    spec = th.spec_model.model_validate(cube_spec("mf", "particles"))
    from solvers.theories.mean_field_ard.data import dataset
    from solvers.theories.mean_field_ard.particle_report import physics

    data = dataset(spec)
    res = particles.solve(physics(spec), data.X, data.y, np.full(D, float(D)), None, spec.particles, "symmetric",
                          [0], 0.05)
    w2 = res.state.W[:, 1:] ** 2  # one independent chain per row
    m, se = w2.mean(axis=0), w2.std(axis=0, ddof=1) / math.sqrt(w2.shape[0])
    stat = float(np.sum(((m - np.average(m, weights=se**-2)) / se) ** 2))
    assert chi2.sf(stat, df=m.size - 1) > 1e-3
    assert m.mean() != pytest.approx(res.state.W[:, 0].var(), rel=0.05)  # while the relevant one differs


@pytest.mark.slow
def test_ard_with_frozen_precisions_is_plain_mf() -> None:
    """MF-ARD whose precisions never move (ema → 0) runs the same chains as plain MF (same seeds)."""
    X, y = CUBE, CUBE[:, 0]
    phys = Physics("relu", 64.0, 0.5, 0.1, 1.0)
    st = ParticleSpec(n=64, inner_steps=20, average_steps=10, warmup=20, outer_iterations=3)
    rho0 = np.full(D, float(D))
    a = particles.solve(phys, X, y, rho0, None, st, "symmetric", [0], 0.05)
    b = particles.solve(phys, X, y, rho0, ARD(4.0, 4.0 / D, 64.0, ema=1e-12), st, "symmetric", [0], 0.05)
    np.testing.assert_allclose(a.fbar, b.fbar, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b.state.rho, rho0, rtol=1e-9)


def test_unconverged_particle_solve_is_a_result() -> None:
    X, y = CUBE, CUBE[:, 0]
    res = particles.solve(Physics("relu", 64.0, 0.5, 0.1, 1.0), X, y, np.full(D, float(D)), None,
                          ParticleSpec(n=64, inner_steps=20, average_steps=10, warmup=20, outer_iterations=1),
                          "aligned", [0], 0.05)
    assert not res.converged and res.status == "max_iterations"
    assert math.isfinite(res.residual) and math.isfinite(res.mc_error) and res.mc_error > 0
    d = res.diagnostics()
    assert d["residual"] == res.residual and d["mc_error"] == res.mc_error


def test_unconverged_particle_solve_through_the_theory_reports_residual_and_mc_error() -> None:
    """The typed path: a budget too small to converge is a catalogue without equilibrium, whose branches carry
    their residual, its Monte-Carlo error and the particle-steps, and whose JSON names the reference's MC error."""
    th = get("mean_field_ard")
    spec = th.spec_model.model_validate(cube_spec("mf_ard", "particles", particles={
        "n": 64, "inner_steps": 20, "average_steps": 10, "warmup": 20, "outer_iterations": 1}))
    cat = th.solve(spec, SolverOptions())
    assert not cat.converged and cat.complete and cat.equilibrium is None
    out = solve_json(th, spec, SolverOptions())
    assert not out["converged"] and out["diagnostics"]["status"] == "max_iterations"
    assert out["diagnostics"]["mc_error"] > 0
    for b in out["branches"]:
        assert math.isfinite(b["diagnostics"]["residual"]) and b["observables"]["residual_mc_error"] > 0
        assert b["diagnostics"]["nfev"] == b["observables"]["particle_steps"] > 0
        assert len(b["state"]) == CUBE.shape[0] + D  # f̄ on the training set, then log ρ


#: The shapes and step counts of the unconverged solves above: the compiled chains are shared.
SMALL = cube_spec("mf_ard", "particles", particles={"n": 64, "inner_steps": 20, "average_steps": 10, "warmup": 20,
                                                    "outer_iterations": 2})


def test_particle_sweep_is_a_typed_grid_with_every_point() -> None:
    from service.serialize import sweep_json
    from solvers.core.sweep import Sweep

    th = get("mean_field_ard")
    spec = th.spec_model.model_validate(SMALL)
    seen: list[int] = []
    sweep = th.sweep(spec, "kappa", [0.1, 0.2], "grid", SolverOptions(), on_point=lambda i, cat: seen.append(i))
    assert isinstance(sweep, Sweep) and seen == [0, 1] and sweep.special_points == ()
    assert [c.parameter for c in sweep.catalogues] == [0.1, 0.2]
    for cat in sweep.catalogues:
        assert cat.branches and all(b.report is not None and not b.x.flags.writeable for b in cat.branches)
    out = sweep_json(th.name, "kappa", sweep)
    assert [p["parameter"] for p in out["points"]] == [0.1, 0.2] and out["transitions"] == []
    with pytest.raises(ValueError, match="stochastic"):
        th.two_parameter_problem(spec, ("kappa", "N"))



@pytest.mark.slow
@pytest.mark.parametrize("model", ["mf", "mf_ard_per_unit"])
def test_finite_p_shortcut_against_particles_on_sampled_data(model: str) -> None:
    """k = 2 on 256 sampled hypercube points (d = 16, N = 64, κ = 0.05): the reduced solver's finite-P closure
    (equivalent kernel on the central-limit law) against the particle solver on that very data set: m_S, the test
    MSE of f̄ and both weight second moments within 3 of the particles' standard errors (16 groups).

    The closure keeps only the mean training residual (no dataset-specific fluctuations of J_r), so the gap is
    not all Monte-Carlo noise; measured (2048 particles): plain MF m_S 0.242 vs 0.244 ± 0.011, per-unit ARD
    0.327 vs 0.361 ± 0.022 (shared ARD, not tested here: 0.710 vs 0.687 ± 0.015, its relevant second moment
    13 % apart: the nearly marginal shared fixed point amplifies the closure's error)."""
    from solvers.theories.mean_field_ard import particle_report
    from solvers.theories.mean_field_ard.data import dataset

    th = get("mean_field_ard")
    base = {"theory": "mean_field_ard", "model": "mf", "d": 16, "N": 64, "kappa": 0.05, "P": 256,
            "target": {"kind": "parity", "k": 2}, "data": {"seed": 0, "P_test": 2000}}
    if model == "mf_ard_per_unit":
        base |= {"model": "mf_ard", "ard": {"precisions": "per_unit"}}
    red = th.solve(th.spec_model.model_validate(base), SolverOptions()).equilibrium_branch
    spec = th.spec_model.model_validate(base | {"solver": "particles", "particles": {
        "n": 1024, "inner_steps": 100, "average_steps": 50, "outer_iterations": 40}})
    data = dataset(spec)
    res = particles.solve(particle_report.physics(spec), data.X, data.y, particle_report.whitening(spec), None,
                          spec.particles, "symmetric", [0, 1], spec.seed_asymmetry)
    assert res.converged
    par = particle_report.branch(spec, "symmetric", res, data).report
    assert par is not None and red.report is not None
    op, ob = par.order_parameters, par.observables
    assert abs(op["m_S"] - red.report.order_parameters["m_S"]) < 3 * ob["m_S_stderr"]
    assert abs(ob["test_mse"] - red.report.observables["test_mse"]) < 3 * ob["test_mse_stderr"]
    for key in ("second_moment_relevant", "second_moment_irrelevant"):
        assert abs(ob[key] - red.report.observables[key]) < 3 * ob[f"{key}_stderr"]
