"""The OpenAPI document with one ``operationId`` per operation.

FastAPI names an operation after its route, so a route serving several methods (``/v1/jobs/{id}``: GET
and DELETE, one route so that a 405 there lists both in ``Allow``) gets one id for all of them, which
OpenAPI forbids: client generators then merge or drop operations. Each repeated id gets its method.
"""

from __future__ import annotations

import warnings
from collections import Counter
from typing import Any

from fastapi import FastAPI

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
        app.openapi_schema = schema
    return app.openapi_schema
