"""Which fields of a result's JSON its response model does not declare: the models admit fields beyond those they
list (a theory's own), so a field the codec writes and no model describes would otherwise pass unseen."""

from __future__ import annotations

import types
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

from service.result_schemas import (
    GridLinePointOut,
    SolveBody,
    SolveDiagnostics,
    SweepDiagnostics,
    SweepSummary,
)

#: Models a theory adds fields to (its notes' fields, a sweep's sample complexity, and its own diagnostics), and a
#: grid line's point, keyed by the parameters' names.
OPEN = (SolveBody, SolveDiagnostics, SweepDiagnostics, SweepSummary, GridLinePointOut)


def undeclared(model: type[BaseModel], data: Any, path: str = "") -> list[str]:
    """The paths in ``data`` (a model's JSON) of the keys no model along the way declares."""
    if not isinstance(data, dict):
        return []
    out: list[str] = []
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None:
            if not issubclass(model, OPEN) and key != "non_finite":
                out.append(f"{path}.{key}")
            continue
        out += _walk(field.annotation, value, f"{path}.{key}")
    return out


def _walk(annotation: Any, value: Any, path: str) -> list[str]:
    origin, args = get_origin(annotation), get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return undeclared(annotation, value, path)
    if origin is list and isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _walk(args[0], v, f"{path}[{i}]")]
    if origin is dict and isinstance(value, dict):
        return [p for k, v in value.items() for p in _walk(args[1], v, f"{path}.{k}")]
    if origin in (Union, types.UnionType):  # X | None: the model among the members
        return next((_walk(a, value, path) for a in args if get_origin(a) or (isinstance(a, type)
                     and issubclass(a, BaseModel))), [])
    return []
