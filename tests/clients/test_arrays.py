"""Results as labelled arrays and tables: every number in the arrays is the JSON's (read through the compact-point
rule, ``branch_of``), every quantity is reached by its dotted name, an unknown name lists the names there are, and
a netCDF file reads back identical. The results come from the embedded service (real solves and jobs)."""

from __future__ import annotations

import csv
import io
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xarray as xr
from fastapi.testclient import TestClient

from clients import UnknownQuantity, plot, quantity_names, rows, series, to_csv
from clients.arrays import open_netcdf, to_netcdf, to_xarray
from clients.names import lookup
from clients.result import Result, as_result
from clients.tables import branch_names, branch_of, read_csv
from service.app import create_app
from service.settings import Settings
from tests.clients.csv_lines import data_lines

POTENTIAL: dict[str, Any] = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3,
                             "u": 20.0}
DIGITS: dict[str, Any] = {"theory": "kernel_renormalization", "activation": "erf", "N1": 50, "T": 0.1,
                          "data": {"kind": "digits", "classes": [3, 8], "P": 40, "P_test": 10}}


def _job(api: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    accepted = api.post("/v1/sweeps", json=body)
    assert accepted.status_code == 202, accepted.text
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = api.get(f"/v1/jobs/{accepted.json()['job_id']}", params={"limit": 1000}).json()
        if status["status"] == "finished":
            return status["result"]
        assert status["status"] in ("queued", "running"), status
        time.sleep(0.1)
    raise AssertionError("the job did not finish")


@pytest.fixture(scope="module")
def served() -> dict[str, Any]:
    with TestClient(create_app(Settings(redis_url=None, rate_limit_per_minute=0))) as api:
        tables = {t["name"]: {q["name"]: q for q in t["quantities"]} for t in api.get("/v1/theories").json()}
        u_values = {"start": 20, "stop": 40, "num": 21}
        return {
            "tables": tables,
            "solve": api.post("/v1/solve", json={"model": {**POTENTIAL, "u": 29.45}}).json(),
            "sweep": _job(api, {"model": POTENTIAL, "parameter": "u", "values": u_values}),
            "digits": _job(api, {"model": DIGITS, "parameter": "T", "values": [1e-4, 0.1, 10.0]}),
            "deep": _job(api, {"model": {**DIGITS, "depth": 2}, "parameter": "T", "values": [0.05, 0.1, 0.2]}),
            "grid": _job(api, {"model": POTENTIAL, "parameter": ["b", "u"], "values": [[0.28, 0.3], u_values],
                               "method": "grid"}),
            "boundary": _job(api, {"model": POTENTIAL, "parameter": ["b", "u"], "method": "boundary",
                                   "values": [{"start": 0.25, "stop": 0.4, "num": 2},
                                              {"start": 10, "stop": 60, "num": 2}]}),
        }


def _same(array: Any, values: list[Any]) -> None:
    """The array holds ``values`` (None = NaN)."""
    np.testing.assert_array_equal(np.asarray(array, dtype=float),
                                  np.array([np.nan if v is None else v for v in values], dtype=float))


def _round_trip(data: Any, path: Path) -> Any:
    to_netcdf(data, str(path))
    back = open_netcdf(str(path))
    tree = data if isinstance(data, xr.DataTree) else xr.DataTree(data)
    xr.testing.assert_identical(back, tree)
    return back


def test_a_solve_is_a_dataset_along_branch(served: dict[str, Any], tmp_path: Path) -> None:
    result = served["solve"]
    ds = to_xarray(result, served["tables"]["rubin_cavity"])
    names = [b["name"] for b in result["branches"]]
    assert list(ds["branch"].values) == names and ds.attrs["equilibrium"] == result["equilibrium"]
    for name in names:
        b = branch_of(result, name)
        assert float(ds["rho"].sel(branch=name)) == b["order_parameters"]["rho"]
        wells = b["observables"]["potential_wells"]
        _same(ds["potential_wells.depth"].sel(branch=name), [w["depth"] for w in wells])
        assert list(ds["potential_wells.kind"].sel(branch=name).values) == [w["kind"] for w in wells]
        assert bool(ds["stable"].sel(branch=name)) == next(x for x in result["branches"] if x["name"] == name)["stable"]
    assert ds["potential_wells.depth"].dims == ("branch", "well")
    assert ds["rho_star"].attrs["symbol"] == r"$\rho^*$" and ds["rho_star"].attrs["long_name"]
    assert json.loads(ds.attrs["provenance"])["spec_hash"] == result["spec_hash"]
    _round_trip(ds, tmp_path / "solve.nc")


def test_a_sweep_is_a_tree_of_points_curves_and_special_points(served: dict[str, Any], tmp_path: Path) -> None:
    result = served["sweep"]
    tree = to_xarray(result, served["tables"]["rubin_cavity"])
    us = [p["parameter"] for p in result["points"]]
    grid = tree["points"]
    assert grid["rho"].dims == ("u", "branch") and list(grid["u"].values) == us
    assert grid["u"].attrs["symbol"] == "$u$"
    for name in branch_names(result):
        values = []
        for p in result["points"]:
            b = branch_of(p, name)
            values.append(None if b is None else b["order_parameters"].get("rho"))
        _same(grid["rho"].sel(branch=name), values)
    # the equilibrium along u, and the quantity named like the swept field kept apart from the coordinate
    _same(tree["equilibrium"]["rho_star"], [p["order_parameters"]["rho_star"] for p in result["points"]])
    _same(tree["equilibrium"]["observables.u"], us)
    assert list(grid["equilibrium_branch"].values) == [p["equilibrium"] for p in result["points"]]
    # each traced curve along its own arclength, its columns as served
    assert len(tree["curves"].children) == len(result["curves"])
    for k, curve in enumerate(result["curves"]):
        ds = tree[f"curves/{k}"]
        _same(ds["arclength"], curve["arclength"])
        _same(ds["parameter"], curve["parameter"])
        _same(ds["rho"], curve["order_parameters"]["rho"])
        assert list(ds["curve_branch"].values) == curve["branch"]
        assert json.loads(ds.attrs["branches"]) == curve["branches"]
    # the S-curve turns at the fold (the aligned and barrier branches meet there)
    fold = next(t for t in result["transitions"] if t["type"] == "fold")
    s_curve = next(k for k, c in enumerate(result["curves"]) if "barrier" in c["branches"])
    assert float(tree[f"curves/{s_curve}"]["parameter"].min()) == pytest.approx(fold["parameter"], abs=1e-12)
    sp = tree["special_points"]
    _same(sp["parameter"], [t["parameter"] for t in result["transitions"]])
    assert list(sp["kind"].values) == [t["kind"] for t in result["transitions"]]
    _round_trip(tree, tmp_path / "sweep.nc")


def test_a_phase_diagram_is_a_grid_with_its_lines_as_arrays(served: dict[str, Any], tmp_path: Path) -> None:
    result = served["grid"]
    tree = to_xarray(result, served["tables"]["rubin_cavity"])
    assert tree["points"]["rho"].dims == ("b", "u", "branch") and list(tree["points"]["b"].values) == [0.28, 0.3]
    for p in result["points"]:
        b, u = p["parameter"]
        assert str(tree["points"]["equilibrium_branch"].sel(b=b, u=u).values) == p["equilibrium"]
        assert float(tree["equilibrium"]["rho_star"].sel(b=b, u=u)) == p["order_parameters"]["rho_star"]
    for k, line in enumerate(result["lines"]):
        _same(tree[f"lines/{k}"]["points"].sel(parameter="b"), [q["b"] for q in line["points"]])
        _same(tree[f"lines/{k}"]["points"].sel(parameter="u"), [q["u"] for q in line["points"]])
        assert tree[f"lines/{k}"].attrs["kind"] == line["kind"]
    _round_trip(tree, tmp_path / "grid.nc")

    traced = served["boundary"]
    lines = to_xarray(traced, served["tables"]["rubin_cavity"])
    assert len(lines["lines"].children) == len(traced["lines"]) == 3
    for k, line in enumerate(traced["lines"]):
        np.testing.assert_array_equal(lines[f"lines/{k}"]["points"].values, line["points"])
        assert list(lines[f"lines/{k}"]["parameter"].values) == ["b", "u"]
        assert json.loads(lines[f"lines/{k}"].attrs["branches"]) == line["branches"]
    np.testing.assert_array_equal(lines["regions"]["points"].values, [p["point"] for p in traced["regions"]])
    assert list(lines["regions"]["phase"].values) == [p["phase"] for p in traced["regions"]]
    _round_trip(lines, tmp_path / "boundary.nc")


def test_nested_quantities_by_dotted_name_in_series_rows_csv_and_arrays(served: dict[str, Any]) -> None:
    result = served["digits"]
    nested = [p["observables"]["class_distance"]["D2"] for p in result["points"]]
    xs, d2 = series(result, "class_distance.D2")
    assert xs == [1e-4, 0.1, 10.0] and d2 == nested and all(math.isfinite(v) for v in d2)
    assert [r["class_distance.D2"] for r in rows(result)] == nested
    table = list(csv.DictReader(data_lines(to_csv(result))))
    assert [float(r["class_distance.D2"]) for r in table] == nested
    assert len(json.loads(table[0]["test_mean"])) == 10  # a vector quantity: its values, as a JSON array
    tree = to_xarray(result, served["tables"]["kernel_renormalization"])
    np.testing.assert_array_equal(tree["equilibrium"]["class_distance.D2"].values, nested)
    assert tree["equilibrium"]["class_distance.D2"].attrs["symbol"] == "$D^2$"
    assert tree["equilibrium"]["test_mean"].dims == ("T", "test_point")
    assert lookup(result["points"][0], "weight_correlations.max_eigenvalue") == (
        result["points"][0]["observables"]["weight_correlations"]["max_eigenvalue"])


def test_an_unknown_name_is_an_error_that_lists_the_names_there_are(served: dict[str, Any]) -> None:
    result = served["digits"]
    for call in (lambda: series(result, "D2"), lambda: plot.learning_curve(result, "D2"),
                 lambda: plot.branch_diagram(result, "D2"), lambda: lookup(result["points"][0], "D2")):
        with pytest.raises(UnknownQuantity) as err:
            call()
        assert "class_distance.D2" in str(err.value) and "did you mean" in str(err.value)
    assert "class_distance.D2" in quantity_names(result) and "class_distance" not in quantity_names(result)
    with pytest.raises(ValueError, match="test_mean is vector-valued"):
        plot.learning_curve(result, "test_mean")


def test_csv_carries_each_columns_units_and_symbol_and_pandas_reads_it(served: dict[str, Any]) -> None:
    import pandas as pd

    result = served["sweep"]
    text = to_csv(result)
    assert text.startswith("# units: {") and text.splitlines()[1].startswith("# symbols: {")
    plain = pd.read_csv(io.StringIO(text), comment="#")  # what a user without SaddleLab does
    frame = read_csv(io.StringIO(text))
    pd.testing.assert_frame_equal(plain, frame)
    assert list(frame["u"]) == [p["parameter"] for p in result["points"]]
    table = result["quantities"]
    for column in ("u", "rho", "test_mse"):
        assert frame.attrs["units"][column] == table[column]["units"]
        assert frame.attrs["symbols"][column] == table[column]["symbol"]
    assert frame.attrs["symbols"]["rho"] == r"$\rho$" and frame.attrs["units"]["rho"] == "1"
    # a quantity named like the swept field is prefixed with its group, and keeps its labels
    assert frame.attrs["symbols"]["observables.u"] == table["u"]["symbol"]
    assert "equilibrium" not in frame.attrs["units"] and "equilibrium" not in frame.attrs["symbols"]  # a name
    lines = read_csv(io.StringIO(to_csv(served["boundary"])))
    assert lines.attrs["symbols"]["b"] == table["b"]["symbol"] and lines.attrs["units"]["u"] == "1"


def test_csv_holds_every_branch_in_long_format(served: dict[str, Any]) -> None:
    result = served["sweep"]
    table = list(csv.DictReader(data_lines(to_csv(result, "all"))))
    pairs = [(point, b) for point in result["points"] for b in point["branches"]]
    assert [(float(r["u"]), r["branch"]) for r in table] == [(point["parameter"], b["name"]) for point, b in pairs]
    for r, (point, b) in zip(table, pairs, strict=True):
        assert float(r["rho"]) == branch_of(point, b["name"])["order_parameters"]["rho"]
        assert r["stable"] == str(b["stable"])
    with pytest.raises(KeyError, match="branches: center"):
        rows(result, "centre")


# ---------------------------------------------------------------------------------------------
# self-describing results: labels, units and the arrays' shape from the result alone


def _variables_of(data: Any) -> list[tuple[str, str, Any]]:
    """(group path, name, variable) of every variable and coordinate of a dataset or tree."""
    tree = data if isinstance(data, xr.DataTree) else xr.DataTree(data)
    return [(node.path, str(name), v) for node in tree.subtree
            for name, v in node.to_dataset(inherit=False).variables.items()]


def test_a_saved_result_labels_its_figures_itself_from_json_and_from_netcdf(served: dict[str, Any],
                                                                             tmp_path: Path) -> None:
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(served["sweep"]))
    saved = json.loads(path.read_text())
    assert saved["quantities"]["rho"] == {"symbol": r"$\rho$", "long_name": saved["quantities"]["rho"]["long_name"],
                                          "units": "1", "role": "order_parameter"}
    from_json = plot.branch_diagram(saved, "rho")  # no client, no table: the result's own
    assert (from_json.get_xlabel(), from_json.get_ylabel()) == ("$u$", r"$\rho$")
    to_netcdf(to_xarray(saved), str(tmp_path / "sweep.nc"))
    from_file = plot.branch_diagram(open_netcdf(str(tmp_path / "sweep.nc")), "rho")
    assert (from_file.get_xlabel(), from_file.get_ylabel()) == ("$u$", r"$\rho$")
    # the same figure: every drawn line and the caption (whose symbols come from the file as well)
    drawn = [[(ln.get_gid(), *(np.asarray(d, dtype=float).astype(str).tolist() for d in ln.get_data()))
              for ln in ax.get_lines()] for ax in (from_json, from_file)]
    assert drawn[0] == drawn[1] and len(drawn[0]) > 5
    captions = [next(t.get_text() for t in ax.texts if t.get_gid() == "caption") for ax in (from_json, from_file)]
    assert captions[0] == captions[1] and r"$\sigma_w^2$ = 0.5" in captions[0]
    learning = plot.learning_curve(open_netcdf(str(tmp_path / "sweep.nc")))
    assert learning.get_ylabel() == r"$\rho$"  # the headline test_mse is constant in this mode: the first that varies


