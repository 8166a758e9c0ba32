"""Two hidden layers with μ1 ≠ 0: limits, stationarity of f⁽²⁾, Nishimori/I-MMSE identities, the prefactor variants,
branches through the engine, and the spec.

Independent references: the reduced deep model (μ1 = 0; a separate implementation), the shallow theory
(linear second layer; γ2 → ∞), finite differences of the free entropy written with independent order
parameters (its stationary points must be the fixed points), the I-MMSE relations of the Gaussian output
channel (they hold only at stationary points), finite differences of the map (analytic Jacobian).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from solvers.core.catalogue import solve_catalogue
from solvers.core.newton import fd_jacobian
from solvers.core.options import SolverOptions
from solvers.theories import get
from solvers.theories.hciz_mlp.activations import build, polynomial_activation
from solvers.theories.hciz_mlp.deep import DeepModel
from solvers.theories.hciz_mlp.denoising import Denoiser
from solvers.theories.hciz_mlp.models import product_channels, two_layer_model
from solvers.theories.hciz_mlp.priors import channel
from solvers.theories.hciz_mlp.readouts import atoms
from solvers.theories.hciz_mlp.shallow import ShallowModel
from solvers.theories.hciz_mlp.two_layer import TwoLayerModel
from tests.payloads import solve_json, sweep_json

THEORY = get("hciz_mlp")
OPTIONS = SolverOptions(quadrature_order=8)
T2 = {"name": "tanh2", "unit_variance": True}
#: σ₂ = 0.4x + c He₃/6, c² = 6·0.84: ν₁ = 0.4 ≠ μ₁ = 0.915 of σ₁ (the prefactor comparison's setting).
H = {"hermite": [0.0, 0.4, 0.0, float(np.sqrt(6.0 * 0.84))]}
BASE: dict[str, Any] = {"theory": "hciz_mlp", "depth": 2, "activation": [T2, H], "gamma": [0.5, 1.0],
                        "Delta": 0.1, "alpha": 4.0}
N = 8


def spec_of(**kw: Any):
    return THEORY.spec_model.model_validate({**BASE, **kw})


def model_of(act1, act2, readout="ones", g1=0.5, g2=1.0, Delta=0.1, prior="gaussian", prefactors="derived",
             quench=False, n=N) -> TwoLayerModel:
    return TwoLayerModel(act1, act2, channel(prior), atoms(readout, n), atoms("gaussian", n), g1, g2, Delta,
                         product_channels(readout, n, g1, g2), prefactors, quench)


def solve(model: TwoLayerModel | DeepModel | ShallowModel, alpha: float, x0: np.ndarray) -> np.ndarray:
    """Damped iteration, then Newton on G(x) − x (independent of the engine; analytic Jacobian where the model
    has one)."""
    x = np.asarray(x0, dtype=float)
    for _ in range(60):
        x = 0.5 * x + 0.5 * model.fixed_point(x, alpha)
    for _ in range(80):
        r = model.fixed_point(x, alpha) - x
        if np.max(np.abs(r)) < 1e-13:
            return x
        J = (model.jacobian(x, alpha) if hasattr(model, "jacobian")
             else fd_jacobian(lambda y: model.fixed_point(y, alpha), x)) - np.eye(x.size)
        x = x - np.linalg.solve(J, r)
    raise AssertionError(f"no convergence: residual {np.max(np.abs(r))}")


def branches(spec) -> dict[str, Any]:
    cat = solve_catalogue(THEORY.problem(spec, None, OPTIONS), 0.0, OPTIONS)
    return {b.name: b for b in cat.branches if b.converged}


# ---- the map --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kw",
    [dict(), dict(readout="four_point"), dict(prior="rademacher"), dict(quench=True),
     dict(prefactors="gauss_notebook"), dict(prefactors="ones_notebook"), dict(readout="gaussian", n=4)],
)
def test_analytic_jacobian_matches_finite_differences(kw: dict) -> None:
    m = model_of(build("tanh2", unit_variance=True), THEORY.spec_model.model_validate(BASE).activations[1], **kw)
    x = np.random.default_rng(3).uniform(0.2, 3.0, m.dim)
    J = m.jacobian(x, 3.0)
    Jf = fd_jacobian(lambda y: m.fixed_point(y, 3.0), x)
    assert np.max(np.abs(J - Jf)) < 1e-6 * max(1.0, float(np.max(np.abs(Jf))))


def test_prefactor_forms_coincide_for_identical_layers_and_equal_widths_only() -> None:
    act = build("tanh2", unit_variance=True)
    x = np.random.default_rng(1).uniform(0.2, 3.0, model_of(act, act, g2=0.5).dim)
    maps = [model_of(act, act, g2=0.5, prefactors=pf).fixed_point(x, 3.0) for pf in
            ("derived", "ones_notebook", "gauss_notebook")]
    assert np.allclose(maps[0], maps[1], rtol=0, atol=1e-14) and np.allclose(maps[0], maps[2], rtol=0, atol=1e-14)
    H2 = THEORY.spec_model.model_validate(BASE).activations[1]
    x = np.random.default_rng(1).uniform(0.2, 3.0, model_of(act, H2).dim)
    derived, ones, gauss = (model_of(act, H2, prefactors=pf).fixed_point(x, 3.0) for pf in
                            ("derived", "ones_notebook", "gauss_notebook"))
    assert np.max(np.abs(derived - ones)) > 1e-2 and np.max(np.abs(derived - gauss)) > 1e-2


# ---- limits ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("g1", "g2", "readout"), [(1.0, 1.0, "ones"), (0.7, 1.3, "four_point")])
def test_mu1_zero_is_the_reduced_deep_model(g1: float, g2: float, readout: str) -> None:
    """μ₁ = ν₁ = 0 (σ ∝ tanh 2x − μ₁x): no product channel, no v₂ dependence; every overlap and f⁽²⁾ equal the
    reduced model's (a separate implementation with entropic weights γ₁, γ₁γ₂) to solver precision."""
    red = build("tanh2", remove_linear=True, unit_variance=True)
    two = model_of(red, red, readout=readout, g1=g1, g2=g2)
    deep = DeepModel(red, channel("gaussian"), atoms(readout, N), (g1, g2), 0.1)
    assert not two.has_product
    for alpha in (5.0, 9.0):
        xd = solve(deep, alpha, np.full(deep.dim, 25.0))
        x2 = solve(two, alpha, two.join(np.full(N, 25.0), np.full((two.V, N), 25.0), None))
        sd, s2 = deep.state(xd, alpha), two.state(x2, alpha)
        assert s2.eps == pytest.approx(sd.eps, abs=1e-12)
        assert two.free_entropy(x2, alpha) == pytest.approx(deep.free_entropy(xd, alpha), abs=1e-12)
        assert np.allclose(s2.Q1, sd.Q_inner[0], atol=1e-12)
        assert np.allclose(s2.Q2, sd.Q_last[:, None], atol=1e-12)


