"""Inputs that forgive: a misspelt choice gets "did you mean", as a misspelt field name does, in one error at the
field (not one per member of the field's union); a missing object names what it needs, so that one 422 lists
every field still to give."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from tests.service.conftest import settings

HCIZ = {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 1.0, "Delta": 0.1}


@pytest.fixture(scope="module")
def client() -> TestClient:
    with TestClient(create_app(settings())) as c:
        yield c


def _errors(client: TestClient, model: dict[str, Any]) -> list[dict[str, Any]]:
    r = client.post("/v1/solve", json={"model": model})
    assert r.status_code == 422, r.text
    return r.json()["detail"]


@pytest.mark.parametrize("model, field, given, meant", [
    ({**HCIZ, "activation": "tahn"}, "activation", "tahn", "tanh"),  # a union of a literal, two models and a list
    ({**HCIZ, "activation": "TANH"}, "activation", "TANH", "tanh"),
    ({"theory": "rubin_cavity", "mode": "self_consistent", "scaling": "standrd"}, "scaling", "standrd", "standard"),
    ({"theory": "matrix_denoising", "gamma": 0.5, "snr": 1.0, "readout": "rademacer"}, "readout", "rademacer",
     "rademacher"),
])
def test_a_misspelt_choice_gets_did_you_mean(client: TestClient, model: dict, field: str, given: str,
                                             meant: str) -> None:
    [error] = _errors(client, model)
    assert error["loc"][-1] == field
    assert error["suggestion"] == meant and f"did you mean {meant!r}" in error["msg"] and repr(given) in error["msg"]


def test_a_choice_far_from_every_value_keeps_pydantics_errors(client: TestClient) -> None:
    errors = _errors(client, {**HCIZ, "activation": "xyzzy"})
    assert len(errors) > 1 and not any("suggestion" in e for e in errors)


def test_every_missing_field_of_kernel_renormalization_in_one_422(client: TestClient) -> None:
    errors = _errors(client, {"theory": "kernel_renormalization", "activation": "erf", "T": 0.1})
    by_field = {e["loc"][-1]: e["msg"] for e in errors}
    assert set(by_field) == {"N1", "data"}
    assert "kind 'digits' with classes, P" in by_field["data"] and "kind 'teacher' with P, N0" in by_field["data"]
    # and once the kind is chosen, every field of that kind at once
    errors = _errors(client, {"theory": "kernel_renormalization", "activation": "erf", "T": 0.1,
                              "data": {"kind": "digits"}})
    assert {tuple(e["loc"][-2:]) for e in errors} == {("kernel_renormalization", "N1"), ("digits", "classes"),
                                                      ("digits", "P")}
