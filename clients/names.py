"""Dotted names: every quantity of a result, nested ones included, under one name (``class_distance.D2``).

A branch (or a point, or a solve) reports ``order_parameters`` and ``observables``, some of them nested: a mapping
of scalars (``class_distance``: D2, D2_nngp, …) or a table of records (``potential_wells``: one record per well,
each with ``rho``, ``depth``, …). :func:`flatten` names every leaf by the path to it: mappings by ``.``, a table's
columns as ``table.column`` (a list, one entry per record). A list of numbers stays one vector-valued quantity.
The same names are used by the client's tables, arrays and plots and by each theory's quantity table on the server
(``GET /v1/theories``: ``quantities``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from difflib import get_close_matches
from typing import Any

GROUPS = ("order_parameters", "observables")


class UnknownQuantity(KeyError):
    """A dotted name that the result does not report; the message lists the names it does."""

    def __init__(self, name: str, available: Iterable[str]):
        self.name = name
        self.available = sorted(available)
        # a nested quantity asked for by its last part ("D2" for "class_distance.D2"), then near spellings
        close = [n for n in self.available if n.endswith("." + name)]
        close += [n for n in get_close_matches(name, self.available, n=3) if n not in close]
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        super().__init__(f"no quantity {name!r} in this result{hint}; available: {', '.join(self.available)}")

    def __str__(self) -> str:  # KeyError quotes its argument; this message reads better as it is
        return str(self.args[0])


def _is_record_table(value: list[Any]) -> bool:
    return bool(value) and all(isinstance(v, Mapping) for v in value)


def flatten(values: Mapping[str, Any] | None, prefix: str = "") -> dict[str, Any]:
    """Leaves of a nested mapping by dotted name; a table of records becomes one list per column."""
    out: dict[str, Any] = {}
    for key, value in (values or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "."))
        elif isinstance(value, list) and _is_record_table(value):
            columns: list[str] = []
            for record in value:
                columns.extend(c for c in flatten(record) if c not in columns)
            rows = [flatten(record) for record in value]
            for column in columns:
                out[f"{name}.{column}"] = [row.get(column) for row in rows]
        else:
            out[name] = value
    return out


#: A point's or branch's quantities: dotted name -> (group, value).
Keyed = dict[str, tuple[str, Any]]


def keyed(entry: Mapping[str, Any] | None) -> Keyed:
    """Every quantity of a point, branch or solve by dotted name with the group that reports it: its order
    parameters, then its observables (a name reported in both keeps the order parameter)."""
    out: Keyed = {}
    for group in GROUPS:
        for name, value in flatten((entry or {}).get(group)).items():
            out.setdefault(name, (group, value))
    return out


def quantities_of(entry: Mapping[str, Any] | None) -> dict[str, Any]:
    """Every quantity of a branch, point or solve by dotted name (:func:`keyed` without the groups)."""
    return {name: value for name, (_, value) in keyed(entry).items()}


def lookup(entry: Mapping[str, Any] | None, name: str) -> Any:
    """The value of ``name`` in a branch, point or solve; :class:`UnknownQuantity` when it reports no such name."""
    values = quantities_of(entry)
    if name not in values:
        raise UnknownQuantity(name, values)
    return values[name]


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
