"""Boxes whose lines run between the interior rows: every line is found where it crosses the box's edges.

* hciz_mlp (tanh, γ = ½) in (Δ, α) ∈ (0.01–0.5)×(1–8): the first-order line enters through α = 1 and leaves
  through α = 8 between the rows Δ = 0.01 and 0.255. Reference: the α where the universal and specialised branches'
  free entropies are equal, by Brent's method on single solves (no line tracer involved); a grid put it at
  α = 2.2083, 3.7315, 6.7672 for Δ = 0.05, 0.1, 0.2.
* mean_field_ard (mf_ard, d = 35, k = 2) in κ ∈ [0.05, 0.15] × N ∈ [128, 1024]: the two spinodal lines and the
  first-order line run across the whole box in N, between the rows κ = 0.05 and 0.15. Reference: κ sweeps at
  N = 128 and 1024 (spinodals 0.0805/0.0858 and 0.1042/0.1082, first order 0.0957/0.0994).
* mean_field_ard (mf_ard, d = 35, k = 2, κ = 0.096) in N ∈ [128, 256] × P ∈ [2000, 8000]: two integer fields, both
  continued as real numbers; the first-order line runs from the P = 2000 edge to the P = 8000 edge. Reference: N
  sweeps at P = 2000 and 8000 (the one-parameter sweep's own first-order location; N = 174.21 and 146.64).
"""

from __future__ import annotations

import pytest
from scipy.optimize import brentq

from solvers.core.curve import Curve
from solvers.core.lines import LineOptions, resample_line, trace_boundaries
from solvers.core.options import SolverOptions
from solvers.core.special_points import SpecialKind
from solvers.theories import get

HCIZ = {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "Delta": 0.1, "alpha": 4.0}


def _hciz_first_order_alpha(delta: float, lo: float, hi: float) -> float:
    """α of equal free entropy of the universal and specialised branches at Δ, from single solves."""
    hciz = get("hciz_mlp")

    def gap(alpha: float) -> float:
        spec = hciz.spec_model.model_validate(HCIZ | {"Delta": delta, "alpha": alpha})
        phi = {b.name: b.free_entropy for b in hciz.solve(spec, SolverOptions()).branches}
        return phi["universal"] - phi["specialized"]

    return brentq(gap, lo, hi, xtol=1e-8)


def test_hciz_first_order_line_between_the_rows_is_traced() -> None:
    hciz = get("hciz_mlp")
    spec = hciz.spec_model.model_validate(HCIZ)
    problem = hciz.two_parameter_problem(spec, ("Delta", "alpha"))
    res = trace_boundaries(problem, (0.01, 0.5), (1.0, 8.0))  # the default resolution: rows at Δ = 0.01, 0.255, 0.5
    assert res.scans == (0.01, 0.255, 0.5) and res.edges == (1.0, 8.0)
    (first,) = res.of_kind(SpecialKind.FIRST_ORDER)
    assert set(first.branches) == {"universal", "specialized"}
    assert [e.kind for e in first.ends] == ["domain", "domain"]
    edges = sorted(p[1] for p in (first.coordinates[0], first.coordinates[-1]))
    assert edges == pytest.approx([1.0, 8.0], abs=1e-6)
    assert res.of_kind(SpecialKind.FOLD), "the spinodal line is still there"
    at = resample_line(problem, first, [0.05, 0.1, 0.2], (0.01, 0.5), (1.0, 8.0))
    brackets = {0.05: (2.1, 2.35), 0.1: (3.6, 3.9), 0.2: (6.6, 6.9)}  # the specialised branch exists over each
    for (delta, alpha), grid in zip(at.coordinates, (2.2083, 3.7315, 6.7672), strict=True):
        reference = _hciz_first_order_alpha(delta, *brackets[delta])
        assert alpha == pytest.approx(reference, abs=1e-6)
        assert alpha == pytest.approx(grid, abs=1e-3)
    assert res.unexplained == ()


MF_ARD = {"theory": "mean_field_ard", "model": "mf_ard", "d": 35, "N": 128, "kappa": 0.1,
          "target": {"kind": "parity", "k": 2}}
#: κ of (lower spinodal, first order, upper spinodal) at N = 128 and 1024, from κ sweeps (4 digits).
MF_ARD_EDGES = {128: (0.0805, 0.0957, 0.1042), 1024: (0.0858, 0.0994, 0.1082)}


