"""Turning problems with a request into 422s that name the offending field."""

from __future__ import annotations

from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError


def field_error(loc: list[str | int], msg: str, kind: str = "value_error", value: Any = None) -> RequestValidationError:
    return RequestValidationError([{"type": kind, "loc": ["body", *loc], "msg": msg, "input": value}])


def relocate(exc: ValidationError, prefix: list[str | int]) -> RequestValidationError:
    """A validation error raised on a sub-object, re-rooted at ``body.<prefix>``."""
    errors = []
    for e in exc.errors(include_url=False):
        e = dict(e)
        e["loc"] = ["body", *prefix, *e.get("loc", ())]
        e.pop("ctx", None)
        errors.append(e)
    return RequestValidationError(errors)