def test_small_mu1_approaches_the_reduced_model_like_mu1_squared() -> None:
    """σ = μ₁x + √(1 − μ₁²) He₃/√6: the product channel's weight is μ₁², so ε(μ₁) − ε(0) = O(μ₁²)."""
    def act(m: float):
        return polynomial_activation("h", [0.0, m, 0.0, float(np.sqrt(6.0 * (1.0 - m * m)))])

    deep = DeepModel(act(0.0), channel("gaussian"), atoms("gaussian", 4), (1.0, 1.0), 0.1)
    xd = solve(deep, 6.0, np.full(deep.dim, 25.0))
    eps0, f0 = deep.state(xd, 6.0).eps, deep.free_entropy(xd, 6.0)
    ratios = []
    for m in (0.04, 0.02, 0.01):
        two = model_of(act(m), act(m), readout="gaussian", g1=1.0, g2=1.0, n=4)
        x2 = solve(two, 6.0, two.join(np.full(4, 25.0), np.full((4, 4), 25.0), np.full(4, 10.0)))
        ratios.append(((two.state(x2, 6.0).eps - eps0) / m**2, (two.free_entropy(x2, 6.0) - f0) / m**2))
    ratios = np.array(ratios)
    assert np.all(np.abs(ratios) < 50)
    assert np.allclose(ratios[2], ratios[1], rtol=0.1, atol=0.05)


