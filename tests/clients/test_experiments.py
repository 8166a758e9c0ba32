"""Experiments from the client: ``lab.experiment`` blocks with a progress bar in draws, its ArviZ output is made
from the served per-draw series (the same draws the server's figures were computed from), the CLI runs the same
request, and ``plot.theory_vs_experiment`` draws the theory's branches as lines and the experiment as points."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pytest

from clients import Client, experiment_rows, inference_data, plot
from service import cli
from tests.clients.conftest import Lab

SPEC = {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 1.0, "Delta": 0.1}
SAMPLER = {"method": "mala", "chains": 2, "warmup": 50, "draws": 40, "block_size": 20, "seed": 7}
SIZES = {"d": 6, "n_test": 20}


@pytest.mark.redis
@pytest.mark.slow
def test_experiment_blocks_with_progress_and_gives_inference_data(lab: Lab, tmp_path: Path, capsys) -> None:
    with Client(lab.url, api_key=lab.api_key, timeout=30, poll_interval=0.1) as c:
        result = c.experiment(SPEC, SAMPLER, sizes=SIZES, progress=True, timeout=300)
        idata = result.to_inference_data()  # fetched from the draws endpoint, while the client is open
    err = capsys.readouterr().err
    assert "80/80" in err and "draw" in err  # the progress bar counts draws
    assert result["status"] in ("converged", "not_converged") and result["chains"] == 2
    assert idata.posterior["generalization_error"].shape == (2, 40)
    assert idata.posterior["Q_units"].shape == (2, 40, 3)
    # the served draws are the ones behind the server's figures: ArviZ on them gives the same R-hat and ESS
    est = result["observables"]["generalization_error"]
    assert float(az.rhat(idata, var_names=["generalization_error"], method="rank")["generalization_error"]) == (
        pytest.approx(est["rhat"], rel=1e-12))
    assert float(az.ess(idata, var_names=["generalization_error"], method="bulk")["generalization_error"]) == (
        pytest.approx(est["ess"], rel=1e-12))
    assert float(idata.posterior["generalization_error"].mean()) == pytest.approx(est["mean"], rel=1e-12)

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
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    row = next(r for r in table if r["observable"] == "generalization_error")
    assert float(row["mean"]) == pytest.approx(est["mean"]) and "z:universal" in row


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


def test_inference_data_from_a_served_series() -> None:
    series = {"point": 0, "parameter": None, "chains": 2, "draws": 6, "thin": 2, "draw": [0, 2, 4],
              "components": {"x": [], "v": [2]},
              "posterior": {"x": [[1.0, 2.0, None], [0.5, 0.25, 0.0]], "v": [[[1, 2]] * 3, [[3, 4]] * 3]},
              "sample_stats": {"lp": [[0.0] * 3] * 2, "diverging": [[False] * 3] * 2, "n_steps": [[1] * 3] * 2,
                               "nonfinite": [[0] * 3] * 2, "acceptance_rate": [[0.5] * 3] * 2}}
    idata = inference_data(series)
    assert idata.posterior["x"].shape == (2, 3) and np.isnan(idata.posterior["x"].values[0, 2])
    assert list(idata.posterior["draw"].values) == [0, 2, 4] and idata.posterior["v"].shape == (2, 3, 2)
    assert idata.sample_stats["diverging"].dtype == bool and idata.attrs["thin"] == 2