@pytest.mark.parametrize("order", [("kappa", "N"), pytest.param(("N", "kappa"), marks=pytest.mark.slow)])
def test_mean_field_ard_lines_cross_the_whole_box_in_either_order(order: tuple[str, str]) -> None:
    """Two rows only (the box's κ or N edges): in the order (κ, N) no row sees a line, the N edges see all three;
    N is the bound problem's real control either way (first: the spec is re-bound at every κ instead)."""
    theory = get("mean_field_ard")
    spec = theory.spec_model.model_validate(MF_ARD)
    problem = theory.two_parameter_problem(spec, order)
    box = {"kappa": (0.05, 0.15), "N": (128.0, 1024.0)}
    res = trace_boundaries(problem, box[order[0]], box[order[1]], LineOptions(seeds=2, ds_max=0.1, tolerance=1e-8))
    k = order.index("kappa")
    lines = {kind: res.of_kind(kind) for kind in (SpecialKind.FOLD, SpecialKind.FIRST_ORDER)}
    assert len(lines[SpecialKind.FOLD]) == 2 and len(lines[SpecialKind.FIRST_ORDER]) == 1
    for line in (*lines[SpecialKind.FOLD], *lines[SpecialKind.FIRST_ORDER]):
        assert [e.kind for e in line.ends] == ["domain", "domain"]
    for n, (low, first, high) in MF_ARD_EDGES.items():
        def kappa_at(line, n=n):
            (end,) = [e for e in line.ends if e.point[1 - k] == pytest.approx(n)]
            return end.point[k]
        folds = sorted(kappa_at(line) for line in lines[SpecialKind.FOLD])
        assert folds == pytest.approx([low, high], abs=1e-4)
        assert kappa_at(lines[SpecialKind.FIRST_ORDER][0]) == pytest.approx(first, abs=1e-4)
    assert res.unexplained == () and res.warnings == ()


MF_ARD_NP = MF_ARD | {"kappa": 0.096, "P": 2000}


def _first_order_N(P: int, values: list[float]) -> float:
    """N of the first-order point of an N sweep at P (κ = 0.096): the one-parameter sweep's own location."""
    theory = get("mean_field_ard")
    spec = theory.spec_model.model_validate(MF_ARD_NP | {"P": P})
    sweep = theory.sweep(spec, "N", values, "continuation", SolverOptions())
    (point,) = [s for s in sweep.special_points if s.kind is SpecialKind.FIRST_ORDER]
    return point.parameter


@pytest.mark.slow  # 7–18 s (a finite-P law per residual); test_real_integers.py: two real integers, closed form
def test_mean_field_ard_box_in_two_integer_fields() -> None:
    """N and P both take integers and mean_field_ard declares both real: the first-order line crosses the box from
    edge to edge through real values of both, and meets the N sweeps at the P edges within 1e-3 relative (a 5 % shift
    of the line is 8 in N). The order (P, N) runs the same code (the second field the bound problem's control, the
    first re-bound) with the box's sides exchanged."""
    order = ("N", "P")
    theory = get("mean_field_ard")
    spec = theory.spec_model.model_validate(MF_ARD_NP)
    assert set(order) <= set(theory.real_integers_for(spec))
    problem = theory.two_parameter_problem(spec, order)
    box = {"N": (128.0, 256.0), "P": (2000.0, 8000.0)}
    res = trace_boundaries(problem, box[order[0]], box[order[1]], LineOptions(seeds=2, tolerance=1e-8))
    assert res.unexplained == () and res.warnings == ()
    (line,) = res.lines
    assert line.kind is SpecialKind.FIRST_ORDER and set(line.branches) == {"symmetric", "aligned"}
    assert [e.kind for e in line.ends] == ["domain", "domain"]
    n, p = order.index("N"), order.index("P")
    assert any(q.point[n] != round(q.point[n]) for q in line.points), "the line passes through real values of N"

    def N_at(line: Curve, P: float) -> float:
        (end,) = [e for e in line.ends if e.point[p] == pytest.approx(P)]
        return end.point[n]

    for P, values in ((2000, [160.0, 180.0]), (8000, [140.0, 160.0])):
        assert N_at(line, P) == pytest.approx(_first_order_N(P, values), rel=1e-3)