def test_one_result_is_read_once_from_a_response_a_json_file_or_a_netcdf_file(served: dict[str, Any],
                                                                             tmp_path: Path) -> None:
    live = served["sweep"]
    (tmp_path / "sweep.json").write_text(json.dumps(live))
    to_netcdf(to_xarray(live), str(tmp_path / "sweep.nc"))
    results = [as_result(live), as_result(tmp_path / "sweep.json"), as_result(str(tmp_path / "sweep.nc"))]
    names = ["center", "aligned", "barrier"]
    for r in results:
        assert isinstance(r, Result) and as_result(r) is r  # wrapped once
        assert (r.kind, r.parameters, r.headline) == ("sweep", ["u"], "test_mse")
        assert sorted(r.branch_names) == sorted(names) and "rho" in r.quantity_names
        assert r.labels.attrs("rho")["symbol"] == r"$\rho$" and r.labels.attrs("rho")["units"] == "1"
        assert r.symbols()("u") == "$u$" and r.symbols({"u": {"symbol": "$U$"}})("u") == "$U$"  # symbols= overrides
        xs, rho = series(r, "rho", "aligned")
        assert xs == [p["parameter"] for p in live["points"]]
        assert rho == series(live, "rho", "aligned")[1]
    # tables, arrays and figures take the file itself
    assert to_csv(tmp_path / "sweep.json") == to_csv(live)
    assert to_xarray(tmp_path / "sweep.json")["equilibrium"]["rho"].attrs["symbol"] == r"$\rho$"
    ax = plot.branch_diagram(str(tmp_path / "sweep.nc"), "rho")
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("$u$", r"$\rho$")
    with pytest.raises(TypeError, match="not a result"):
        as_result(42)


