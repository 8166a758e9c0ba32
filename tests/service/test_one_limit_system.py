"""One limit system: sizes are declared by each theory and checked against the instance's settings only.

Regression: specs used to hard-code caps in their validators, so raising ``SADDLELAB_LIMIT_KERNEL_P``
or ``SADDLELAB_LIMIT_FINITE_SAMPLE_P`` still gave "P = 6000 exceeds the maximum 5000".
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from service.app import create_app
from service.limits import check_sizes
from service.schemas import ModelSpec
from service.settings import Settings
from solvers.theories import get
from tests.service.conftest import settings

SPEC = TypeAdapter(ModelSpec)
KERNEL_6000 = {"theory": "kernel_renormalization", "activation": "erf", "N1": 100, "T": 0.1,
               "data": {"kind": "teacher", "P": 6000, "P_test": 10, "N0": 10, "seed": 0}}
FINITE_SAMPLE_6000 = {"theory": "rubin_cavity", "mode": "finite_sample", "P": 6000, "D": 20, "N": 50, "T": 1.0}


@pytest.mark.parametrize(("spec", "limit", "loc"), [
    (KERNEL_6000, "kernel_p", ["model", "data", "teacher", "P"]),
    (FINITE_SAMPLE_6000, "finite_sample_p", ["model", "P"]),
])
def test_a_limit_raised_above_the_default_admits_specs_between_the_two(
    monkeypatch: pytest.MonkeyPatch, spec: dict, limit: str, loc: list[str]
) -> None:
    model = SPEC.validate_python(spec)  # the spec itself validates physics only: no size cap in it
    theory = get(model.theory)
    assert theory.size_limits[limit] == 5000
    with pytest.raises(Exception) as refused:
        check_sizes(model, Settings(redis_url=None))
    assert refused.value.errors()[0]["loc"] == ["body", *loc]  # type: ignore[attr-defined]
    assert f"{limit}=5000" in refused.value.errors()[0]["msg"]  # type: ignore[attr-defined]
    monkeypatch.setenv(f"SADDLELAB_LIMIT_{limit.upper()}", "8000")
    check_sizes(model, Settings(redis_url=None))  # admitted by the raised limit, from the environment


def test_a_raised_limit_solves_a_spec_above_the_default_cap() -> None:
    """hciz_mlp's default depth limit is 12; an instance that raises it to 14 solves depth 13."""
    spec = {"theory": "hciz_mlp", "activation": "he3", "gamma": 0.5, "alpha": 2.0, "Delta": 0.1, "depth": 13}
    assert get("hciz_mlp").size_limits["hciz_depth"] == 12
    with TestClient(create_app(settings())) as c:
        r = c.post("/v1/solve", json={"model": spec})
        assert r.status_code == 422 and "hciz_depth=12" in r.text
    with TestClient(create_app(settings(limits={"hciz_depth": 14.0}))) as c:
        r = c.post("/v1/solve", json={"model": spec})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["converged"] and len(body["order_parameters"]["Q"]) == 13
