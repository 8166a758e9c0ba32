"""POST /v1/solve with a search method: hciz_mlp's three branches at α = 4, Δ = 0.1 (tanh, γ = ½) from the
uninformative start alone, with and without deflation; the search and every branch's origin in the response.

The reference set is the theory's own root scan of the same spec (all three branches, from the default search),
which is independent of deflation: deflation must find the same three solutions, not just three solutions.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from service.schemas import ModelSpec
from solvers.theories import registry

HCIZ: dict[str, Any] = {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 4.0, "Delta": 0.1}
BRANCHES = {"universal", "weakly_specialized_unstable", "specialized"}


def solve(client: TestClient, search: dict[str, Any] | None) -> dict[str, Any]:
    r = client.post("/v1/solve", json={"model": HCIZ, **({"solver": {"search": search}} if search else {})})
    assert r.status_code == 200, r.text
    return r.json()


def test_deflation_finds_the_branches_the_uninformative_start_misses(client: TestClient) -> None:
    reference = solve(client, None)
    assert {b["name"] for b in reference["branches"]} == BRANCHES
    assert reference["search"]["method"] == "starts-only" and reference["search"]["root_scan"] is True

    alone = solve(client, {"starts": ["uninformative"]})
    assert [b["name"] for b in alone["branches"]] == ["universal"]
    assert alone["search"]["method"] == "starts-only" and alone["search"]["starts"] == ["uninformative"]
    assert alone["branches"][0]["origin"] == {"method": "start", "start": "uninformative"}

    deflated = solve(client, {"method": "deflation", "starts": ["uninformative"], "budget": 6})
    by_name = {b["name"]: b for b in deflated["branches"]}
    assert set(by_name) == BRANCHES
    assert by_name["universal"]["origin"] == {"method": "start", "start": "uninformative"}
    for name in ("weakly_specialized_unstable", "specialized"):
        assert by_name[name]["origin"] == {"method": "deflation", "start": None}
        assert by_name[name]["stable"] is (name == "specialized")
        ref = next(b for b in reference["branches"] if b["name"] == name)
        for key in ("Q", "R2"):
            assert by_name[name]["order_parameters"][key] == pytest.approx(ref["order_parameters"][key], abs=1e-8)
    s = deflated["search"]
    assert s["method"] == "deflated" and s["budget"] == 6 and s["found"] == 2
    assert s["stopped"] == "budget" and s["fruitless"] >= 6 and s["deflated_solves"] == s["found"] + s["fruitless"]
    assert deflated["equilibrium"] == reference["equilibrium"]
    assert deflated["spec_hash"] != alone["spec_hash"] != reference["spec_hash"]


@pytest.mark.parametrize(
    ("search", "loc"),
    [({"method": "everything"}, ["body", "solver", "search", "method"]),
     ({"budget": -1}, ["body", "solver", "search", "budget"]),
     ({"starts": "uninformative"}, ["body", "solver", "search", "starts"])],
)
def test_a_bad_search_is_a_422_naming_the_field(client: TestClient, search: dict[str, Any], loc: list[str]) -> None:
    r = client.post("/v1/solve", json={"model": HCIZ, "solver": {"search": search}})
    assert r.status_code == 422
    assert any(d["loc"][: len(loc)] == loc for d in r.json()["detail"]), r.text


@pytest.mark.parametrize("route", ["/v1/solve", "/v1/sweeps"])
def test_an_unknown_start_is_a_422_listing_the_theorys_starts(client: TestClient, route: str) -> None:
    body: dict[str, Any] = {"model": HCIZ, "solver": {"search": {"starts": ["uninformative", "elsewhere"]}}}
    if route == "/v1/sweeps":
        body |= {"parameter": "alpha", "values": [3.0, 4.0]}
    r = client.post(route, json=body)
    assert r.status_code == 422, r.text
    err = r.json()["detail"][0]
    assert err["loc"] == ["body", "solver", "search", "starts", 1]
    assert "'elsewhere'" in err["msg"]
    for name in ("uninformative", "informative", "product_overlap", "first_layer", "first_layer_product"):
        assert name in err["msg"]


@pytest.mark.parametrize("name", sorted(registry()))
def test_every_start_of_every_example_is_a_declared_start_name(name: str) -> None:
    """The names a 422 lists are the names the theories' problems give their starts (each example's spec, at its
    own parameter value), so no valid request is refused."""
    theory = registry()[name]
    for example in theory.examples:
        spec = TypeAdapter(ModelSpec).validate_python(dict(example.spec))
        names = theory.problem(spec).starts(theory.control_value(spec, None))
        assert names and set(names) <= set(theory.start_names_for(spec)), (name, dict(example.spec), list(names))