@pytest.mark.parametrize(("g1", "g2", "readout", "n"), [(0.5, 1.0, "ones", N), (0.7, 1.3, "gaussian", 4)])
def test_linear_second_layer_is_the_shallow_theory(g1: float, g2: float, readout: str, n: int) -> None:
    """σ₂(z) = z: f = Σᵢ v₂ᵢ σ₁(W₁ᵢx/√d)/√k₁ with v₂ = W₂ᵀv/√k₂ ~ N(0, 1), i.e. the shallow network with a
    Gaussian readout law and μ₂ = 0: Q₁(v₂) = Q(v), ε and f⁽²⁾ equal the shallow theory's; Q₂ = Q₂:₁ − T = 0."""
    act = build("tanh2", unit_variance=True)
    two = model_of(act, polynomial_activation("linear", [0.0, 1.0]), readout=readout, g1=g1, g2=g2, n=n)
    sh = ShallowModel(act, channel("gaussian"), atoms("gaussian", n), g1, 0.1, Denoiser(g1, "gaussian"))
    alpha = 3.0
    x2 = solve(two, alpha, two.join(np.full(n, 25.0), np.zeros((two.V, n)), np.zeros(two.V)))
    xs = solve(sh, alpha, sh.join(np.full(n, 25.0), 0.01))
    s2, ss = two.state(x2, alpha), sh.state(xs, alpha)
    assert s2.eps == pytest.approx(ss.eps_new, abs=1e-12)
    assert two.free_entropy(x2, alpha) == pytest.approx(sh.free_entropy(xs, alpha), abs=1e-12)
    assert np.allclose(s2.Q1, ss.Q, atol=1e-12) and np.max(np.abs(s2.Q2)) < 1e-12
    assert np.allclose(s2.Q21, s2.T, atol=1e-12)


def test_wide_second_layer_is_the_shallow_theory_with_extra_noise() -> None:
    """γ₂ → ∞: the second layer (γ₁γ₂d² weights) and the product (γ₂d² entries) cannot be learned, its l ≥ 3 part
    g⁽²⁾(1) acts as noise, and the equilibrium is the shallow network with activation ν₁σ₁, Gaussian readout,
    noise Δ + g⁽²⁾(1): ε⁽²⁾ = ν₁²ε_sh(σ₁, (Δ + g⁽²⁾(1))/ν₁²) + g⁽²⁾(1), f⁽²⁾ = f_sh − ½ ln ν₁²."""
    act1, act2 = build("tanh2", unit_variance=True), build("erf", unit_variance=True)
    nu1sq, g2one = act2.mu1**2, float(act2.g(1.0))
    sh = ShallowModel(act1, channel("gaussian"), atoms("gaussian", N), 0.5, (0.1 + g2one) / nu1sq,
                      Denoiser(0.5, "gaussian"))
    xs = solve(sh, 3.0, sh.join(np.full(N, 25.0), 0.01))
    eps_sh, f_sh = nu1sq * sh.state(xs, 3.0).eps_new + g2one, sh.free_entropy(xs, 3.0) - 0.5 * np.log(nu1sq)
    gaps = []
    for g2 in (10.0, 1e3):
        spec = spec_of(activation=[T2, {"name": "erf", "unit_variance": True}], gamma=[0.5, g2], alpha=3.0,
                       readout="gaussian")
        res = solve_json(THEORY, spec, OPTIONS)
        eq = next(b for b in res["branches"] if b["name"] == res["equilibrium"])
        gaps.append((abs(eq["observables"]["generalization_error"] - eps_sh), abs(eq["free_entropy"] - f_sh)))
    assert gaps[1][0] < 1e-9 and gaps[1][1] < 1e-9
    # at γ₂ = 10 a fully specialised branch still exists and wins; its distance to the limit is finite
    assert gaps[0][1] >= gaps[1][1]


# ---- stationarity and identities ----------------------------------------------------------------------
def _full_args(model: TwoLayerModel, x: np.ndarray, alpha: float) -> tuple[np.ndarray, list[int]]:
    st = model.state(x, alpha)
    parts = [st.Q1, st.Q_hat1, st.Q2.ravel(), st.Q_hat2.ravel(), st.Q21, st.Q_hat21]
    return np.concatenate(parts), [p.size for p in parts]


def _f_full(model: TwoLayerModel, alpha: float, sizes: list[int]):
    cuts = np.cumsum(sizes)[:-1]

    def f(z: np.ndarray) -> float:
        return model.free_entropy_full(*np.split(z, cuts), alpha)

    return f


def _gradient(f, z0: np.ndarray) -> np.ndarray:
    g = np.empty_like(z0)
    for i in range(z0.size):
        # overlaps sit close to 1 on specialised branches: keep the probe inside (0, 1)
        h = 1e-6 if abs(z0[i]) <= 1.0 else 1e-6 * abs(z0[i])
        h = min(h, 0.1 * (1.0 - z0[i])) if 0.0 < z0[i] < 1.0 else h
        e = np.zeros_like(z0)
        e[i] = h
        g[i] = (f(z0 + e) - f(z0 - e)) / (2 * h)
    return g


