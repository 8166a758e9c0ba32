"""What a 422 for an unknown field adds: the closest valid name and the list of valid names at that place.

Pydantic says only ``Extra inputs are not permitted``. The valid names come from the request's own model:
its error location (``body, model, <theory tag>, field``) is walked through the Pydantic types — fields of
models, members of (tagged) unions, items of lists and dicts — to the object that holds the unknown field.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections import Counter
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

#: Most valid field names listed in one error.
MAX_FIELDS = 60


def _unwrap(tp: Any) -> tuple[Any, tuple[Any, ...]]:
    """(type, metadata) with Annotated layers peeled off."""
    meta: tuple[Any, ...] = ()
    while get_origin(tp) is Annotated:
        args = get_args(tp)
        tp, meta = args[0], meta + tuple(args[1:])
    return tp, meta


def _members(tp: Any) -> list[tuple[Any, tuple[Any, ...]]]:
    tp, _ = _unwrap(tp)
    if get_origin(tp) in (Union, types.UnionType):
        return [_unwrap(m) for m in get_args(tp)]
    return []


def _tags_of(model: Any, meta: tuple[Any, ...]) -> set[str]:
    """The names a union member is known by in an error location: its Tag, or its Literal discriminator values."""
    tags = {str(m.tag) for m in meta if type(m).__name__ == "Tag" and hasattr(m, "tag")}
    if isinstance(model, type) and issubclass(model, BaseModel):
        for f in model.model_fields.values():
            ann, _ = _unwrap(f.annotation)
            if get_origin(ann) is Literal:
                tags |= {str(a) for a in get_args(ann)}
    return tags


def _step(tp: Any, segment: str | int) -> Any:
    """The type of ``segment`` inside a value of type ``tp`` (None when the location cannot be followed)."""
    members = _members(tp)
    if members:
        found = [m for m, meta in members if str(segment) in _tags_of(m, meta)]
        if found:
            return found[0]
        models = [m for m, _ in members if isinstance(m, type) and issubclass(m, BaseModel)]
        non_null = [m for m, _ in members if m is not type(None)]
        if len(non_null) == 1:  # Optional[X]
            return _step(non_null[0], segment)
        return None if len(models) != 1 else _step(models[0], segment)
    tp, _ = _unwrap(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        for name, f in tp.model_fields.items():
            if segment in (name, f.alias):
                return f.annotation
        return None
    origin, args = get_origin(tp), get_args(tp)
    if origin in (list, tuple, Sequence, typing.Sequence) and args and isinstance(segment, int):
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    return None


def type_at(root: Any, location: Sequence[str | int]) -> Any:
    """The type of the value at ``location`` (a validation error's loc without ``body``) inside ``root``, or None."""
    tp = root
    for segment in location:
        tp = _step(tp, segment)
        if tp is None:
            return None
    return tp


def valid_fields(root: Any, location: Sequence[str | int]) -> list[str] | None:
    """Field names of the object at ``location`` (a validation error's loc without ``body``) inside ``root``."""
    tp = type_at(root, location)
    if tp is None:
        return None
    non_null = [m for m, _ in _members(tp) if m is not type(None)]
    tp, _ = _unwrap(non_null[0] if len(non_null) == 1 else tp)  # Optional[Model]
    if not (isinstance(tp, type) and issubclass(tp, BaseModel)):
        return None
    return [f.alias or name for name, f in tp.model_fields.items()]


def explain_extra(error: dict[str, Any], root: Any) -> dict[str, Any]:
    """An ``extra_forbidden`` error with ``suggestion`` (difflib's closest valid name, or None), ``valid_fields``
    (at most MAX_FIELDS) and a message that says both; any other error unchanged."""
    loc = list(error.get("loc", ()))
    if error.get("type") != "extra_forbidden" or root is None or len(loc) < 2 or not isinstance(loc[-1], str):
        return error
    names = valid_fields(root, loc[1:-1])
    if not names:
        return error
    unknown = loc[-1]
    close = difflib.get_close_matches(unknown, names, n=1, cutoff=0.6)
    if not close:
        lowered = {n.lower(): n for n in names}
        close = [lowered[unknown.lower()]] if unknown.lower() in lowered else []
    shown = names[:MAX_FIELDS]
    more = f" (and {len(names) - len(shown)} more)" if len(names) > len(shown) else ""
    hint = f"; did you mean {close[0]!r}?" if close else "."
    msg = f"{unknown!r} is not a field here{hint} Valid fields: {', '.join(shown)}{more}."
    return {**error, "msg": msg, "suggestion": close[0] if close else None, "valid_fields": shown}


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _required(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items() if f.is_required()]


def _variants(tp: Any) -> list[str]:
    """How to fill a missing object: its required fields, or for a union of models each member's tag with its own
    (``kind 'digits' with classes, P``)."""
    members = [m for m, _ in _members(tp) if m is not type(None)]
    if not members:
        tp, _ = _unwrap(tp)
        return [", ".join(_required(tp))] if _is_model(tp) and _required(tp) else []
    out = []
    for m in members:
        if not _is_model(m):
            return []
        tags = [(name, get_args(_unwrap(f.annotation)[0])) for name, f in m.model_fields.items()
                if get_origin(_unwrap(f.annotation)[0]) is Literal and f.is_required()]
        needed = [n for n in _required(m) if n not in {t for t, _ in tags}]
        label = " ".join(f"{t} {v[0]!r}" for t, v in tags if len(v) == 1) or m.__name__
        out.append(f"{label} with {', '.join(needed)}" if needed else label)
    return out


def explain_missing(error: dict[str, Any], root: Any) -> dict[str, Any]:
    """A ``missing`` object (or one whose union tag is missing) with what it needs, so that one 422 names every
    field still to give, not only the object: ``data: Field required: one of kind 'teacher' with P, N0; …``."""
    loc = list(error.get("loc", ()))
    if error.get("type") not in ("missing", "union_tag_not_found") or root is None or len(loc) < 2:
        return error
    variants = _variants(type_at(root, loc[1:]))
    if not variants:
        return error
    what = f"an object with {variants[0]}" if len(variants) == 1 else "one of " + "; ".join(variants)
    return {**error, "msg": f"{error.get('msg', 'Field required')}: {what}"}


_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")


def explain_choice(error: dict[str, Any]) -> dict[str, Any]:
    """A string that is none of a literal's or an enum's values, with the closest value as for field names."""
    if error.get("type") not in ("literal_error", "enum") or not isinstance(error.get("input"), str):
        return error
    expected = _QUOTED.findall(str((error.get("ctx") or {}).get("expected", "")))
    given = error["input"]
    close = difflib.get_close_matches(given, expected, n=1, cutoff=0.6) or [
        e for e in expected if e.lower() == given.lower()][:1]
    if not close:
        return error
    return {**error, "msg": f"{given!r} is not one of {', '.join(map(repr, expected))}; did you mean {close[0]!r}?",
            "suggestion": close[0]}


def collapse_unions(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A string value that nearly names a choice of a union field gets that one error, at the field: the members'
    errors beside it (``should be a valid dictionary``, ``a valid list``) only hide the "did you mean"."""
    out: list[dict[str, Any]] = []
    siblings = Counter(tuple(e.get("loc", ()))[:-1] for e in errors)
    suggested = {tuple(e["loc"][:-1]) for e in errors if "suggestion" in e and e.get("type") == "literal_error"
                 and len(e.get("loc", ())) > 1 and siblings[tuple(e["loc"][:-1])] > 1}
    for e in errors:
        loc = tuple(e.get("loc", ()))
        if loc[:-1] in suggested and len(loc) > 1:
            if "suggestion" in e:
                out.append({**e, "loc": list(loc[:-1])})
            continue
        out.append(e)
    return out
