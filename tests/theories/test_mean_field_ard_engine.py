"""The theory through the engine: branches, free entropies, spinodals and the first-order point of MF-ARD;
the single solution and the alignment onset of plain MF (k = 2 keeps the reduced rules small)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from solvers.core.options import SolverOptions
from solvers.theories import get
from tests.payloads import solve_json, sweep_json

BASE = {"theory": "mean_field_ard", "d": 35, "N": 512, "target": {"kind": "parity", "k": 2}}


def theory():
    return get("mean_field_ard")


def spec(**kw: object):
    return theory().spec_model.model_validate({**BASE, **kw})


def test_ard_coexistence_reports_both_branches_and_ranks_them() -> None:
    out = solve_json(theory(), spec(model="mf_ard", kappa=0.095), SolverOptions())
    names = {b["name"]: b for b in out["branches"]}
    assert {"aligned", "symmetric"} <= set(names)
    a, s = names["aligned"], names["symmetric"]
    assert a["converged"] and s["converged"] and a["stable"] and s["stable"]
    assert a["order_parameters"]["m_S"] > 0.3 > s["order_parameters"]["m_S"]
    # self-reinforcing selection: the relevant prior is much wider than the irrelevant one on the aligned branch
    assert a["order_parameters"]["rho_relevant"] < 0.25 * a["order_parameters"]["rho_irrelevant"]
    best = max((a, s), key=lambda b: b["free_entropy"])
    assert out["equilibrium"] == best["name"]


@pytest.mark.slow
def test_ard_kappa_sweep_finds_spinodals_and_the_first_order_point() -> None:
    th = theory()
    sp = spec(model="mf_ard", kappa=0.08)
    out = sweep_json(th, sp, "kappa", list(np.linspace(0.08, 0.115, 4)), "continuation", SolverOptions())
    spinodals = sorted(t["parameter"] for t in out["transitions"] if t["kind"] == "spinodal")
    first = [t["parameter"] for t in out["transitions"] if t["kind"] == "first_order"]
    assert len(first) == 1 and len(spinodals) == 2
    lo, hi = spinodals
    assert lo < first[0] < hi
    # independent check of the crossing: the two branches solved from their own starts at κ_c ± δ
    for kc, sign in ((first[0] - 2e-3, 1), (first[0] + 2e-3, -1)):
        cat = solve_json(th, spec(model="mf_ard", kappa=kc), SolverOptions())
        fe = {b["name"]: b["free_entropy"] for b in cat["branches"] if b["stable"]}
        assert sign * (fe["aligned"] - fe["symmetric"]) > 0
    # beyond the aligned fold only the symmetric branch is left
    cat = solve_json(th, spec(model="mf_ard", kappa=hi + 3e-3), SolverOptions())
    assert [b["name"] for b in cat["branches"]] == ["symmetric"]


@pytest.mark.slow
def test_plain_mf_sweep_has_one_branch_and_an_alignment_onset() -> None:
    th = theory()
    # the onset at k = 2, d = 35 is κ_c ≈ 0.00585 (tests/theories/test_mean_field_ard_onset.py)
    out = sweep_json(th, spec(model="mf", kappa=0.004), "kappa", list(np.linspace(0.004, 0.008, 5)), "continuation",
                   SolverOptions())
    for p in out["points"]:
        assert len(p["branches"]) == 1 and p["branches"][0]["stable"]
    kinds = [(t["kind"], t["detail"]) for t in out["transitions"]]
    assert len(kinds) == 1 and "alignment onset" in kinds[0][1]
    kc = out["transitions"][0]["parameter"]
    assert kc == pytest.approx(0.00585, rel=0.01)
    # Either side of the onset, on the unaligned state, a general-purpose minimiser of Ũ (no use of the
    # well search) started near the diagonal finds an aligned minimum deeper than the central one below
    # κ_c, and none above it.
    from solvers.theories.mean_field_ard.theory import reduced_model

    def deepest_aligned_minus_center(kappa: float) -> float:
        pop = reduced_model(spec(model="mf", kappa=kappa), None).pop(None)
        pot = pop.potential(np.array([pop.central_basin_solution()]))

        def U(y: np.ndarray) -> float:
            return float(pot.values(np.atleast_2d(y))[0][0])

        center = minimize(lambda u: U(np.r_[0.0, 0.0, u[0]]), x0=[-0.1]).fun
        found = [minimize(U, x0=[s, s, u], method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-11,
                                                                          "maxiter": 4000})
                 for s in (0.4, 0.7, 1.0) for u in (-3.0, -1.5)]
        off = [r.fun for r in found if min(abs(r.x[0]), abs(r.x[1])) > 0.05]
        return min(off) - center if off else math.inf

    assert deepest_aligned_minus_center(kc * (1 - 2e-3)) < 0 < deepest_aligned_minus_center(kc * (1 + 2e-3))


def test_the_unaligned_state_solves_its_own_equation_where_the_plain_map_cycles() -> None:
    """t (1 + λ_S(t)/c₀) = 1 on the law restricted to the central basin, at κ = 0.0313 (k = 2, d = 35), where the
    map t ← 1/(1 + λ_S(t)/c₀) is no contraction: iterated from t = 1 it settles on the two-cycle 0.2040 ↔ 0.9344,
    and an onset gap evaluated on either member of the cycle depends on where the iteration stopped."""
    from solvers.theories.mean_field_ard.theory import reduced_model

    pop = reduced_model(spec(model="mf", kappa=0.0313), None).pop(None)

    def mapped(t: float) -> float:
        return 1.0 / (1.0 + pop.state(np.array([t]), central_basin=True).mean("g") / pop.net.ridge)

    t = pop.central_basin_solution()
    assert mapped(t) == pytest.approx(t, abs=1e-10)
    # one root: t − mapped(t) increases across [0, 1]
    grid = np.linspace(0.0, 1.0, 21)
    h = np.array([s - mapped(s) for s in grid])
    assert np.all(np.diff(h) > 0) and h[0] < 0 < h[-1]
    # the plain iteration moves away from it (slope of the map below −1) and ends on a two-cycle
    assert abs(mapped(mapped(t + 1e-3)) - t) > 2e-3
    s = 1.0
    for _ in range(60):
        s = mapped(s)
    assert min(abs(s - t), abs(mapped(s) - t)) > 0.05 and mapped(mapped(s)) == pytest.approx(s, abs=1e-6)


def test_sizes_and_sweepable_fields() -> None:
    th = theory()
    s = spec(model="mf", kappa=0.03)
    sizes = th.sizes(s)
    assert sizes["mean_field_d"] == (("d",), 35) and sizes["mean_field_reduced_k"] == (("target", "k"), 2)
    assert {"kappa", "N"} <= set(th.sweepable_for(s))
    p = th.spec_model.model_validate({**BASE, "kappa": 0.03, "P": 100, "solver": "particles",
                                      "particles": {"n": 64}})
    sizes = th.sizes(p)
    assert sizes["mean_field_P"] == (("P",), 100) and sizes["mean_field_particles"] == (("particles", "n"), 64)
    assert {"kappa", "P"} <= set(th.sweepable_for(p))


def test_plain_mf_free_entropy_is_reported_and_m_spurious_vanishes() -> None:
    out = solve_json(theory(), spec(model="mf", kappa=0.03), SolverOptions())
    assert out["converged"] and len(out["branches"]) == 1
    obs = out["observables"]
    assert obs["m_spurious_max"] == 0.0 and math.isfinite(obs["free_entropy"])
    assert obs["test_mse"] == pytest.approx((1 - out["order_parameters"]["m_S"]) ** 2, rel=1e-9)


@pytest.mark.slow
def test_ard_sample_size_sweep_finds_the_transition() -> None:
    """P is continuous in the reduced (equivalent-kernel) equations: a P sweep at κ = 0.095 finds the aligned
    branch's birth (a fold) and the first-order point above it."""
    th = theory()
    out = sweep_json(th, spec(model="mf_ard", kappa=0.095, P=120), "P", list(np.linspace(120.0, 800.0, 3)),
                   "continuation", SolverOptions())
    first = [t["parameter"] for t in out["transitions"] if t["kind"] == "first_order"]
    folds = [t["parameter"] for t in out["transitions"] if t["kind"] == "spinodal"]
    assert len(first) == 1 and 200.0 < first[0] < 800.0
    assert folds and min(folds) < first[0]
    below, above = (solve_json(th, spec(model="mf_ard", kappa=0.095, P=int(p)), SolverOptions()) for p in
                    (first[0] * 0.8, first[0] * 1.25))
    assert below["equilibrium"] == "symmetric" and above["equilibrium"] == "aligned"
