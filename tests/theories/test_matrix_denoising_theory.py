"""The matrix_denoising theory through the engine and the HTTP contract: result shape, sweeps, bad input."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from solvers.core.options import SolverOptions
from solvers.theories import get
from solvers.theories.matrix_denoising.point import mmse_point
from solvers.theories.matrix_denoising.spec import MatrixDenoisingSpec
from solvers.theories.matrix_denoising.values import direct_values
from tests.payloads import solve_json, sweep_json

BASE = {"theory": "matrix_denoising", "gamma": 0.5, "readout": "ones", "snr": 2.0}


def test_registered_with_described_fields() -> None:
    th = get("matrix_denoising")
    assert th.spec_model is MatrixDenoisingSpec
    assert set(th.sweepable) == {"snr", "gamma"}
    schema = MatrixDenoisingSpec.model_json_schema()
    assert all(prop.get("description") for prop in schema["properties"].values())


def test_solve_has_the_common_shape_and_direct_values() -> None:
    th = get("matrix_denoising")
    res = solve_json(th, MatrixDenoisingSpec(**BASE), SolverOptions())
    json.dumps(res, allow_nan=False)
    assert res["converged"] and res["equilibrium"] == "bayes_optimal"
    assert len(res["branches"]) == 1 and res["branches"][0]["stable"]
    obs = res["observables"]
    direct = mmse_point(0.5, "ones", 2.0).mmse
    assert obs["mmse"] == pytest.approx(direct, abs=1e-6)
    assert obs["overlap"] == pytest.approx(1 - direct, abs=1e-6)
    assert res["order_parameters"]["overlap"] == pytest.approx(obs["overlap"], abs=1e-10)
    # ι = (λ − M)/4 and the direct Gauss–Legendre integral of mmse agree.
    assert obs["iota"] == pytest.approx((2.0 - obs["overlap_integral"]) / 4, abs=1e-12)
    assert obs["iota"] == pytest.approx(direct_values(0.5, "ones", 2.0).iota, abs=1e-6)


def test_snr_zero_is_the_pure_noise_point() -> None:
    res = solve_json(get("matrix_denoising"), MatrixDenoisingSpec(**{**BASE, "snr": 0.0}), SolverOptions())
    assert res["observables"] == {"mmse": 1.0, "overlap": 0.0, "iota": 0.0, "overlap_integral": 0.0}


def test_sweeps_over_snr_and_gamma() -> None:
    th = get("matrix_denoising")
    spec = MatrixDenoisingSpec(**BASE)
    snr = sweep_json(th, spec, "snr", [0.5, 1.0, 4.0], "grid", SolverOptions())
    overlaps = [p["observables"]["overlap"] for p in snr["points"]]
    assert overlaps == sorted(overlaps) and all(p["converged"] for p in snr["points"])
    assert snr["transitions"] == []
    gam = sweep_json(th, spec, "gamma", [0.5, 1.7], "grid", SolverOptions())
    for p, g in zip(gam["points"], [0.5, 1.7], strict=True):
        assert p["observables"]["mmse"] == pytest.approx(mmse_point(g, "ones", 2.0).mmse, abs=1e-6)


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"gamma": 0.0}, "gamma"),
        ({"gamma": -1.0}, "gamma"),
        ({"snr": -0.5}, "snr"),
        ({"readout": "binary"}, "readout"),
        ({"snr": float("nan")}, "snr"),
        ({"lambda": 1.0}, "lambda"),
        ({"snr": False}, "snr"),
        ({"gamma": "0.5"}, "gamma"),
        ({"gamma": 5e-4}, "gamma"),
    ],
)
def test_bad_specs_name_the_field(patch: dict, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        MatrixDenoisingSpec(**{**BASE, **patch})
    assert any(field in map(str, e["loc"]) for e in err.value.errors())


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    from service.app import create_app
    from service.settings import Settings

    with TestClient(create_app(Settings(redis_url=None, api_keys=(), rate_limit_per_minute=0))) as c:
        yield c


@pytest.mark.parametrize(
    ("patch", "field"),
    [({"gamma": 0}, "gamma"), ({"gamma": -2}, "gamma"), ({"snr": -1}, "snr"), ({"readout": "gauss"}, "readout")],
)
def test_http_bad_input_is_422_naming_the_field(client: TestClient, patch: dict, field: str) -> None:
    r = client.post("/v1/solve", json={"model": {**BASE, **patch}})
    assert r.status_code == 422
    locs = [".".join(map(str, e["loc"])) for e in r.json()["detail"]]
    assert any(loc.endswith(field) for loc in locs), locs


def test_http_solve(client: TestClient) -> None:
    r = client.post("/v1/solve", json={"model": BASE})
    assert r.status_code == 200
    body = r.json()
    assert body["converged"]
    assert body["observables"]["mmse"] == pytest.approx(mmse_point(0.5, "ones", 2.0).mmse, abs=1e-6)