def test_every_variable_of_a_netcdf_file_has_units_a_long_name_and_a_symbol(served: dict[str, Any],
                                                                             tmp_path: Path) -> None:
    for name in ("solve", "sweep", "digits", "grid", "boundary"):
        path = tmp_path / f"{name}.nc"
        to_netcdf(to_xarray(served[name]), str(path))
        back = open_netcdf(str(path))
        variables = _variables_of(back)
        assert len(variables) > 5
        for group, var, v in variables:
            missing = [a for a in ("units", "long_name", "symbol") if not v.attrs.get(a)]
            assert not missing, (name, group, var, missing)
    tree = to_xarray(served["sweep"])
    assert tree["points"]["rho"].attrs["units"] == "1" and tree["points"]["stable"].attrs["symbol"]
    assert tree["points"]["free_entropy"].attrs["long_name"].startswith("free entropy")
    assert tree["curves/0"]["parameter"].attrs["symbol"] == "$u$"


def test_arrays_keep_to_their_own_dimensions_with_one_dtype_per_variable(served: dict[str, Any]) -> None:
    result = served["sweep"]
    tree = to_xarray(result)
    assert not tree.to_dataset().dims and not tree.to_dataset().coords  # nothing for a child to inherit
    for k, curve in enumerate(result["curves"]):
        frame = tree[f"curves/{k}"].to_dataset().to_dataframe()
        assert len(frame) == len(curve["parameter"])  # one row per point of the curve
    assert "branch" not in tree["equilibrium"].to_dataset().dims and "u" in tree["equilibrium"].to_dataset().dims
    assert len(tree["equilibrium"].to_dataset().to_dataframe().reset_index()["u"].unique()) == len(result["points"])
    dtypes: dict[str, set[str]] = {}
    for data in (tree, to_xarray(served["solve"]), to_xarray(served["grid"])):
        for group, name, v in _variables_of(data):
            assert 0 not in v.shape, (group, name, v.dims)  # no empty stray dimension (barriers_dim_0: 0)
            dtypes.setdefault(name, set()).add(v.dtype.kind)
    assert dtypes["stable"] == {"b"} and dtypes["converged"] == {"b"} and dtypes["present"] == {"b"}
    mixed = {n: k for n, k in dtypes.items() if len(k - {"U"}) > 1}  # text may differ in width only
    assert not mixed, mixed
    # where a branch does not exist, present says so; its numbers are NaN
    grid = tree["points"]
    absent = ~grid["present"]
    assert bool(absent.any()) and bool(grid["rho"].where(absent).isnull().all())
    assert not bool(grid["stable"].where(absent, False).any())


