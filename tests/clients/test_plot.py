"""clients.plot draws what the results say: branches by stability, transitions, wells, the phase diagram."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from clients import plot


def _branch(name: str, rho: float, stable: bool, mse: float | None = None) -> dict:
    obs = {"test_mse": mse} if mse is not None else {}
    return {"name": name, "converged": True, "stable": stable, "free_entropy": -rho, "order_parameters": {"rho": rho},
            "observables": obs}


def _sweep() -> dict:
    # centre everywhere, stable until u = 3; an aligned branch from u = 2 on; first-order at 2.5.
    points = []
    for u in (1.0, 2.0, 3.0, 4.0):
        branches = [_branch("center", 0.0, u < 3, mse=1.0)]
        if u >= 2:
            branches.append(_branch("aligned", u / 10, True, mse=0.5))
        eq = "center" if u < 2.5 else "aligned"
        point = {"parameter": u, "converged": True, "equilibrium": eq, "branches": branches}
        chosen = next(b for b in branches if b["name"] == eq)
        points.append({**point, "order_parameters": chosen["order_parameters"], "observables": chosen["observables"]})
    transitions = [
        {"kind": "spinodal", "parameter": 1.5, "branches": ["aligned"]},
        {"kind": "first_order", "parameter": 2.5, "branches": ["aligned", "center"]},
        {"kind": "spinodal", "parameter": 2.9, "branches": ["center"]},
    ]
    return {"parameter": "u", "points": points, "transitions": transitions}


def _vlines(ax) -> list[float]:
    return sorted(ln.get_xdata()[0] for ln in ax.get_lines() if len(set(ln.get_xdata())) == 1
                  and list(ln.get_ydata()) == [0, 1])


def test_branch_diagram_styles_stability_and_marks_every_transition() -> None:
    ax = plot.branch_diagram(_sweep(), "rho")
    by_style = [(ln.get_label(), ln.get_linestyle(), list(ln.get_xdata())) for ln in ax.get_lines()]
    # The centre is stable (solid) on [1, 2] and unstable (dashed) from 3 on, joined at the change.
    assert ("center", "-", [1.0, 2.0]) in by_style
    assert any(label.startswith("_") and style == "--" and xs == [2.0, 3.0, 4.0] for label, style, xs in by_style)
    assert ("aligned", "-", [2.0, 3.0, 4.0]) in by_style
    assert _vlines(ax) == [1.5, 2.5, 2.9]
    labels = {t.get_text() for t in ax.get_legend().get_texts()}
    assert {"center", "aligned", "equilibrium", "first-order", "spinodal"} <= labels
    plt.close("all")


def test_learning_curve_plots_the_equilibrium_quantity() -> None:
    ax = plot.learning_curve(_sweep())
    curve = next(ln for ln in ax.get_lines() if ln.get_label() == "test_mse")
    assert list(curve.get_xdata()) == [1.0, 2.0, 3.0, 4.0]
    assert list(curve.get_ydata()) == [1.0, 1.0, 0.5, 0.5]
    assert ax.get_ylabel() == "test_mse"
    plt.close("all")


def test_potential_marks_wells_and_barriers() -> None:
    obs = {"potential_wells": [{"rho": 0.0, "depth": 0.0, "curvature": 1.0, "kind": "center"},
                               {"rho": 0.8, "depth": -0.1, "curvature": 2.0, "kind": "aligned", "weight": 0.7}],
           "barriers": [{"rho": 0.4, "depth": 0.05, "curvature": -1.0}]}
    ax = plot.potential({"observables": obs})
    wells = [(ln.get_xdata()[0], ln.get_ydata()[0]) for ln in ax.get_lines() if ln.get_marker() == "v"
             and len(ln.get_xdata())]
    assert wells == [(0.0, 0.0), (0.8, -0.1)]
    assert any("weight 0.7" in t.get_text() for t in ax.texts)
    quad = [ln for ln in ax.get_lines() if ln.get_label() == "local quadratic"]
    assert len(quad) == 1  # labelled once, drawn for each of the three stationary points
    # With a sampled curve from the theory, the curve itself is drawn.
    ax2 = plot.potential({"observables": {**obs, "potential_curve": {"rho": [0, 1], "value": [0, -0.1]}}})
    assert any(ln.get_label() == "potential" for ln in ax2.get_lines())
    with pytest.raises(ValueError):
        plot.potential({"observables": {}})
    plt.close("all")


def test_phase_diagram_groups_points_by_equilibrium_and_draws_lines() -> None:
    result = {
        "parameters": ["b", "u"],
        "points": [{"parameter": [b, u], "equilibrium": "center" if u < 2 else "aligned", "branches": []}
                   for b in (0.2, 0.3) for u in (1.0, 3.0)],
        "lines": [{"name": "first_order:aligned/center", "kind": "first_order",
                   "points": [{"b": 0.2, "u": 2.1}, {"b": 0.3, "u": 1.9}]}],
    }
    ax = plot.phase_diagram(result)
    assert len(ax.collections) == 2
    line = next(ln for ln in ax.get_lines() if ln.get_label() == "first_order:aligned/center")
    assert list(line.get_xdata()) == [2.1, 1.9] and list(line.get_ydata()) == [0.2, 0.3]
    with pytest.raises(ValueError):
        plot.branch_diagram(result)
    plt.close("all")


def test_plots_of_a_real_potential_sweep() -> None:
    from service.jobs.lines import assemble_line, run_line
    from service.schemas import SweepRequest
    from service.settings import Settings
    from service.sweep_plan import plan

    req = SweepRequest.model_validate({"model": {"theory": "rubin_cavity", "mode": "potential"}, "parameter": "u",
                                       "values": {"start": 20, "stop": 40, "num": 21}})
    payload = plan(req, Settings(redis_url=None))
    result = assemble_line(payload, run_line(payload))
    ax = plot.branch_diagram(result, "rho")
    names = {ln.get_label() for ln in ax.get_lines()}
    assert {"center", "aligned", "barrier"} <= names
    assert len(_vlines(ax)) == len(result["transitions"]) == 3
    plot.learning_curve(result)
    plot.potential(result["points"][-1])
    plt.close("all")


def _two_layer_point(alpha: float, q1: list[float], q2: list[list[float]]) -> dict:
    return {"parameter": alpha, "order_parameters": {"v2": [0.5, 1.5, 2.5], "Q1": q1, "v": [0.45, 1.34][: len(q2)],
                                                     "Q2": q2}}


def test_specialisation_map_draws_theory_beside_binned_experiment() -> None:
    theory = [_two_layer_point(4.0, [0.1, 0.6, 0.9], [[0.0, 0.2, 0.4]]),
              _two_layer_point(2.0, [0.0, 0.0, 0.3], [[0.0, 0.0, 0.1]])]
    experiment = [{"alpha": 4.0, "v2": [0.2, 0.25, 1.2, 2.4], "Q1": [0.0, 0.2, 0.5, 1.0], "Q2": [0, 0, 0.1, 0.3]}]
    axes = plot.specialisation_map(theory, experiment)
    assert axes.shape == (2, 2)
    # rows ordered by α; the theory curve is drawn at the atoms
    top_left = axes[0][0].get_lines()[0]
    assert list(top_left.get_ydata()) == [0.0, 0.0, 0.3]
    # the α = 4 experiment: neurons as dots, and bin means over |v2| (8 bins on [0, 2.4])
    dots, means = axes[1][1].get_lines()[:2]
    assert list(dots.get_ydata()) == [0.0, 0.2, 0.5, 1.0]
    assert list(means.get_ydata()) == pytest.approx([0.1, 0.5, 1.0])
    assert axes[0][1].texts and axes[0][1].texts[0].get_text() == "no experiment"
    plt.close("all")


def test_specialisation_map_second_layer_has_one_curve_per_readout_value() -> None:
    axes = plot.specialisation_map([_two_layer_point(4.0, [0, 0, 0], [[0.0, 0.1, 0.2], [0.1, 0.5, 0.9]])], layer=2)
    assert len(axes[0][0].get_lines()) == 2
    with pytest.raises(ValueError, match="v2"):
        plot.specialisation_map([{"parameter": 1.0, "order_parameters": {"Q": 0.3}}])


def test_phase_diagram_draws_traced_lines_by_kind_and_the_critical_points() -> None:
    result = {
        "parameters": ["beta", "h"],
        "method": "boundary",
        "lines": [
            {"kind": "first_order", "type": "first_order", "branches": ["up", "down"],
             "points": [[1.0, 0.0], [1.5, 0.0], [2.0, 0.0]], "ends": []},
            {"kind": "spinodal", "type": "fold", "branches": ["up"], "points": [[1.0, 0.0], [2.0, 0.2]], "ends": []},
            {"kind": "spinodal", "type": "fold", "branches": ["down"], "points": [[1.0, 0.0], [2.0, -0.2]],
             "ends": []},
        ],
        "critical_points": [{"point": [1.0, 0.0], "lines": [0, 1, 2]}],
    }
    ax = plot.phase_diagram(result)
    first = next(ln for ln in ax.get_lines() if ln.get_label() == "first order (traced)")
    assert list(first.get_xdata()) == [0.0, 0.0, 0.0] and list(first.get_ydata()) == [1.0, 1.5, 2.0]
    spinodals = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert len(spinodals) == 2  # both drawn, labelled once
    assert sum(ln.get_label() == "spinodal (traced)" for ln in ax.get_lines()) == 1
    star = next(ln for ln in ax.get_lines() if ln.get_label() == "critical point")
    assert list(star.get_xdata()) == [0.0] and list(star.get_ydata()) == [1.0]
    assert not ax.collections  # no grid points in a boundary result
    plt.close("all")
