"""Bad ``hciz_mlp`` input is a 422 that names the offending field (through the HTTP API and the spec model)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from service.app import create_app
from service.settings import Settings
from solvers.theories import get

BASE: dict[str, Any] = {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 1.0, "Delta": 0.1}
TANH_NO_LINEAR = {"name": "tanh2", "remove_linear": True, "unit_variance": True}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(Settings(redis_url=None, api_keys=(), rate_limit_per_minute=0))) as c:
        yield c


def _locs(resp) -> list[str]:
    return [".".join(str(p) for p in e["loc"]) for e in resp.json()["detail"]]


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"gamma": 0.0}, "gamma"),
        ({"gamma": -0.5}, "gamma"),
        ({"gamma": 1001.0}, "gamma"),  # beyond the denoising tables: a 422, never a 500
        ({"gamma": 1e-4}, "gamma"),
        ({"gamma": [0.5, -1.0], "depth": 2, "activation": TANH_NO_LINEAR}, "gamma"),
        ({"gamma": [0.5, 1.0, 2.0], "depth": 2, "activation": TANH_NO_LINEAR}, "gamma"),
        ({"gamma": []}, "gamma"),
        # two hidden layers: each four_point readout class is a (γ2/2)d-row product channel, beyond its tables
        ({"gamma": [0.5, 1.5e-3], "depth": 2, "activation": {"name": "tanh2", "unit_variance": True},
          "readout": "four_point"}, "gamma"),
        ({"alpha": -0.1}, "alpha"),
        ({"Delta": -1e-3}, "Delta"),
        ({"activation": "softplus"}, "activation"),
        ({"activation": {"name": "swish"}}, "activation"),
        ({"activation": {"hermite": []}}, "activation"),
        ({"activation": {"hermite": [0.0, 0.0]}}, "activation"),
        ({"readout": "bernoulli"}, "readout"),
        ({"weight_prior": "uniform"}, "weight_prior"),
        ({"depth": 0}, "depth"),
        ({"depth": 2}, "activation"),  # tanh has μ1 ≠ 0: the reduced deep model does not apply
        ({"Delta": None}, "Delta"),
        ({"gama": 0.5}, "gama"),
    ],
)
def test_bad_fields_are_named(client: TestClient, patch: dict, field: str) -> None:
    r = client.post("/v1/solve", json={"model": {**BASE, **patch}})
    assert r.status_code == 422, r.text
    assert any(field in loc for loc in _locs(r)), _locs(r)


@pytest.mark.parametrize("bad", ["NaN", "Infinity"])
def test_non_finite_hermite_coefficients(client: TestClient, bad: str) -> None:
    body = (
        '{"model": {"theory": "hciz_mlp", "activation": {"hermite": [0.0, 1.0, ' + bad + ']}, '
        '"gamma": 0.5, "alpha": 1.0, "Delta": 0.1}}'
    )
    r = client.post("/v1/solve", content=body.encode(), headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert any("activation" in loc for loc in _locs(r)), _locs(r)


def test_valid_specs_and_messages() -> None:
    model = get("hciz_mlp").spec_model
    s = model.model_validate({**BASE, "gamma": [0.5, 1.0], "depth": 2, "activation": TANH_NO_LINEAR})
    assert s.gammas == [0.5, 1.0]
    assert model.model_validate({**BASE, "depth": 3, "activation": TANH_NO_LINEAR}).gammas == [0.5] * 3
    with pytest.raises(ValidationError, match="μ1"):
        model.model_validate({**BASE, "depth": 2})
    # every field documents itself (the JSON schema is what the service publishes)
    schema = model.model_json_schema()
    for name, prop in schema["properties"].items():
        assert prop.get("description"), name


def test_gamma_is_sweepable_only_when_scalar() -> None:
    theory = get("hciz_mlp")
    model = theory.spec_model
    assert "gamma" in theory.sweepable_for(model.model_validate(BASE))
    deep = model.model_validate({**BASE, "gamma": [0.5, 1.0], "depth": 2, "activation": TANH_NO_LINEAR})
    assert "gamma" not in theory.sweepable_for(deep)


def test_sizes_above_the_default_limits_validate_and_are_declared() -> None:
    """Depth and Hermite length are the instance's to limit (declared by the theory), not the spec's."""
    theory = get("hciz_mlp")
    model = theory.spec_model
    deep = model.model_validate({**BASE, "depth": 13, "activation": TANH_NO_LINEAR})
    assert theory.sizes(deep)["hciz_depth"] == (("depth",), 13.0)
    assert theory.size_limits["hciz_depth"] == 12
    long = model.model_validate({**BASE, "activation": {"hermite": [0.0, 1.0] + [0.1] * 39}})
    assert theory.sizes(long)["hciz_hermite_terms"] == (("activation", "hermite"), 41.0)
    assert theory.size_limits["hciz_hermite_terms"] == 40


def test_a_hermite_list_needs_factorials_that_are_doubles() -> None:
    model = get("hciz_mlp").spec_model
    longest = [0.0, 1.0] + [0.0] * 168 + [1.0]  # 171 entries: 170! ≈ 7.3e306 is a double
    assert len(model.model_validate({**BASE, "activation": {"hermite": longest}}).activation.hermite) == 171
    with pytest.raises(ValidationError, match="l!"):
        model.model_validate({**BASE, "activation": {"hermite": [*longest, 0.0]}})  # 171! overflows