def test_a_result_comes_back_from_its_arrays(served: dict[str, Any], tmp_path: Path) -> None:
    from clients.from_arrays import from_xarray

    for name, quantity in (("sweep", "rho_star"), ("digits", "class_distance.D2")):
        result = served[name]
        back = from_xarray(_round_trip(to_xarray(result), tmp_path / f"{name}.nc"))
        assert series(back, quantity) == series(result, quantity)
        assert back["quantities"] == result["quantities"] and back["model"] == result["model"]
        assert [t["parameter"] for t in back["transitions"]] == [t["parameter"] for t in result["transitions"]]
        for p, q in zip(back["points"], result["points"], strict=True):
            assert p["equilibrium"] == q["equilibrium"]
            assert sorted(b["name"] for b in p["branches"]) == sorted(b["name"] for b in q["branches"])
            for b in q["branches"]:
                ours, theirs = branch_of(p, b["name"]), branch_of(q, b["name"])
                assert ours["stable"] == bool(theirs["stable"]) and ours["free_entropy"] == theirs["free_entropy"]
        for c, d in zip(back["curves"] or [], result["curves"] or [], strict=True):
            assert c["parameter"] == d["parameter"] and c["branch"] == d["branch"] and c["special"] == d["special"]
    solve = from_xarray(to_xarray(served["solve"]))
    assert solve["equilibrium"] == served["solve"]["equilibrium"]
    assert solve["order_parameters"]["rho"] == served["solve"]["order_parameters"]["rho"]
    boundary = from_xarray(to_xarray(served["boundary"]))
    assert [ln["points"] for ln in boundary["lines"]] == [ln["points"] for ln in served["boundary"]["lines"]]
    assert boundary["regions"] == served["boundary"]["regions"]


def test_curves_and_points_name_their_quantities_by_one_rule(served: dict[str, Any]) -> None:
    for name in ("sweep", "digits", "deep"):
        result = served[name]
        names = set(quantity_names(result))
        for curve in result["curves"]:
            for group in ("order_parameters", "observables"):
                assert set(curve[group]) <= names, (name, set(curve[group]) - names)
    deep = served["deep"]
    for curve in deep["curves"]:  # a deep network's Qbar: one vector per point, whole, as in the points
        assert all(len(v) == 2 for v in curve["order_parameters"]["Qbar"])
    tree = to_xarray(deep)
    assert tree["points"]["Qbar"].dims == ("T", "branch", "layer")
    assert tree["curves/0"]["Qbar"].dims == ("arclength", "layer")
    assert tree["curves/0"]["Qbar"].attrs["symbol"] == r"$\bar Q$"
    np.testing.assert_array_equal(tree["curves/0"]["Qbar"].values, deep["curves"][0]["order_parameters"]["Qbar"])
