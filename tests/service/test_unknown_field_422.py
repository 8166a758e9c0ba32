"""A misspelled field is a 422 that names it, suggests the closest valid name and lists the valid ones."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

HCIZ = {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 1.0, "Delta": 0.1}


def _extra(resp: Any) -> dict[str, Any]:
    assert resp.status_code == 422
    (err,) = [e for e in resp.json()["detail"] if e["type"] == "extra_forbidden"]
    return err


@pytest.mark.parametrize(
    ("route", "body", "unknown", "suggestion", "valid"),
    [
        ("/v1/solve", {"model": {"theory": "rubin_cavity", "mode": "potential", "bb": 0.3}}, "bb", "b", "u"),
        ("/v1/solve", {"model": {**{k: v for k, v in HCIZ.items() if k != "gamma"}, "gama": 0.5}}, "gama", "gamma",
         "Delta"),
        ("/v1/solve", {"model": HCIZ, "solver": {"tol_ab": 1e-9}}, "tol_ab", "tol_abs", "max_iterations"),
        ("/v1/sweeps", {"model": HCIZ, "parameter": "alpha", "values": [1, 2], "methdo": "grid"}, "methdo", "method",
         "values"),
    ],
)
def test_the_422_suggests_and_lists(client: TestClient, route: str, body: dict, unknown: str, suggestion: str,
                                    valid: str) -> None:
    err = _extra(client.post(route, json=body))
    assert err["loc"][-1] == unknown
    assert err["suggestion"] == suggestion
    assert valid in err["valid_fields"] and suggestion in err["valid_fields"]
    assert f"did you mean {suggestion!r}" in err["msg"] and valid in err["msg"]


def test_no_close_name_still_lists_the_fields(client: TestClient) -> None:
    err = _extra(client.post("/v1/solve", json={"model": {**HCIZ, "zzzzzz": 1}}))
    assert err["suggestion"] is None
    assert "did you mean" not in err["msg"] and "alpha" in err["valid_fields"]
    assert len(err["valid_fields"]) <= 60