@pytest.mark.parametrize("alpha", [3.0, 6.0])
def test_free_entropy_is_stationary_on_every_branch_for_the_derived_form(alpha: float) -> None:
    """∂f⁽²⁾/∂(Q₁, Q̂₁, Q₂, Q̂₂, Q₂:₁, Q̂₂:₁) = 0 (finite differences of f, τ by moment matching) at every
    converged branch of the derived form, and f⁽²⁾ there is the reported free entropy; the notebook forms'
    fixed points are not stationary (their specialised branch has a gradient of order one)."""
    spec = spec_of(alpha=alpha)
    model = two_layer_model(spec, N)
    found = branches(spec)
    assert any(n.startswith("specialized") for n in found)
    for name, b in found.items():
        z0, sizes = _full_args(model, b.x, alpha)
        f = _f_full(model, alpha, sizes)
        assert f(z0) == pytest.approx(b.free_entropy, abs=1e-10), name
        g = _gradient(f, z0)
        assert np.max(np.abs(g)) < 2e-5 * (1.0 + np.max(np.abs(z0))), (name, np.max(np.abs(g)))
    for pf in ("ones_notebook", "gauss_notebook"):
        other = spec_of(alpha=6.0, prefactors=pf)
        om = two_layer_model(other, N)
        b = next(b for n, b in branches(other).items() if n.startswith("specialized") and b.stable)
        z0, sizes = _full_args(om, b.x, 6.0)
        assert np.max(np.abs(_gradient(_f_full(om, 6.0, sizes), z0))) > 1e-3, pf


def _follow(spec, parameter: str, value: float, x0: np.ndarray) -> dict:
    from solvers.core.solve import solve_at

    problem = THEORY.problem(spec, parameter, OPTIONS)
    res = solve_at(problem, value, x0, SolverOptions(method="newton", quadrature_order=N))
    assert res.converged
    return problem.report(res.x, value).observables


def test_nishimori_bounds_and_i_mmse_on_every_branch() -> None:
    """On every branch (stable or not): overlaps are second moments of posterior means, 0 ≤ Q ≤ 1; the product
    overlap is at least what the layers imply, Q₂:₁ = 1 − mmse(τ + Q̂₂:₁) ≥ 1 − mmse(τ) = T; 0 ≤ ε ≤ K_d − μ₁²ν₁²
    (the linear part is always learned); and the I-MMSE relations of the output channel, which hold only if ε
    and f belong to a stationary point: dMI/dΔ = −(α/2γ₁) ε/(Δ(Δ + ε)), dMI/dα = ln(1 + ε/Δ)/(2γ₁)."""
    spec = spec_of(alpha=5.0)
    model = two_layer_model(spec, N)
    found = branches(spec)
    assert len(found) >= 3
    g1, D, a = 0.5, spec.Delta, spec.alpha
    for name, b in found.items():
        st = model.state(b.x, a)
        obs = THEORY.problem(spec, None, OPTIONS).report(b.x, 0.0).observables
        assert np.all((st.Q1 >= -1e-14) & (st.Q1 <= 1)) and np.all((st.Q2 >= -1e-14) & (st.Q2 <= 1)), name
        assert np.all(st.Q21 >= st.T - 1e-12) and np.all(st.Q21 <= 1), name
        assert -1e-14 <= obs["generalization_error"] <= model.K_d - model.mu1sq * model.nu1sq + 1e-14, name
        assert obs["mutual_information"] >= 0.0, name
        eps = obs["generalization_error"]
        h = 1e-4 * D
        lo, hi = (_follow(spec, "Delta", D + s * h, b.x)["mutual_information"] for s in (-1, 1))
        assert (hi - lo) / (2 * h) == pytest.approx(-(a / (2 * g1)) * eps / (D * (D + eps)), rel=2e-5), name
        h = 1e-4 * a
        lo, hi = (_follow(spec, "alpha", a + s * h, b.x)["mutual_information"] for s in (-1, 1))
        assert (hi - lo) / (2 * h) == pytest.approx(np.log1p(eps / D) / (2 * g1), rel=2e-5), name


