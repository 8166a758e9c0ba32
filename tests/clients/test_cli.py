"""The ``saddlelab`` command against a live lab instance, and its argument handling."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from service import cli
from tests.clients.conftest import POTENTIAL, U_FIRST_ORDER, Lab
from tests.clients.csv_lines import data_lines


@pytest.fixture()
def spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(POTENTIAL))
    return path


def _remote(lab: Lab) -> list[str]:
    return ["--url", lab.url, "--api-key", lab.api_key]


@pytest.mark.redis
@pytest.mark.slow
def test_sweep_to_csv_with_progress(lab: Lab, spec_file: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "sweep.csv"
    code = cli.main(["sweep", str(spec_file), "--parameter", "u", "--start", "20", "--stop", "40", "--num", "41",
                     "--format", "csv", "-o", str(out), *_remote(lab)])
    assert code == 0
    table = list(csv.DictReader(data_lines(out.read_text())))
    assert len(table) == 41
    np.testing.assert_allclose([float(r["u"]) for r in table], np.linspace(20, 40, 41), atol=1e-12)
    assert {r["equilibrium"] for r in table} == {"center", "aligned"}
    err = capsys.readouterr().err
    assert "41/41" in err  # the progress bar
    first = [ln for ln in err.splitlines() if ln.startswith("# first_order")]
    assert len(first) == 1 and abs(float(first[0].split(" at ")[1].split()[0]) - U_FIRST_ORDER) < 1e-6


@pytest.mark.redis
@pytest.mark.slow
def test_job_prints_every_page_of_a_result(lab: Lab, spec_file: Path, capsys) -> None:
    assert cli.main(["sweep", str(spec_file), "--parameter", "u", "--start", "20", "--stop", "40", "--num", "40",
                     "--method", "grid", "--detach", *_remote(lab)]) == 0
    job_id = json.loads(capsys.readouterr().out)["job_id"]
    assert cli.main(["sweep", str(spec_file), "--parameter", "u", "--start", "20", "--stop", "40", "--num", "40",
                     "--method", "grid", "--no-progress", *_remote(lab)]) == 0  # waits for the same job
    capsys.readouterr()
    assert cli.main(["job", job_id, *_remote(lab)]) == 0
    job = json.loads(capsys.readouterr().out)
    assert job["status"] == "finished" and len(job["result"]["points"]) == 40  # three pages of 16, joined
    np.testing.assert_allclose([p["parameter"] for p in job["result"]["points"]], np.linspace(20, 40, 40))


@pytest.mark.redis
@pytest.mark.slow
def test_sweep_to_json_and_phase_diagram_from_values(lab: Lab, spec_file: Path, capsys) -> None:
    assert cli.main(["sweep", str(spec_file), "--parameter", "u", "--values", "25,30,35", "--method", "grid",
                     "--no-progress", *_remote(lab)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [p["parameter"] for p in result["points"]] == [25.0, 30.0, 35.0]
    # Two parameters: a phase diagram, one value spec per parameter.
    assert cli.main(["sweep", str(spec_file), "--parameter", "b", "--values", "0.28,0.3", "--parameter", "u",
                     "--values", "20,30,40", "--no-progress", *_remote(lab)]) == 0
    diagram = json.loads(capsys.readouterr().out)
    assert diagram["parameters"] == ["b", "u"]
    assert [p["parameter"] for p in diagram["points"]] == [[b, u] for b in (0.28, 0.3) for u in (20.0, 30.0, 40.0)]


@pytest.mark.redis
@pytest.mark.slow
def test_boundary_method_traces_the_lines_as_csv(lab: Lab, spec_file: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "lines.csv"
    code = cli.main(["sweep", str(spec_file), "--method", "boundary", "--parameter", "b", "--start", "0.25",
                     "--stop", "0.4", "--parameter", "u", "--start", "10", "--stop", "60", "--format", "csv",
                     "--no-progress", "-o", str(out), *_remote(lab)])
    assert code == 0
    table = list(csv.DictReader(data_lines(out.read_text())))
    assert {r["kind"] for r in table} == {"first_order", "spinodal", "stability_loss"}
    centre = [r for r in table if r["kind"] == "stability_loss"]
    # u = π(1 + 2σ_w²)/(4σ_w² b²) = π/b² at σ_w² = 1/2
    np.testing.assert_allclose([float(r["u"]) for r in centre], [np.pi / float(r["b"]) ** 2 for r in centre],
                               rtol=0, atol=1e-8)
    err = capsys.readouterr().err.splitlines()
    assert sum(ln.startswith("# ") and not ln.startswith("# phase") for ln in err) == 3  # one per line
    phases = [ln.split()[2] for ln in err if ln.startswith("# phase ")]  # two probes per line
    assert len(phases) == 6 and set(phases) == {"GFL", "GMFL-II"}


@pytest.mark.redis
@pytest.mark.slow
def test_solve_prints_the_response(lab: Lab, tmp_path: Path, capsys) -> None:
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"model": {**POTENTIAL, "u": 22.0}, "solver": {"tol_abs": 1e-11}}))
    assert cli.main(["solve", str(request), *_remote(lab)]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["equilibrium"] == "center" and body["theory"] == "rubin_cavity"


@pytest.mark.redis
@pytest.mark.slow
def test_server_errors_exit_1_with_the_message(lab: Lab, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**POTENTIAL, "u": -3}))
    assert cli.main(["solve", str(bad), *_remote(lab)]) == 1
    assert "greater than or equal to 0" in capsys.readouterr().err
    assert cli.main(["job", "nope", *_remote(lab)]) == 1
    assert "no job nope" in capsys.readouterr().err


def test_inconsistent_sweep_flags_are_usage_errors(spec_file: Path) -> None:
    for flags in (
        ["--parameter", "u", "--start", "20", "--stop", "40"],  # no --num
        ["--parameter", "u", "--values", "1,2", "--num", "3"],  # both kinds
        ["--parameter", "b", "--values", "0.3", "--parameter", "u"],  # one --values for two parameters
        ["--parameter", "u", "--values", "1,x"],
        [],
    ):
        with pytest.raises(SystemExit) as exc:
            cli.main(["sweep", str(spec_file), *flags, "--url", "http://127.0.0.1:9"])
        assert exc.value.code == 2
    with pytest.raises(SystemExit):
        cli.main(["solve", "/does/not/exist.json"])


def test_sweep_flags_pair_up_per_parameter(spec_file: Path) -> None:
    args = cli.parser().parse_args(["sweep", str(spec_file), "--parameter", "b", "--values", "0.2,0.3",
                                    "--parameter", "u", "--values", "20,30"])
    assert cli.sweep_axes(args, {}) == (["b", "u"], [[0.2, 0.3], [20.0, 30.0]])
    args = cli.parser().parse_args(["sweep", str(spec_file), "--parameter", "u", "--start", "20", "--stop", "40",
                                    "--num", "41"])
    assert cli.sweep_axes(args, {}) == ("u", {"start": 20.0, "stop": 40.0, "num": 41})
    # A boundary job takes ranges: --num may be left out.
    args = cli.parser().parse_args(["sweep", str(spec_file), "--method", "boundary", "--parameter", "b", "--start",
                                    "0.25", "--stop", "0.4", "--parameter", "u", "--start", "10", "--stop", "60"])
    assert cli.sweep_axes(args, {}) == (["b", "u"], [{"start": 0.25, "stop": 0.4, "num": 2},
                                                     {"start": 10.0, "stop": 60.0, "num": 2}])
    # A whole request in the file needs no flags.
    args = cli.parser().parse_args(["sweep", str(spec_file)])
    assert cli.sweep_axes(args, {"parameter": "u", "values": [1, 2]}) == ("u", [1, 2])


def test_serve_and_worker_start_the_real_entry_points(monkeypatch) -> None:
    calls = {}
    import uvicorn

    from service import worker

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.setdefault("serve", (app, kw)))
    monkeypatch.setattr(worker, "main", lambda argv: calls.setdefault("worker", argv) and 0)
    assert cli.main(["serve", "--port", "8123"]) == 0
    app, kw = calls["serve"]
    assert app == "service.app:app" and kw["port"] == 8123
    assert cli.main(["worker", "--url", "redis://x:6379/0", "--burst"]) == 0
    assert calls["worker"] == ["--url", "redis://x:6379/0", "--burst"]


DIGITS = {"theory": "kernel_renormalization", "activation": "erf", "N1": 50, "T": 0.1,
          "data": {"kind": "digits", "classes": [3, 8], "P": 40, "P_test": 10}}


@pytest.mark.redis
@pytest.mark.slow
def test_netcdf_of_a_digits_T_sweep_holds_the_jsons_class_distance(lab: Lab, tmp_path: Path, capsys) -> None:
    spec = tmp_path / "digits.json"
    spec.write_text(json.dumps(DIGITS))
    flags = ["sweep", str(spec), "--parameter", "T", "--values", "0.0001,0.1,1,10", "--no-progress", *_remote(lab)]
    assert cli.main(flags) == 0
    result = json.loads(capsys.readouterr().out)
    out = tmp_path / "digits.nc"
    assert cli.main([*flags, "--format", "netcdf", "-o", str(out)]) == 0
    tree = xr.open_datatree(out, engine="h5netcdf")
    d2 = tree["equilibrium"]["class_distance.D2"]
    np.testing.assert_array_equal(d2.values, [p["observables"]["class_distance"]["D2"] for p in result["points"]])
    np.testing.assert_array_equal(tree["points"]["T"].values, [1e-4, 0.1, 1.0, 10.0])
    assert d2.attrs["symbol"] == "$D^2$" and tree["points"]["T"].attrs["symbol"] == "$T$"
    curve = tree["curves/0"]
    np.testing.assert_array_equal(curve["class_distance.D2"].values,
                                  result["curves"][0]["observables"]["class_distance.D2"])


@pytest.mark.redis
@pytest.mark.slow
def test_netcdf_of_a_solve_a_grid_and_a_boundary_job(lab: Lab, spec_file: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "solve.nc"
    assert cli.main(["solve", str(spec_file), "--format", "netcdf", "-o", str(out), *_remote(lab)]) == 0
    assert cli.main(["solve", str(spec_file), *_remote(lab)]) == 0
    body = json.loads(capsys.readouterr().out)
    solve = xr.open_datatree(out, engine="h5netcdf")
    for b in body["branches"]:
        assert float(solve["free_entropy"].sel(branch=b["name"])) == b["free_entropy"]
    grid = ["sweep", str(spec_file), "--parameter", "b", "--values", "0.28,0.3", "--parameter", "u", "--values",
            "20,30,40", "--method", "grid", "--no-progress", *_remote(lab)]
    assert cli.main([*grid, "--format", "netcdf", "-o", str(tmp_path / "grid.nc")]) == 0
    assert cli.main(grid) == 0
    diagram = json.loads(capsys.readouterr().out)
    tree = xr.open_datatree(tmp_path / "grid.nc", engine="h5netcdf")
    assert tree["points"]["rho_star"].dims == ("b", "u", "branch")
    for p in diagram["points"]:
        b, u = p["parameter"]
        assert float(tree["equilibrium"]["rho_star"].sel(b=b, u=u)) == p["order_parameters"]["rho_star"]
    boundary = ["sweep", str(spec_file), "--method", "boundary", "--parameter", "b", "--start", "0.25", "--stop",
                "0.4", "--parameter", "u", "--start", "10", "--stop", "60", "--no-progress", *_remote(lab)]
    assert cli.main([*boundary, "--format", "netcdf", "-o", str(tmp_path / "lines.nc")]) == 0
    assert cli.main(boundary) == 0
    traced = json.loads(capsys.readouterr().out)
    lines = xr.open_datatree(tmp_path / "lines.nc", engine="h5netcdf")
    for k, line in enumerate(traced["lines"]):
        np.testing.assert_array_equal(lines[f"lines/{k}"]["points"].values, line["points"])


def test_netcdf_needs_an_output_file(spec_file: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["solve", str(spec_file), "--format", "netcdf", "--url", "http://127.0.0.1:9"])
    assert exc.value.code == 2
