"""Every field a theory says can be swept is accepted by POST /v1/sweeps for every example spec, derived ones
(rubin_cavity's u, which sets T) included, and a value outside a derived parameter's range is a 422 naming it."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from solvers.theories import registry

CASES: list[tuple[str, dict[str, Any], str]] = []
for _name, _theory in registry().items():
    for _ex in _theory.examples:
        _spec = TypeAdapter(_theory.spec_model).validate_python(dict(_ex.spec))
        for _field in _theory.sweepable_for(_spec):
            CASES.append((_name, dict(_ex.spec), _field))


@pytest.mark.parametrize(("name", "spec", "field"), CASES, ids=[f"{n}-{s.get('mode', '')}-{f}" for n, s, f in CASES])
def test_every_sweepable_field_is_accepted(client: TestClient, name: str, spec: dict[str, Any], field: str) -> None:
    theory = registry()[name]
    at = theory.control_value(TypeAdapter(theory.spec_model).validate_python(spec), field)
    values = [at, at * 1.01] if at else [0.0, 0.01]
    r = client.post("/v1/sweeps", json={"model": spec, "parameter": field, "values": values, "method": "grid"})
    assert r.status_code in (202, 422), r.text
    if r.status_code == 422:  # only a value the field refuses, named by its index
        assert r.json()["detail"][0]["loc"][:2] == ["body", "values"], r.text
    else:
        client.delete(r.json()["status_url"])


def test_a_derived_parameter_out_of_range_is_a_422(client: TestClient) -> None:
    r = client.post("/v1/sweeps", json={"model": {"theory": "rubin_cavity", "mode": "self_consistent"},
                                        "parameter": "u", "values": [30.0, -1.0]})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "values", 1]
