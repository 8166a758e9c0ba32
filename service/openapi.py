"""The OpenAPI document with one ``operationId`` per operation, and the papers' symbols on the spec fields.

FastAPI names an operation after its route, so a route serving several methods (``/v1/jobs/{id}``: GET
and DELETE, one route so that a 405 there lists both in ``Allow``) gets one id for all of them, which
OpenAPI forbids: client generators then merge or drop operations. Each repeated id gets its method.

Each theory's spec schema gets the symbols of its quantity table on the fields the table declares (``x-symbol``,
and the description starting with the symbol), so /docs shows the papers' notation, and the theories' specs come
first among the schemas.
"""

from __future__ import annotations

import warnings
from collections import Counter
from typing import Any

from fastapi import FastAPI

from solvers.theories import registry
from solvers.theories.quantities import annotate_schema

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _operations(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(method, op) for item in schema.get("paths", {}).values()
            for method, op in item.items() if method in METHODS and isinstance(op, dict)]


def _with_method(operation_id: str, method: str) -> str:
    stem = next((operation_id[: -len(m) - 1] for m in METHODS if operation_id.endswith(f"_{m}")), operation_id)
    return f"{stem}_{method}"


def unique_operation_ids(app: FastAPI) -> dict[str, Any]:
    """``app.openapi()`` for ``app``, its repeated operation ids made unique (computed once, then kept)."""
    if app.openapi_schema is None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Duplicate Operation ID", category=UserWarning)
            schema = FastAPI.openapi(app)
        counts = Counter(op.get("operationId") for _, op in _operations(schema))
        for method, op in _operations(schema):
            if counts[op.get("operationId")] > 1:
                op["operationId"] = _with_method(op["operationId"], method)
        with_symbols(schema)
        theory_specs_first(schema)
        app.openapi_schema = schema
    return app.openapi_schema


def _theory_of(component: Any) -> str | None:
    prop = component.get("properties", {}).get("theory") if isinstance(component, dict) else None
    if not isinstance(prop, dict):
        return None
    name = prop.get("const", (prop.get("enum") or [None])[0])
    return name if isinstance(name, str) else None


def with_symbols(schema: dict[str, Any]) -> None:
    """Annotate every theory spec among the document's component schemas with its theory's symbols."""
    theories = registry()
    for component in schema.get("components", {}).get("schemas", {}).values():
        name = _theory_of(component)
        if name in theories:
            annotate_schema(component, theories[name].quantities)


def theory_specs_first(schema: dict[str, Any]) -> None:
    """Order the component schemas so that /docs lists each theory's specs first, theory by theory, then the
    rest alphabetically (FastAPI's order starts at ``ARDSpec``, where a newcomer cannot find the theories)."""
    components = schema.get("components", {}).get("schemas", {})
    specs = sorted((n for n, c in components.items() if _theory_of(c)), key=lambda n: (_theory_of(components[n]), n))
    rest = sorted(n for n in components if n not in specs)
    schema["components"]["schemas"] = {n: components[n] for n in [*specs, *rest]}
