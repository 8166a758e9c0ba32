"""Each theory's quantity table against what the theory actually reports.

Every example of every theory is solved; every dotted name its branches and its solve report (the client's
flattening, ``clients.names``) must be declared in the table, in the right group, and every declared order
parameter or observable must appear in some example's result: a table cannot drift from the code. Every symbol must
be valid mathtext, every declared spec field a field of the spec (every sweepable field declared), and the served
schemas (``GET /v1/theories`` and /openapi.json) carry the symbols.
"""

from __future__ import annotations

from collections import defaultdict
from functools import cache

import pytest
from fastapi.testclient import TestClient
from matplotlib.mathtext import MathTextParser
from pydantic import TypeAdapter

from clients.names import GROUPS, flatten
from service.app import create_app
from service.serialize import solution_json
from service.settings import Settings
from solvers.core.options import SolverOptions
from solvers.theories import registry
from solvers.theories.quantities import ROLES, QuantityTable

THEORIES = sorted(registry())


@cache
def reported(name: str) -> dict[str, dict[str, object]]:
    """group -> dotted name -> a value, over every branch and the solve of every example of the theory."""
    theory = registry()[name]
    out: dict[str, dict[str, object]] = defaultdict(dict)
    for ex in theory.examples:
        spec = TypeAdapter(theory.spec_model).validate_python(dict(ex.spec))
        body = solution_json(name, theory.solve(spec, SolverOptions()))
        for entry in [body, *body["branches"]]:
            for group in GROUPS:
                out[group].update(flatten(entry[group]))
    return out


def _spec_fields(name: str) -> set[str]:
    schema = TypeAdapter(registry()[name].spec_model).json_schema()
    models = [schema, *schema.get("$defs", {}).values()]
    return {field for m in models if "theory" in m.get("properties", {}) for field in m["properties"]}


@pytest.mark.parametrize("name", THEORIES)
def test_every_reported_name_is_declared_in_its_group(name: str) -> None:
    table: QuantityTable = registry()[name].quantities
    for group, values in reported(name).items():
        missing = [n for n in values if not table.covers(n)]
        assert not missing, f"{name} reports {group} {missing} that its quantity table does not declare"
        misplaced = [n for n in values if n in table and group not in table[n].groups]
        assert not misplaced, f"{name}: {misplaced} are reported as {group} but not declared there"


@pytest.mark.parametrize("name", THEORIES)
def test_every_declared_quantity_is_reported_by_some_example(name: str) -> None:
    table = registry()[name].quantities
    seen = reported(name)
    for group in GROUPS:
        never = [n for n in table.names(group) if n not in seen[group]]
        assert not never, f"{name} declares {group} {never} that no example reports"


@pytest.mark.parametrize("name", THEORIES)
def test_spec_fields_are_declared_and_symbols_are_mathtext(name: str) -> None:
    theory = registry()[name]
    table = theory.quantities
    fields = _spec_fields(name)
    assert set(theory.sweepable) <= set(table.names("parameters")), "every sweepable field has a symbol"
    assert set(table.names("parameters")) <= fields, "declared parameters are spec fields"
    parser = MathTextParser("path")
    for q in table:
        assert q.symbol.count("$") % 2 == 0 and "$" in q.symbol, q
        parser.parse(q.symbol)  # raises on invalid mathtext


def test_the_served_tables_and_schemas_carry_the_symbols() -> None:
    api = TestClient(create_app(Settings(redis_url=None, rate_limit_per_minute=0)))
    served = {t["name"]: t for t in api.get("/v1/theories").json()}
    assert set(served) == set(THEORIES)
    kr = {q["name"]: q for q in served["kernel_renormalization"]["quantities"]}
    description = kr["class_distance.D2"]["description"]
    assert kr["class_distance.D2"] == {"name": "class_distance.D2", "symbol": "$D^2$", "groups": ["observables"],
                                       "dims": [], "description": description, "long_name": description,
                                       "units": "1", "role": "observable"}
    assert kr["Qbar"]["symbol"] == r"$\bar Q$" and kr["Qbar"]["groups"] == ["order_parameters"]
    assert kr["Qbar"]["role"] == "order_parameter" and kr["generalization_error"]["role"] == "headline"
    t_field = served["kernel_renormalization"]["schema"]["properties"]["T"]
    assert t_field["x-symbol"] == "$T$" and t_field["description"].startswith("[$T$] Temperature")
    assert t_field["x-units"] == "1" and t_field["description"].endswith("[units: 1]")
    components = api.get("/openapi.json").json()["components"]["schemas"]
    u_field = components["PotentialSpec"]["properties"]["u"]
    assert u_field["x-symbol"] == "$u$" and u_field["description"].startswith("[$u$] Interaction strength")
    for name in THEORIES:
        for field in registry()[name].sweepable:
            assert any(field in c.get("properties", {}) and "x-symbol" in c["properties"][field]
                       for c in components.values()), (name, field)


@pytest.mark.parametrize("name", THEORIES)
def test_every_quantity_has_units_a_role_and_the_theory_one_headline(name: str) -> None:
    table = registry()[name].quantities
    assert all(q.units and q.role in ROLES for q in table)
    headlines = [q.name for q in table if q.role == "headline"]
    assert headlines == [table.headline], headlines
    # the headline is a quantity the theory reports (every example's solve reports it)
    assert table.headline in reported(name)["observables"] or table.headline in reported(name)["order_parameters"]
    # diagnostics are told apart from observables; a spec field that is only a field is a parameter
    for q in table:
        if q.name.startswith("diagnostics.") or ".diagnostics." in q.name:
            assert q.role == "diagnostic", q
        if q.groups == ("parameters",):
            assert q.role == "parameter", q
    # every branch's own fields are described
    for field in ("free_entropy", "stable", "converged"):
        assert table.find(field) is not None
    assert table.find("no_such_quantity") is None


def test_a_timing_has_units_of_seconds() -> None:
    table = registry()["rubin_cavity"].quantities
    assert table["finite_D.diagnostics.seconds"].units == "s"
    assert registry()["kernel_renormalization"].quantities.find("Qbar").dims == ("layer",)
