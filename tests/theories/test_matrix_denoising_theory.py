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
    assert set(th.sweepable) == {"snr", "gamma", "eta"}
    assert set(th.sweepable_for(MatrixDenoisingSpec(**BASE))) == {"snr", "gamma"}
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


RECT = {"theory": "matrix_denoising", "shape": "rectangular", "gamma": 0.5, "eta": 2.0, "snr": 1.5}


def test_rectangular_shape_solves_and_sweeps() -> None:
    """The rectangular mode reports the table's values (checked against direct quadrature) and sweeps η
    by direct quadrature; 2ι' = mmse holds between neighbouring points of an snr sweep."""
    from solvers.theories.matrix_denoising.rectangular_point import rectangular_mmse_point

    th = get("matrix_denoising")
    spec = MatrixDenoisingSpec(**RECT)
    assert set(th.sweepable_for(spec)) == {"snr", "gamma", "eta"}
    res = solve_json(th, spec, SolverOptions())
    json.dumps(res, allow_nan=False)
    assert res["converged"] and res["equilibrium"] == "bayes_optimal"
    direct = rectangular_mmse_point(0.5, 2.0, 1.5).mmse
    assert res["observables"]["mmse"] == pytest.approx(direct, abs=3e-7)
    eta = sweep_json(th, spec, "eta", [0.5, 1.0], "grid", SolverOptions())
    for p, e in zip(eta["points"], [0.5, 1.0], strict=True):
        # direct quadrature, or the table where an earlier solve has built it (accurate to 3e-7)
        assert p["observables"]["mmse"] == pytest.approx(rectangular_mmse_point(0.5, e, 1.5).mmse, abs=3e-7)
    snr = sweep_json(th, spec, "snr", [1.5, 1.5001], "grid", SolverOptions())
    i0, i1 = (p["observables"]["iota"] for p in snr["points"])
    assert 2 * (i1 - i0) / 1e-4 == pytest.approx(res["observables"]["mmse"], rel=1e-4)


def test_symmetric_default_is_unchanged_by_the_new_fields() -> None:
    spec = MatrixDenoisingSpec(**BASE)
    assert spec.shape == "symmetric" and spec.eta is None


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"eta": None}, "eta"),
        ({"eta": 0.0}, "eta"),
        ({"eta": 5e3}, "eta"),
        ({"readout": "rademacher"}, "readout"),
        ({"shape": "triangular"}, "shape"),
    ],
)
def test_bad_rectangular_specs_name_the_field(patch: dict, field: str) -> None:
    with pytest.raises(ValidationError) as err:
        MatrixDenoisingSpec(**{**RECT, **patch})
    assert any(field in map(str, e["loc"]) for e in err.value.errors())


def test_eta_is_refused_for_the_symmetric_shape() -> None:
    with pytest.raises(ValidationError) as err:
        MatrixDenoisingSpec(**{**BASE, "eta": 1.0})
    assert any("eta" in map(str, e["loc"]) for e in err.value.errors())
