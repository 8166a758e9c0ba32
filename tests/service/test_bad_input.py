"""Bad input is a 422 that names the field; nothing produces a 500."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.service.conftest import POTENTIAL


def _locs(resp) -> list[str]:
    return [".".join(str(p) for p in e["loc"]) for e in resp.json()["detail"]]


def test_malformed_json(client: TestClient) -> None:
    r = client.post("/v1/solve", content=b'{"model": {"theory": ', headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["detail"][0]["type"] == "json_invalid"


def test_unknown_theory(client: TestClient) -> None:
    r = client.post("/v1/solve", json={"model": {"theory": "no_such_theory"}})
    assert r.status_code == 422
    assert any("model" in loc for loc in _locs(r))
    assert "theory" in r.text


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"sigma_w2": -1.0}, "sigma_w2"),
        ({"sigma_w2": 0.0}, "sigma_w2"),
        ({"u": "lots"}, "u"),
        ({"sigmaw2": 0.5}, "sigmaw2"),  # misspelled field
        ({"D": 0}, "D"),
        ({"mode": "potentials"}, "mode"),
    ],
)
def test_field_errors_name_the_field(client: TestClient, patch: dict, field: str) -> None:
    r = client.post("/v1/solve", json={"model": {**POTENTIAL, **patch}})
    assert r.status_code == 422, r.text
    assert any(loc.endswith(field) or f".{field}" in loc or field in loc for loc in _locs(r)), _locs(r)


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_refused(client: TestClient, bad: str) -> None:
    body = f'{{"model": {{"theory": "rubin_cavity", "mode": "potential", "b": 0.3, "c": -0.3, "u": {bad}}}}}'
    r = client.post("/v1/solve", content=body.encode(), headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert any(loc.endswith("u") for loc in _locs(r))


def test_unknown_solver_option_and_bad_range(client: TestClient) -> None:
    r = client.post("/v1/solve", json={"model": POTENTIAL, "solver": {"mixng": 0.5}})
    assert r.status_code == 422 and any("mixng" in loc for loc in _locs(r))
    r = client.post("/v1/solve", json={"model": POTENTIAL, "solver": {"mixing": 1.5}})
    assert r.status_code == 422 and any("mixing" in loc for loc in _locs(r))


def test_unknown_top_level_field(client: TestClient) -> None:
    r = client.post("/v1/solve", json={"model": POTENTIAL, "extra": 1})
    assert r.status_code == 422 and any("extra" in loc for loc in _locs(r))


def test_sweep_of_an_unknown_parameter_names_it(client: TestClient) -> None:
    r = client.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": "nope", "values": [1, 2]})
    assert r.status_code == 422 and any(loc.endswith("parameter") for loc in _locs(r))


def test_sweep_value_out_of_range_names_the_value(client: TestClient) -> None:
    r = client.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": "sigma_w2", "values": [0.5, -1.0]})
    assert r.status_code == 422, r.text
    assert any(loc.startswith("body.values.1") for loc in _locs(r)), _locs(r)


def test_wrong_method_and_oversized_sweep(client: TestClient) -> None:
    r = client.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": "u", "values": [1], "method": "magic"})
    assert r.status_code == 422 and any("method" in loc for loc in _locs(r))
    r = client.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": "u",
                                        "values": {"start": 1, "stop": 2, "num": 10**6}})
    assert r.status_code == 422 and "max_sweep_points" in r.text


def test_unknown_job_is_404_not_500(client: TestClient) -> None:
    assert client.get("/v1/jobs/doesnotexist").status_code == 404
    assert client.delete("/v1/jobs/doesnotexist").status_code == 404
