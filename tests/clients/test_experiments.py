"""Experiments from the client: ``lab.experiment`` blocks with a progress bar in draws, its ArviZ output is made
from the served per-draw series (the same draws the server's figures were computed from), the whole experiment is
one ArviZ DataTree (also as a netCDF file from the CLI), the CLI runs the same request, and
``plot.theory_vs_experiment`` draws the theory's branches as lines and the experiment as points."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr

from clients import Client, UnknownQuantity, experiment_rows, inference_data, plot
from clients.experiments import to_datatree
from service import cli
from tests.clients.conftest import Lab
from tests.clients.csv_lines import data_lines
from tests.experiments import reference_diagnostics as ref

SPEC = {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 1.0, "Delta": 0.1}
SAMPLER = {"method": "mala", "chains": 2, "warmup": 50, "draws": 40, "block_size": 20, "seed": 7}
SIZES = {"d": 6, "n_test": 20}


@pytest.mark.redis
@pytest.mark.slow
def test_experiment_blocks_with_progress_and_gives_inference_data(lab: Lab, tmp_path: Path, capsys) -> None:
    with Client(lab.url, api_key=lab.api_key, timeout=30, poll_interval=0.1) as c:
        result = c.experiment(SPEC, SAMPLER, sizes=SIZES, progress=True, timeout=300)
        idata = result.to_inference_data()  # fetched from the draws endpoint, while the client is open
        tree = result.to_datatree()
        alone = to_datatree(result.data, [result.draws(0)], result.request)
    err = capsys.readouterr().err
    assert "80/80" in err and "draw" in err  # the progress bar counts draws
    assert result["status"] in ("converged", "not_converged") and result["chains"] == 2
    assert idata.posterior["generalization_error"].shape == (2, 40)
    assert idata.posterior["Q_units"].shape == (2, 40, 3)
    # the served draws are the ones behind the server's figures: the definitions give the same R-hat and ESS
    est = result["observables"]["generalization_error"]
    draws = idata.posterior["generalization_error"].values
    assert ref.rhat_rank(draws) == pytest.approx(est["rhat"], rel=1e-10)
    assert ref.ess_bulk(draws) == pytest.approx(est["ess"], rel=1e-10)
    assert float(draws.mean()) == pytest.approx(est["mean"], rel=1e-12)
    # the whole experiment as one tree: draws, the theory on each branch, the spec and sampler options
    np.testing.assert_array_equal(tree.posterior["generalization_error"].values, draws)
    theory = result["theory"]["comparison"]["universal"]["generalization_error"]["theory"]
    assert float(tree["theory"]["generalization_error"].sel(branch="universal")) == pytest.approx(theory, rel=1e-12)
    assert tree["theory"]["generalization_error"].attrs["symbol"] == r"$\varepsilon^*$"
    # labelled from the result alone as well (no served table), units included
    assert alone["summary"]["generalization_error"].attrs["units"] == "1"
    assert alone.posterior["generalization_error"].attrs["symbol"] == r"$\varepsilon^*$"
    assert float(tree["summary"]["generalization_error"].sel(statistic="stderr")) == est["stderr"]
    assert json.loads(tree.attrs["spec"]) == SPEC and json.loads(tree.attrs["sampler_options"]) == SAMPLER
    assert json.loads(tree.attrs["provenance"])["seeds"]["sampler.seed"] == 7

    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps({"model": SPEC, "sizes": SIZES}))
    remote = ["--url", lab.url, "--api-key", lab.api_key, "--no-progress"]
    flags = ["--method", "mala", "--chains", "2", "--warmup", "50", "--draws", "40", "--seed", "7"]
    sampler_file = tmp_path / "sampler.json"
    sampler_file.write_text(json.dumps({"block_size": 20}))
    assert cli.main(["experiment", str(spec_file), *flags, "--sampler", str(sampler_file), *remote]) == 0
    # the same experiment, shared
    assert json.loads(capsys.readouterr().out)["experiment_hash"] == result["experiment_hash"]
    assert cli.main(["experiment", str(spec_file), *flags, "--sampler", str(sampler_file), "--format", "csv",
                     *remote]) == 0
    table = list(csv.DictReader(data_lines(capsys.readouterr().out)))
    row = next(r for r in table if r["observable"] == "generalization_error")
    assert float(row["mean"]) == pytest.approx(est["mean"]) and "z:universal" in row
    # netCDF: the ArviZ tree, read back by xarray alone
    out = tmp_path / "run.nc"
    assert cli.main(["experiment", str(spec_file), *flags, "--sampler", str(sampler_file), "--format", "netcdf",
                     "-o", str(out), *remote]) == 0
    back = xr.open_datatree(out, engine="h5netcdf")
    assert {"posterior", "sample_stats", "theory", "summary"} <= set(back.children)
    np.testing.assert_array_equal(back.posterior["generalization_error"].values, draws)
    np.testing.assert_array_equal(back["sample_stats"]["lp"].values, tree["sample_stats"]["lp"].values)
    assert float(back["theory"]["generalization_error"].sel(branch="universal")) == pytest.approx(theory, rel=1e-12)


@pytest.mark.redis
@pytest.mark.slow
def test_a_learning_curve_is_one_tree_with_the_parameter_as_a_dimension(lab: Lab) -> None:
    with Client(lab.url, api_key=lab.api_key, timeout=30, poll_interval=0.1) as c:
        result = c.experiment(SPEC, {**SAMPLER, "draws": 20}, sizes=SIZES, parameter="alpha", values=[1.0, 2.0],
                              progress=False, timeout=300)
        tree = c.to_xarray(result)
        first = result.to_inference_data(1)
    assert tree.posterior["generalization_error"].dims == ("chain", "draw", "alpha")
    assert list(tree.posterior["alpha"].values) == [1.0, 2.0]
    np.testing.assert_array_equal(tree.posterior["generalization_error"].sel(alpha=2.0).values,
                                  first.posterior["generalization_error"].values)
    for k, point in enumerate(result.points):
        est = point["observables"]["generalization_error"]
        assert float(tree["summary"]["generalization_error"].isel(alpha=k).sel(statistic="mean")) == est["mean"]
        assert str(tree["summary"]["status"].isel(alpha=k).values) == point["status"]


def _curve() -> dict:
    """A learning curve of two points: branch 'universal' at both, 'specialized' at the second only."""
    def point(alpha: float, mean: float, comparison: dict) -> dict:
        return {"parameter": alpha, "status": "converged", "converged": True,
                "observables": {"generalization_error": {"mean": mean, "stderr": 0.01, "ess": 500, "ess_tail": 400,
                                                         "rhat": 1.0}},
                "theory": {"comparison": comparison}}

    def row(theory: float, mean: float) -> dict:
        return {"generalization_error": {"theory": theory, "experiment": mean, "stderr": 0.01,
                                         "z": (mean - theory) / 0.01}}

    return {"kind": "learning_curve", "parameter": "alpha", "values": [1.0, 4.0], "points": [
        point(1.0, 0.21, {"universal": row(0.2, 0.21)}),
        point(4.0, 0.05, {"universal": row(0.2, 0.05), "specialized": row(0.04, 0.05)}),
    ]}


def test_theory_vs_experiment_draws_branches_as_lines_and_the_experiment_as_points() -> None:
    ax = plot.theory_vs_experiment({"prior": _curve(), "teacher": _curve()}, "generalization_error")
    lines = {ln.get_label(): ln for ln in ax.get_lines() if ln.get_label().startswith("theory")}
    assert set(lines) == {"theory: universal", "theory: specialized"}
    np.testing.assert_allclose(np.asarray(lines["theory: universal"].get_ydata(), dtype=float), [0.2, 0.2])
    np.testing.assert_allclose(np.asarray(lines["theory: specialized"].get_xdata(), dtype=float), [4.0])
    bars = [c for c in ax.containers if c.get_label().startswith(("prior", "teacher"))]
    assert len(bars) == 2
    np.testing.assert_allclose(np.asarray(bars[0].lines[0].get_ydata(), dtype=float), [0.21, 0.05])
    assert ax.get_xlabel() == "alpha"
    plt.close(ax.figure)
    rows = experiment_rows(_curve())
    assert [r["parameter"] for r in rows] == [1.0, 4.0] and "z:specialized" in rows[1]
    with pytest.raises(ValueError, match="no parameter value"):
        plot.theory_vs_experiment({**_curve()["points"][0], "parameter": None, "kind": "experiment"})
    with pytest.raises(UnknownQuantity, match="available: generalization_error"):
        plot.theory_vs_experiment(_curve(), "generalisation_error")


def test_inference_data_from_a_served_series() -> None:
    series = {"point": 0, "parameter": None, "chains": 2, "draws": 6, "thin": 2, "draw": [0, 2, 4],
              "components": {"x": [], "v": [2]},
              "posterior": {"x": [[1.0, 2.0, None], [0.5, 0.25, 0.0]], "v": [[[1, 2]] * 3, [[3, 4]] * 3]},
              "sample_stats": {"lp": [[0.0] * 3] * 2, "diverging": [[False] * 3] * 2, "n_steps": [[1] * 3] * 2,
                               "nonfinite": [[0] * 3] * 2, "acceptance_rate": [[0.5] * 3] * 2}}
    idata = inference_data(series)
    assert isinstance(idata, xr.DataTree) and set(idata.children) == {"posterior", "sample_stats"}
    assert idata.posterior["x"].shape == (2, 3) and np.isnan(idata.posterior["x"].values[0, 2])
    assert list(idata.posterior["draw"].values) == [0, 2, 4] and idata.posterior["v"].shape == (2, 3, 2)
    assert idata.sample_stats["diverging"].dtype == bool and idata.attrs["thin"] == 2
