"""Each theory's table of quantities: one dotted name, one symbol and one line of meaning per quantity.

A theory reports order parameters and observables (nested ones by dotted name, ``class_distance.D2``; a table of
records by its columns, ``potential_wells.depth``) and is swept in fields of its spec. Its table
(``solvers/theories/<name>/quantities.py``) declares every such name once, with the symbol the papers use
(matplotlib mathtext, ``$D^2$``) and a short description. It is the one source of plot labels, of the attributes
of the client's labelled arrays (served by ``GET /v1/theories``), and of the symbols in the spec schemas' field
descriptions (:func:`annotate_schema`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Group = Literal["parameters", "order_parameters", "observables"]
GROUPS: tuple[Group, ...] = ("parameters", "order_parameters", "observables")


@dataclass(frozen=True)
class Quantity:
    """One reported quantity.

    ``groups`` says where it appears: a spec field (``parameters``), an order parameter, an observable (a few
    appear in two, e.g. an order parameter also reported as an observable). ``dims`` names the dimensions of an
    array-valued quantity (``("test_point",)``; the columns of a record table have the table's record dimension).
    """

    name: str
    symbol: str
    description: str
    groups: tuple[Group, ...] = ("observables",)
    dims: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.name or not self.symbol or not self.description:
            raise ValueError(f"quantity {self.name!r}: a name, a symbol and a description are required")
        unknown = set(self.groups) - set(GROUPS)
        if unknown or not self.groups:
            raise ValueError(f"quantity {self.name!r}: groups must be among {GROUPS}, not {self.groups}")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "symbol": self.symbol, "description": self.description,
                "groups": list(self.groups), "dims": list(self.dims)}


@dataclass(frozen=True)
class QuantityTable:
    """A theory's quantities by dotted name (a name is declared once)."""

    quantities: tuple[Quantity, ...]
    by_name: Mapping[str, Quantity] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name: dict[str, Quantity] = {}
        for q in self.quantities:
            if q.name in by_name:
                raise ValueError(f"quantity {q.name!r} is declared twice")
            by_name[q.name] = q
        object.__setattr__(self, "by_name", by_name)

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    def __getitem__(self, name: str) -> Quantity:
        return self.by_name[name]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.quantities)

    def __len__(self) -> int:
        return len(self.quantities)

    def names(self, group: Group | None = None) -> list[str]:
        return [q.name for q in self.quantities if group is None or group in q.groups]

    def covers(self, name: str) -> bool:
        """Whether ``name`` is declared, or is a table (or group) whose columns are (an empty record table is
        reported as an empty list, a group that does not apply as null)."""
        return name in self.by_name or any(n.startswith(name + ".") for n in self.by_name)

    def to_json(self) -> list[dict[str, Any]]:
        return [q.to_json() for q in self.quantities]


def table(*parts: Quantity | Iterable[Quantity]) -> QuantityTable:
    """A table from quantities and groups of them (the result of :func:`nested`, :func:`records`)."""
    out: list[Quantity] = []
    for part in parts:
        out.extend([part] if isinstance(part, Quantity) else part)
    return QuantityTable(tuple(out))


def records(prefix: str, dim: str, columns: Iterable[Quantity], description: str) -> list[Quantity]:
    """The columns of a table of records (``potential_wells.depth``), one entry per record along ``dim``."""
    return [replace(c, name=f"{prefix}.{c.name}", dims=(dim, *c.dims),
                    description=f"{c.description} ({description})") for c in columns]


def nested(prefix: str, quantities: Iterable[Quantity], symbol: str, description: str) -> list[Quantity]:
    """The same quantities again under ``prefix.`` (e.g. at finite D): each symbol decorated by ``symbol``, a
    mathtext suffix placed as a superscript (``$b$`` → ``$b^{(D)}$``), each description completed by
    ``description``."""
    out = []
    for q in quantities:
        out.append(replace(q, name=f"{prefix}.{q.name}", symbol=_superscript(q.symbol, symbol),
                           description=f"{q.description} ({description})", groups=("observables",)))
    return out


def _superscript(symbol: str, mark: str) -> str:
    if symbol.startswith("$") and symbol.endswith("$"):
        return f"${{{symbol[1:-1]}}}^{{{mark}}}$"
    return f"{symbol} ${{}}^{{{mark}}}$"


def label(q: Quantity) -> str:
    """A field description's prefix naming the quantity's symbol."""
    return f"[{q.symbol}] "


def annotate_schema(schema: dict[str, Any], quantities: QuantityTable) -> dict[str, Any]:
    """A spec's JSON schema with every declared spec field's symbol: ``x-symbol`` beside its description, and the
    description starting with the symbol (what /docs shows). Works on a schema with ``$defs`` (a tagged union of
    modes: each mode's properties are annotated) and returns the same dict, changed in place."""
    declared = {q.name: q for q in quantities if "parameters" in q.groups}

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            properties = node.get("properties")
            if isinstance(properties, dict) and "theory" in properties:
                for name, prop in properties.items():
                    q = declared.get(name)
                    if q is None or not isinstance(prop, dict) or "x-symbol" in prop:
                        continue
                    prop["x-symbol"] = q.symbol
                    prop["description"] = label(q) + prop.get("description", q.description)
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(schema)
    return schema
