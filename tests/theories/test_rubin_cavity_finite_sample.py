"""``rubin_cavity`` finite_sample mode: the adaptive kernel on a data set and the self-consistency loop.

The kernel's series/Owen's-T construction is checked entry by entry against a brute-force 2-D
Gauss–Hermite integral and against Monte Carlo over hidden weights; the Gauss rule of the overlap law
against moments of the fine rule; the Jacobian against finite differences; and the converged (b, c)
against the finite-D population theory at large P.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError
from scipy.special import erf

from service.keys import spec_hash
from service.limits import check_sizes
from service.settings import Settings
from solvers.core.newton import fd_jacobian
from solvers.core.options import SolverOptions
from solvers.theories import get
from solvers.theories.rubin_cavity.finite_sample.data import sample
from solvers.theories.rubin_cavity.finite_sample.evaluator import LAW_NODES, evaluator
from solvers.theories.rubin_cavity.finite_sample.kernel import gauss_rule, geometry, kernels
from tests.payloads import solve_json

THEORY = get("rubin_cavity")
SPEC = TypeAdapter(THEORY.spec_model)
GH_T, GH_W = np.polynomial.hermite.hermgauss(60)


def spec(**kw):
    return SPEC.validate_python({"theory": "rubin_cavity", "mode": "finite_sample", **kw})


def brute_force_entry(a: float, ap: float, C: np.ndarray) -> float:
    """E[erf(a + ξ) erf(a' + ξ')] for (ξ, ξ') ~ N(0, C) by a 60 x 60 Gauss–Hermite rule."""
    L = np.linalg.cholesky(C + 1e-300 * np.eye(2))
    t1, t2 = np.meshgrid(math.sqrt(2) * GH_T, math.sqrt(2) * GH_T, indexing="ij")
    w = np.outer(GH_W, GH_W) / math.pi
    x1 = a + L[0, 0] * t1
    x2 = ap + L[1, 0] * t1 + L[1, 1] * t2
    return float((w * erf(x1) * erf(x2)).sum())


@pytest.mark.parametrize("D", [4, 40])
def test_kernel_entries_against_brute_force_quadrature(D: int) -> None:
    data = sample(7, D, 3, 11)
    sw = 0.6
    rho = np.array([0.0, 0.05, 0.3, 0.8])
    pi = np.array([0.4, 0.3, 0.2, 0.1])
    for rows, cols, square in ((data.train, data.train, True), (data.test, data.train, False)):
        geo = geometry(rows, cols, sw, D, square)
        (K,) = kernels(geo, rho, [pi], 2.5)
        gram = rows.perp_gram
        for i in range(len(rows.z)):
            for j in range(len(cols.z)):
                same = square and i == j
                cii = sw / D * rows.perp_norm2[i]
                cjj = sw / D * cols.perp_norm2[j]
                cij = cii if same else sw / D * gram[i, j]
                C = np.array([[cii, cij], [cij, cjj]])
                if same:
                    C = C + np.diag([0.0, 1e-13])  # the same variable twice: a singular covariance
                ref = sum(p * brute_force_entry(r * rows.z[i], r * cols.z[j], C) for r, p in zip(rho, pi, strict=True))
                assert K[i, j] == pytest.approx(2.5 * ref, abs=2e-9 if same else 1e-11)
    assert geo.order >= 1


def test_kernel_is_the_average_over_hidden_weights() -> None:
    """Monte Carlo over w = ρ e₁ + w⊥, w⊥ ~ N(0, σ_w²/D) on the D − 1 other coordinates, ρ = ±ρ_j."""
    rng = np.random.default_rng(5)
    D, sw = 10, 0.5
    X = np.random.default_rng(11).standard_normal((5, D))  # the training inputs of sample(5, D, 1, 11)
    data = sample(5, D, 1, 11)
    assert np.allclose(data.train.z, X[:, 0])
    rho, pi = np.array([0.1, 0.7]), np.array([0.75, 0.25])
    (K,) = kernels(geometry(data.train, data.train, sw, D, True), rho, [pi], 1.0)
    n = 400_000
    j = rng.choice(2, size=n, p=pi)
    w = math.sqrt(sw / D) * rng.standard_normal((n, D))
    w[:, 0] = rho[j] * rng.choice([-1.0, 1.0], size=n)
    F = erf(w @ X.T)
    for a in range(5):
        for b in range(5):
            v = F[:, a] * F[:, b]
            assert abs(v.mean() - K[a, b]) <= 5 * v.std() / math.sqrt(n)


def test_gauss_rule_of_the_overlap_law() -> None:
    rng = np.random.default_rng(2)
    x = np.sort(rng.uniform(0, 2, 3000))
    w = np.exp(-40 * (np.sqrt(x) - 0.7) ** 2) + np.exp(-200 * x)
    nodes, weights = gauss_rule(x, w, 12)
    for k in range(24):  # exact for degree 2n − 1 = 23
        assert (weights * nodes**k).sum() == pytest.approx((w * x**k).sum(), rel=1e-9)


def test_kernel_is_converged_in_the_number_of_law_nodes() -> None:
    s = spec(P=200, D=30, N=100, s_a2=8 / 100**2, T=0.3, P_test=10)
    ev = evaluator(s, None, SolverOptions())
    net = ev.net(0.0)
    geo = ev.geometry(net)
    outs = []
    for n in (LAW_NODES, 2 * LAW_NODES):
        import solvers.theories.rubin_cavity.finite_sample.evaluator as fsm

        old = fsm.LAW_NODES
        fsm.LAW_NODES = n
        try:
            rho, w, _, _ = ev.law_rule(net, 0.05, -0.22)
        finally:
            fsm.LAW_NODES = old
        outs.append(kernels(geo, rho, [w], 1.0)[0])
    assert np.max(np.abs(outs[0] - outs[1])) < 1e-10


def test_jacobian_against_finite_differences() -> None:
    s = spec(P=300, D=20, N=100, s_a2=8 / 100**2, T=0.3, P_test=10)
    ev = evaluator(s, None, SolverOptions())
    for x in (np.array([0.05, -0.22]), np.array([0.3, -0.3])):
        J = ev.jacobian(x, 0.0)
        fd = fd_jacobian(lambda y: ev.fixed_point(y, 0.0) - y, x)
        assert np.allclose(J, fd, rtol=1e-5, atol=1e-7)


def test_agrees_with_the_population_theory_at_large_P() -> None:
    """GMFL-I regime (u ≈ 300, η ≈ 9, D = 30): seed-averaged (b, c) against the finite-D population solution.

    Seed-to-seed spread at P = 1000 is about 0.0035 in b and 0.006 in c (O(P^-1/2)); the bounds allow about
    two standard errors of a three-seed mean plus the O(D/P) finite-sample bias of the equivalent-kernel closure
    (which drops the effective ridge of the D − 1 perpendicular modes), measured at ≈ 0.003 in c.
    """
    base = {"D": 30, "N": 100, "s_a2": 8 / 100**2, "T": 0.3, "P": 1000}
    pop = solve_json(THEORY,
        SPEC.validate_python({"theory": "rubin_cavity", "mode": "self_consistent", **base}), SolverOptions()
    )
    fd = pop["observables"]["finite_D"]
    bs, cs = [], []
    for seed in range(3):
        res = solve_json(THEORY, spec(**base, seed=seed, P_test=200), SolverOptions())
        assert res["converged"]
        bs.append(res["order_parameters"]["b"])
        cs.append(res["order_parameters"]["c"])
        obs = res["observables"]
        assert obs["train_mse"] > 0 and obs["test_mse_measured"] > 0
        assert obs["kernel_series_tail_bound"] < 1e-11
    assert np.mean(bs) == pytest.approx(fd["b"], abs=0.006)
    assert np.mean(cs) == pytest.approx(fd["c"], abs=0.01)
    # ... and a cubic part is learned, which the GP limit (c = ε) would not do.
    assert np.mean(cs) > -0.3 + 0.05


def test_size_limits_name_the_limit() -> None:
    """Sizes are limits of the instance (checked by the service against its settings), not of the spec."""
    assert THEORY.size_limits == {"finite_sample_p": 5000, "finite_sample_p_test": 20000, "finite_sample_d": 20000,
                                  "finite_sample_particles": 6000}
    # The memory bound is a check of its own (tests/service/test_memory_estimates.py): off here.
    defaults = Settings(redis_url=None, api_keys=(), limits={}, max_solve_memory_bytes=0)
    check_sizes(spec(P=5000, P_test=20000, D=20000), defaults)
    for field, limit in (("P", "finite_sample_p"), ("P_test", "finite_sample_p_test"), ("D", "finite_sample_d")):
        too_big = spec(**{field: THEORY.size_limits[limit] + 1})  # a valid spec ...
        with pytest.raises(RequestValidationError) as err:  # ... that this instance refuses, naming field and limit
            check_sizes(too_big, defaults)
        (e,) = err.value.errors()
        assert e["loc"] == ["body", "model", field] and f"{limit}={THEORY.size_limits[limit]:g}" in e["msg"]
    # the unreduced tree level's particle count (nodes × chains × samples) is limited too, and named by its block
    many = spec(treatment="tree_level_unreduced", particles={"nodes": 25, "chains": 16, "samples": 16})
    with pytest.raises(RequestValidationError) as err:
        check_sizes(many, defaults)
    (e,) = err.value.errors()
    assert e["loc"] == ["body", "model", "particles"] and "finite_sample_particles=6000" in e["msg"]
    check_sizes(spec(treatment="tree_level_unreduced", particles={"nodes": 25, "chains": 15, "samples": 16}), defaults)
    lowered = Settings(redis_url=None, api_keys=(), limits={"finite_sample_p": 100}, max_solve_memory_bytes=0)
    check_sizes(spec(P=100), lowered)
    with pytest.raises(RequestValidationError):
        check_sizes(spec(P=101), lowered)
    for bad, field in [({"P": 0}, "P"), ({"D": 0}, "D"), ({"P_test": 0}, "P_test"), ({"T": -1}, "T")]:
        with pytest.raises(ValidationError) as err:
            spec(**bad)
        assert field in str(err.value)


def test_seed_is_an_exactly_representable_integer() -> None:
    # The canonical cache key (RFC 8785 JSON) represents integers exactly only up to 2^53 − 1.
    largest = spec(seed=2**53 - 1)
    assert len(spec_hash(largest, SolverOptions())) == 64
    for bad in (2**53, 2**63 - 1, -1):
        with pytest.raises(ValidationError) as err:
            spec(seed=bad)
        assert "seed" in str(err.value)


@pytest.mark.parametrize("treatment", ["cavity", "tree_level"])
def test_test_set_projection_of_an_unlearned_target_is_the_target(treatment: str) -> None:
    """With a vanishing readout variance nothing is learned: the posterior mean is 0 on the test inputs, so the
    least-squares projection of the test discrepancy y is exactly (1, ε), whatever the test set."""
    cat = THEORY.solve(spec(P=40, D=6, N=10, s_a2=1e-12, T=0.3, P_test=30, treatment=treatment), SolverOptions())
    notes = cat.notes.observables
    assert notes["b_test"] == pytest.approx(1.0, abs=1e-8)
    assert notes["c_test"] == pytest.approx(-0.3, abs=1e-8)
