"""Hostile and unrepresentable input: always a bounded 422 naming the field, never a 500; and what already held up
(body limit, malformed JSON, non-finite numbers, auth bypasses, grids refused before expansion) stays so.

Regressions: a value nested 500 deep in a failing field, a lone surrogate in a key or string, and a finite_sample
seed between 2^53 and 2^63 − 1 were 500s (RecursionError, UnicodeEncodeError, an RFC 8785 integer-domain error);
a 7 MiB array in a scalar field was echoed back whole in its 422; Hermite coefficients of 1e300 gave a 200 with
status "error" (OverflowError).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel, TypeAdapter

from service.app import create_app
from service.keys import spec_hash
from service.schemas import ModelSpec, _members
from solvers.core.options import SolverOptions
from solvers.theories import registry
from tests.service.conftest import POTENTIAL, settings

KEY = "k-hostile-0123"
H = {"X-API-Key": KEY}
JSON = {"content-type": "application/json", **H}
HCIZ = {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 2.0, "Delta": 0.1}


@pytest.fixture(scope="module")
def c() -> Any:
    with TestClient(create_app(settings(api_keys=(KEY,))), raise_server_exceptions=False) as client:
        yield client


def raw(c: TestClient, text: str | bytes, path: str = "/v1/solve") -> Any:
    return c.post(path, content=text.encode() if isinstance(text, str) else text, headers=JSON)


def locs(r: Any) -> list[list[Any]]:
    return [e["loc"] for e in r.json()["detail"]]


# ---- deeply nested JSON in a failing field, and huge numbers ---------------------------------------
def test_a_deeply_nested_value_in_a_failing_field_is_a_bounded_422(c: TestClient) -> None:
    deep = "[" * 600 + "]" * 600
    r = raw(c, f'{{"model": {json.dumps(POTENTIAL)}, "solver": {deep}}}')
    assert r.status_code == 422, r.text
    assert locs(r) == [["body", "solver"]] and len(r.text) < 2000
    r = raw(c, f'{{"model": {json.dumps({**POTENTIAL, "u": 0})[:-2]} {deep}}}}}')
    assert r.status_code == 422 and any(loc[-1] == "u" for loc in locs(r)) and len(r.text) < 2000


@pytest.mark.parametrize("body", [
    '{"model": {"theory": "rubin_cavity", "mode": "potential", "\\ud800": 1}}',
    '{"model": {"theory": "rubin_cavity", "mode": "potential", "u": "\\ud800"}}',
    '{"model": {"theory": "\\udfff"}}',
    '{"model": {"theory": "rubin_cavity", "mode": "potential"}, "\\ud800\\u0000": 1}',
])
def test_lone_surrogates_in_keys_and_strings_are_a_422(c: TestClient, body: str) -> None:
    r = raw(c, body)
    assert r.status_code == 422, r.text
    r.json()  # the echo is valid JSON and valid UTF-8
    assert r.text.encode("utf-8")


@pytest.mark.parametrize("seed", [2**53, 2**53 + 1, 2**62, 2**63 - 1, 2**64, 10**30])
def test_a_seed_beyond_the_exact_json_range_is_a_422_naming_it(c: TestClient, seed: int) -> None:
    spec = {"theory": "rubin_cavity", "mode": "finite_sample", "P": 50, "D": 10, "P_test": 10, "seed": seed}
    r = c.post("/v1/solve", json={"model": spec}, headers=H)
    assert r.status_code == 422, r.text
    assert locs(r) == [["body", "model", "rubin_cavity:finite_sample", "seed"]]


def _integer_fields(model: type[BaseModel], prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
    """(dotted name, JSON schema) of every integer field, nested data specs included."""
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})
    out = []

    def walk(props: dict[str, Any], path: str) -> None:
        for name, prop in props.items():
            options = [prop, *prop.get("anyOf", []), *prop.get("oneOf", [])]
            for opt in options:
                if "$ref" in opt:
                    walk(defs[opt["$ref"].split("/")[-1]].get("properties", {}), f"{path}{name}.")
                elif opt.get("type") == "integer":
                    out.append((f"{path}{name}", opt))

    walk(schema.get("properties", {}), prefix)
    return out


def test_every_seed_field_of_every_theory_is_bounded_to_exact_integers() -> None:
    seeds = [(cls.__name__, name, s) for t in registry().values() for cls in _members(t.spec_model)
             for name, s in _integer_fields(cls) if name.split(".")[-1] == "seed"]
    assert {(c, n) for c, n, _ in seeds} >= {("FiniteSampleSpec", "seed"),
                                            ("KernelRenormalizationSpec", "data.seed")}
    for cls, name, s in seeds:
        assert s.get("minimum", -1) >= 0 and s.get("maximum", 2**64) <= 2**53 - 1, (cls, name, s)


def test_integers_beyond_the_exact_range_hash_exactly() -> None:
    spec = TypeAdapter(ModelSpec).validate_python(POTENTIAL)
    hashes = {spec_hash(spec, SolverOptions(), extra=v) for v in (2**60, 2**60 + 1, float(2**60), 2**53 + 1)}
    assert len(hashes) == 4


def test_a_7_mib_array_in_a_scalar_field_is_a_short_422(c: TestClient) -> None:
    body = json.dumps({"model": {**POTENTIAL, "u": [1.0] * (7 * 2**20 // 5)}})
    assert len(body) > 7 * 2**20
    r = raw(c, body)
    assert r.status_code == 422
    assert locs(r) == [["body", "model", "rubin_cavity:potential", "u"]]
    assert len(r.content) < 1000  # the offending input is echoed truncated, not 7 MiB back


@pytest.mark.parametrize("hermite", [[0, 1e300, 0, 1], [0, 1, 0, 1e51], [0, 1, 0, -2e50], [1e-200, 1e-200]])
def test_unrepresentable_hermite_coefficients_are_a_422(c: TestClient, hermite: list[float]) -> None:
    r = c.post("/v1/solve", json={"model": {**HCIZ, "activation": {"hermite": hermite}}}, headers=H)
    assert r.status_code == 422, r.text
    mine = [e for e in r.json()["detail"] if e["loc"][-2:] == ["HermiteActivation", "hermite"]]
    assert mine and any(word in mine[0]["msg"] for word in ("exceeds 1e+50", "numerically zero"))


def test_hermite_coefficients_at_the_bound_stay_finite(c: TestClient) -> None:
    r = c.post("/v1/solve", json={"model": {**HCIZ, "activation": {"hermite": [0, 1e50, 0, 1e50]}}}, headers=H)
    assert r.status_code == 200, r.text
    assert "non_finite" not in r.json()


@pytest.mark.parametrize(("patch", "status"), [
    ({"gamma": 1e300}, 422), ({"gamma": 5e-324}, 422), ({"gamma": [0.5, 1e4], "depth": 2}, 422),
    ({"alpha": 5e-324}, 200), ({"alpha": 1e300}, 200), ({"Delta": 1e300}, 200),
])
def test_extreme_hciz_parameters_are_a_422_or_an_answer_never_a_500(c: TestClient, patch: dict, status: int) -> None:
    r = c.post("/v1/solve", json={"model": {**HCIZ, **patch}}, headers=H)
    assert r.status_code == status, r.text


# ---- what held up must stay so ---------------------------------------------------------------------
@pytest.mark.parametrize("body", [
    b"[" * 10_000 + b"]" * 10_000,
    b'{"model": ' + b'{"a": ' * 5000 + b"1" + b"}" * 5000 + b"}",
    b'{"model": {"theory": "rubin_cavity", "mode": "potential", "u": "\xff\xfe"}}',
    b'{"model": {"theory": "rubin_cavity", "mode": "potential", "u": NaN}}',
    b'{"model": {"theory": "rubin_cavity", "mode": "potential", "u": 1e309}}',
    b'{"model": {"theory": "rubin_cavity", "mode": "potential", "\xc3\xa9\x00": 1}}',
    b'{"model": {"theory": "rubin_cavity", "mode": "potential", "u": [1, 2]}}',
    b'{"model": {"theory": "rubin_cavity", "mode": "potential"}, "solver": {"max_iterations": 1000000000000000000000}}',
])
def test_malformed_or_out_of_range_input_is_a_422(c: TestClient, body: bytes) -> None:
    r = raw(c, body)
    assert r.status_code == 422, r.text
    assert len(r.content) < 5000


def test_a_grid_is_refused_before_it_is_expanded(c: TestClient) -> None:
    huge = {"start": 20, "stop": 40, "num": 10**12}
    t0 = time.monotonic()
    r = c.post("/v1/sweeps", json={"model": POTENTIAL, "parameter": ["b", "u"], "values": [huge, huge]}, headers=H)
    assert r.status_code == 422 and "max_sweep_points" in r.text
    # Expanding 10^24 values would never end: a bound far above any machine's refusal time tells them apart.
    assert time.monotonic() - t0 < 10


@pytest.mark.parametrize(("method", "path", "headers"), [
    ("GET", "/v1/theories", {}),
    ("GET", "/v1/theories", {"X-API-Key": ""}),
    ("GET", "/v1/theories", {"X-API-Key": KEY + " "}),
    ("GET", "/v1/theories", {"X-API-Key": KEY.upper()}),
    ("GET", "/v1/theories", {"X-API-Key": KEY[:-1]}),
    ("GET", "/v1/theories", {"Authorization": f"Bearer {KEY}"}),
    ("GET", f"/v1/theories?api_key={KEY}", {}),
    ("GET", "/healthz/../v1/theories", {}),
    ("GET", "/docs/../v1/theories", {}),
    ("GET", "//v1/theories", {}),
    ("POST", "/v1/solve", {"X-API-Key": "é".encode()}),
])
def test_auth_bypasses_are_401(c: TestClient, method: str, path: str, headers: dict) -> None:
    r = c.request(method, path, headers=headers, json={"model": POTENTIAL} if method == "POST" else None)
    assert r.status_code in (401, 404), (path, headers, r.status_code)
    assert r.status_code != 200


def test_no_key_in_the_documentation(c: TestClient) -> None:
    for path in ("/docs", "/openapi.json", "/redoc"):
        r = c.get(path)
        assert r.status_code == 200 and KEY not in r.text