# ---- the engine ---------------------------------------------------------------------------------------
def test_sweep_reports_the_branches_and_their_transitions() -> None:
    """An α sweep traces the universal-like, first-layer and fully specialised branches and reports the
    spinodal of the specialised branch and the first-order point where it takes over."""
    spec = spec_of(alpha=1.5)
    res = sweep_json(THEORY, spec, "alpha", list(np.linspace(1.5, 2.1, 4)), "continuation", OPTIONS)
    names = {b["name"].split("[")[0] for p in res["points"] for b in p["branches"]}
    assert {"universal", "first_layer_specialized", "specialized", "specialized_unstable"} <= names
    found = {(t["kind"], tuple(sorted(t["branches"]))): t["parameter"] for t in res["transitions"]}
    spinodal = found[("spinodal", ("specialized", "specialized_unstable"))]
    first_order = found[("first_order", ("specialized", "universal"))]
    assert 1.5 < spinodal < first_order < 2.1
    eq = [p["equilibrium"].split("[")[0] for p in res["points"]]
    assert eq[0] == "first_layer_specialized" and eq[-1] == "specialized"


def test_quenched_first_layer_and_product_overlap_starts() -> None:
    spec = spec_of(alpha=4.0, quench=True)
    res = solve_json(THEORY, spec, OPTIONS)
    assert res["branches"] and all(b["name"].startswith("quenched_") for b in res["branches"])
    assert res["order_parameters"]["Q1"] == [1.0] * N and res["order_parameters"]["Q_hat1"] is None
    problem = THEORY.problem(spec_of(alpha=4.0), None, OPTIONS)
    assert {"uninformative", "product_overlap", "first_layer", "informative"} <= set(problem.starts(4.0))


def test_specialisation_map_is_reported_per_effective_readout() -> None:
    res = solve_json(THEORY, spec_of(alpha=6.0, readout="four_point"), OPTIONS)
    op = res["order_parameters"]
    assert len(op["Q1"]) == len(op["v2"]) == N and len(op["Q2"]) == len(op["v"]) == 2
    assert all(len(row) == N for row in op["Q2"])
    assert res["observables"]["phase"] == "specialized"


# ---- the spec -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"activation": "relu"}, "activation"),  # μ0, μ2 ≠ 0: outside H2
        ({"activation": "tanh"}, "activation"),  # E σ₁² ≠ 1
        ({"activation": [T2, "relu"]}, "activation"),
        ({"activation": [T2, H, T2]}, "activation"),
        ({"depth": 1, "prefactors": "ones_notebook"}, "prefactors"),
        ({"depth": 3, "activation": {"name": "tanh2", "remove_linear": True, "unit_variance": True},
          "quench": True}, "quench"),
        ({"depth": 1, "activation": [T2, H]}, "activation"),
        ({"prefactors": "notebook"}, "prefactors"),
    ],
)
def test_bad_two_layer_specs_name_the_field(patch: dict, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        spec_of(**patch)
    assert any(field in map(str, e["loc"]) for e in err.value.errors())


def test_routing_between_the_reduced_and_the_two_layer_model() -> None:
    reduced = {"name": "tanh2", "remove_linear": True, "unit_variance": True}
    assert not spec_of(activation=reduced, gamma=1.0).two_layer
    assert spec_of(activation=reduced, gamma=1.0, quench=True).two_layer
    assert spec_of(activation=T2).two_layer and spec_of().two_layer
    assert THEORY.sweepable_for(spec_of()) == ("alpha", "Delta")
    with pytest.raises(ValueError, match="gamma"):
        two_layer_model(spec_of(), N, gamma=0.7)
    assert dataclasses.is_dataclass(two_layer_model(spec_of(), N))
    assert THEORY.problem(spec_of(), None, OPTIONS).dim == two_layer_model(spec_of(), N).dim


@pytest.mark.parametrize("eta", [1.0, 0.0])
def test_tilt_inverts_the_product_channel_mmse(eta: float) -> None:
    """mmse_v(τ) = 1 − T from 1 − T itself, to round-off, from T ≈ 0 to 1 − T = 1e-12 (in any order: the
    warm start from the previous inversion must not matter)."""
    from solvers.theories.hciz_mlp.product_channel import ProductChannel

    channel = ProductChannel(0.5, eta)
    targets = [1e-12, 0.7, 1e-3, 0.999999, 0.1, 1e-8, 0.5]
    for omt in targets:
        tau = channel.tilt(omt)
        assert channel.mmse(tau) == pytest.approx(omt, rel=1e-12), omt
    assert channel.tilt(1.0) == 0.0
