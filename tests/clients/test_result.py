"""A result as labelled columns: dims, coordinates, one column per quantity with its table entry, and the typed
records the figures read (transitions, curves, lines). The expected values are written out by hand from the small
JSON below, which follows the served layout: a sweep point is compact (a branch lists only what differs from the
point's tables, null for what it lacks)."""

from __future__ import annotations

from typing import Any

import pytest

from clients import UnknownQuantity, rows, series
from clients.result import Curve, Line, Transition, as_result

QUANTITIES = {"rho": {"symbol": r"$\rho$", "long_name": "overlap", "units": "1", "role": "order_parameter"},
              "test_mse": {"symbol": r"$\epsilon$", "units": "1", "role": "headline"}}


def _sweep() -> dict[str, Any]:
    def point(u: float, eq: str, rho: float, aligned: dict[str, Any] | None) -> dict[str, Any]:
        branches = [{"name": "center", "stable": eq == "center", "converged": True, "free_entropy": -u,
                     "order_parameters": {"rho": 0.0}, "observables": {"class_distance": {"D2": None}}}]
        if aligned is not None:
            branches.append({"name": "aligned", "stable": eq == "aligned", "converged": True, **aligned})
        return {"parameter": u, "equilibrium": eq, "converged": True, "branches": branches,
                "order_parameters": {"rho": rho}, "observables": {"test_mse": 1.0 / u, "class_distance": {"D2": u}}}

    return {"theory": "rubin_cavity", "parameter": "u", "model": {"theory": "rubin_cavity", "b": 0.3},
            "quantities": QUANTITIES,
            "points": [point(20.0, "center", 0.0, None), point(30.0, "aligned", 0.7, {}),
                       point(40.0, "aligned", 0.9, {"observables": {"test_mse": 0.02}})],
            "transitions": [{"kind": "first_order", "type": "first_order", "parameter": 29.5,
                             "branches": ["aligned", "center"]},
                            {"kind": "spinodal", "parameter": None, "branches": ["aligned"]}],
            "curves": [{"branch": ["center", "center"], "parameter": [20.0, 40.0], "stable": [True, False],
                        "arclength": [0.0, 1.0], "order_parameters": {"rho": [0.0, 0.0]},
                        "observables": {"test_mse": [0.05, 0.025]},
                        "special": [{"index": 1, "kind": "spinodal", "type": "fold", "parameter": 40.0,
                                     "branches": ["center"]}]}]}


def test_a_sweep_is_labelled_columns_with_dims_coordinates_and_each_quantitys_entry() -> None:
    r = as_result(_sweep())
    assert r.dims == {"point": 3, "branch": 2}
    assert r.coords == {"u": [20.0, 30.0, 40.0], "branch": ["center", "aligned"]}
    assert list(r.columns) == ["rho", "test_mse", "class_distance.D2"]  # first seen, order parameters first
    rho = r.table("rho")
    assert (rho.group, rho.symbol, rho.units, rho.long_name) == ("order_parameters", r"$\rho$", "1", "overlap")
    assert rho.point == [0.0, 0.7, 0.9]
    # a compact branch takes the point's value where it lists none; absent where it does not exist
    assert rho.values("center") == [0.0, 0.0, 0.0] and rho.values("aligned") == [None, 0.7, 0.9]
    mse = r.table("test_mse")
    assert mse.group == "observables" and mse.attrs["role"] == "headline"
    assert mse.values("aligned") == [None, 1.0 / 30.0, 0.02]  # the branch's own value where it lists one
    # null in a branch for a value the point has: the branch lacks it
    assert r.table("class_distance.D2").values("center") == [None, None, None]
    assert r.table("class_distance.D2").point == [20.0, 30.0, 40.0]
    assert r.table("class_distance.D2").symbol == "class_distance.D2"  # no entry: its dotted name
    with pytest.raises(UnknownQuantity, match=r"did you mean class_distance\.D2"):
        r.table("D2")


def test_tables_read_the_same_columns() -> None:
    r = as_result(_sweep())
    assert series(r, "rho", "aligned") == ([20.0, 30.0, 40.0], [None, 0.7, 0.9])
    table = rows(r, "aligned")
    assert [row.get("test_mse") for row in table] == [None, 1.0 / 30.0, 0.02]
    assert [row["stable"] for row in table] == [None, True, True]
    assert "rho" not in table[0]  # the branch does not exist at u = 20: no quantity at all
    everything = rows(r, "all")
    assert [(row["u"], row["branch"]) for row in everything] == [
        (20.0, "center"), (30.0, "center"), (30.0, "aligned"), (40.0, "center"), (40.0, "aligned")]
    assert [row["free_entropy"] for row in everything if row["branch"] == "center"] == [-20.0, -30.0, -40.0]


def test_the_arrays_hold_the_columns() -> None:
    pytest.importorskip("xarray")
    from clients.arrays import to_xarray

    r = as_result(_sweep())
    tree = to_xarray(r)
    points = tree["points"].to_dataset()
    for name, column in r.columns.items():
        for branch in r.branch_names:
            got = points[name].sel(branch=branch).values.tolist()
            want = [float("nan") if v is None else v for v in column.values(branch)]
            assert str(got) == str(want), (name, branch)
        assert points[name].attrs.get("units") == column.units


def test_figures_read_typed_transitions_curves_and_lines() -> None:
    r = as_result(_sweep())
    assert r.transitions == [Transition("first_order", 29.5, "first_order", ("aligned", "center")),
                             Transition("spinodal", None, None, ("aligned",))]
    (curve,) = r.curves
    assert isinstance(curve, Curve) and curve.values("test_mse") == [0.05, 0.025] and curve.values("D2") is None
    assert (curve.special[0].kind, curve.special[0].index, curve.special[0].parameter) == ("spinodal", 1, 40.0)
    assert r.states("aligned")[0] is None and r.states("aligned")[2].stable is True
    grid = as_result({"parameters": ["b", "u"], "points": [],
                      "lines": [{"kind": "spinodal", "name": "spinodal:aligned",
                                 "points": [{"b": 0.2, "u": 2.7, "refined": True}]}]})
    traced = as_result({"parameters": ["b", "u"], "method": "boundary", "box": {"b": [0, 1], "u": [0, 5]},
                        "lines": [{"kind": "stability_loss", "points": [[0.2, 2.7]], "branches": ["center"]}],
                        "regions": [{"point": [0.1, 1.0], "phase": "GFL"}], "critical_points": []})
    assert grid.lines == [Line("spinodal", [(0.2, 2.7)], None, (), "spinodal:aligned")]
    assert traced.lines == [Line("stability_loss", [(0.2, 2.7)], None, ("center",))]
    assert traced.box == {"b": [0, 1], "u": [0, 5]} and grid.box is None
    assert [(p.point, p.label) for p in traced.probes] == [((0.1, 1.0), "GFL")]
