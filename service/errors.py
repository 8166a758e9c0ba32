"""Turning problems with a request into 422s that name the offending field, and rendering them safely.

A 422 must never become a 500 because of what it echoes: the offending input can be nested
thousands deep, megabytes long, or hold strings that are not valid Unicode (lone surrogates from
``\\ud800`` escapes). :func:`render_errors` echoes a bounded, plain-text summary of the input and
replaces anything that cannot be encoded, without recursion.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from service.field_suggestions import collapse_unions, explain_choice, explain_extra, explain_missing

#: Longest echo of an offending input, in characters.
MAX_INPUT_CHARS = 200
#: Longest rendered message or location key, in characters.
MAX_TEXT_CHARS = 1000
#: Most errors listed in one 422.
MAX_ERRORS = 50


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


def clean_text(s: str, limit: int = MAX_TEXT_CHARS) -> str:
    """``s`` encodable as UTF-8 (lone surrogates escaped), at most ``limit`` characters."""
    if len(s) > limit:
        s = s[:limit] + f"… ({len(s)} characters)"
    return s.encode("utf-8", "backslashreplace").decode("utf-8")


def summarize(value: Any, limit: int = MAX_INPUT_CHARS) -> Any:
    """A bounded echo of an input: scalars as they are (finite), anything else as a truncated text preview."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if abs(value) < 2**53 else clean_text(str(value), limit)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return clean_text(value, limit)
    return _preview(value, limit)


def _preview(value: Any, limit: int) -> str:
    """Iterative, depth- and length-bounded text of a nested list/dict (never recursive, never long)."""
    out: list[str] = []
    size = 0
    # Stack of pending tokens: containers are expanded lazily, so a deep or huge input costs O(limit).
    stack: list[Any] = [value]
    while stack and size <= limit:
        item = stack.pop()
        if isinstance(item, _Token):
            piece = item.text
        elif isinstance(item, dict):
            pairs = list(_take(item.items(), 8))
            seq: list[Any] = [_Token("{")]
            for i, (k, v) in enumerate(pairs):
                seq += [_Token((", " if i else "") + repr(clean_text(str(k), 40)) + ": "), v]
            seq.append(_Token(", …}" if len(item) > len(pairs) else "}"))
            stack.extend(reversed(seq))
            continue
        elif isinstance(item, (list, tuple)):
            elems = list(_take(item, 8))
            seq = [_Token("[")]
            for i, v in enumerate(elems):
                seq += [_Token(", " if i else ""), v]
            seq.append(_Token(", …]" if len(item) > len(elems) else "]"))
            stack.extend(reversed(seq))
            continue
        else:
            piece = clean_text(repr(item), 60)
        out.append(piece)
        size += len(piece)
    text = "".join(out)
    return clean_text(text[:limit] + ("…" if size > limit or stack else ""), limit + 1)


class _Token:
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


def _take(items: Iterable[Any], n: int) -> Iterable[Any]:
    for i, x in enumerate(items):
        if i >= n:
            return
        yield x


def render_errors(errors: Iterable[Any], body_type: Any = None) -> list[dict[str, Any]]:
    """The ``detail`` of a 422: type, location, message and a bounded echo of the input, all encodable.

    ``body_type``: the request's model; an unknown field is then explained (closest valid name in
    ``suggestion``, the valid names in ``valid_fields``, both in the message).
    """
    out: list[dict[str, Any]] = []
    explained = [explain_missing(explain_extra(explain_choice(e), body_type), body_type) if isinstance(e, dict) else e
                 for e in _take(errors, MAX_ERRORS)]
    dicts = collapse_unions([e for e in explained if isinstance(e, dict)])
    for e in [*dicts, *(e for e in explained if not isinstance(e, dict))]:
        if not isinstance(e, dict):
            out.append({"type": "value_error", "loc": ["body"], "msg": clean_text(str(e)), "input": None})
            continue
        loc = [x if isinstance(x, int) else clean_text(str(x), 200) for x in e.get("loc", ())]
        item = {
            "type": clean_text(str(e.get("type", "value_error")), 100),
            "loc": loc,
            "msg": clean_text(str(e.get("msg", ""))),
            "input": summarize(e.get("input")),
        }
        if "valid_fields" in e:
            item["suggestion"] = e["suggestion"]
            item["valid_fields"] = [clean_text(str(n), 100) for n in e["valid_fields"]]
        elif "suggestion" in e:
            item["suggestion"] = clean_text(str(e["suggestion"]), 100)
        out.append(item)
    return out
