"""Each theory's table of quantities: one dotted name, one symbol, one line of meaning, a unit and a role per
quantity.

A theory reports order parameters and observables (nested ones by dotted name, ``class_distance.D2``; a table of
records by its columns, ``potential_wells.depth``) and is swept in fields of its spec. Its table
(``solvers/theories/<name>/quantities.py``) declares every such name once, with the symbol the papers use
(matplotlib mathtext, ``$D^2$``), a short description (the CF ``long_name``), its unit (CF-style, ``"1"`` when
dimensionless: the theories are written in dimensionless variables, so nearly every quantity is) and its role
(:data:`ROLES`; one quantity per theory is its ``headline``, what a learning curve shows first). Every branch also
carries the :data:`BRANCH_QUANTITIES` (free entropy, stability, convergence), described once here. The table is the
one source of plot labels, of the attributes of the client's labelled arrays (served by ``GET /v1/theories`` and
carried in every result's ``quantities``), and of the symbols and units in the spec schemas' field descriptions
(:func:`annotate_schema`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Group = Literal["parameters", "order_parameters", "observables", "branch"]
#: Where a quantity appears: a spec field, an order parameter, an observable, or a field of every branch.
GROUPS: tuple[Group, ...] = ("parameters", "order_parameters", "observables", "branch")
Role = Literal["headline", "order_parameter", "observable", "parameter", "diagnostic"]
#: What a quantity is for: the theory's headline (one per theory), an order parameter, an observable, a spec field
#: (``parameter``), or a diagnostic of the computation (residuals, iteration counts, timings, stability flags).
ROLES: tuple[Role, ...] = ("headline", "order_parameter", "observable", "parameter", "diagnostic")
#: A quantity without units (CF convention).
DIMENSIONLESS = "1"


@dataclass(frozen=True)
class Quantity:
    """One reported quantity.

    ``groups`` says where it appears: a spec field (``parameters``), an order parameter, an observable (a few
    appear in two, e.g. an order parameter also reported as an observable). ``dims`` names the dimensions of an
    array-valued quantity (``("test_point",)``; the columns of a record table have the table's record dimension).
    ``units`` is CF-style (``"1"``: dimensionless). ``role`` defaults from the groups and the name: a name under
    ``diagnostics.`` is a diagnostic, an order parameter an order parameter, a spec field a parameter, anything
    else an observable; :func:`table` marks the headline.
    """

    name: str
    symbol: str
    description: str
    groups: tuple[Group, ...] = ("observables",)
    dims: tuple[str, ...] = ()
    units: str = DIMENSIONLESS
    role: Role | None = None

    def __post_init__(self) -> None:
        if not self.name or not self.symbol or not self.description or not self.units:
            raise ValueError(f"quantity {self.name!r}: a name, a symbol, a description and units are required")
        unknown = set(self.groups) - set(GROUPS)
        if unknown or not self.groups:
            raise ValueError(f"quantity {self.name!r}: groups must be among {GROUPS}, not {self.groups}")
        if self.role is None:
            object.__setattr__(self, "role", _default_role(self.name, self.groups))
        elif self.role not in ROLES:
            raise ValueError(f"quantity {self.name!r}: role must be among {ROLES}, not {self.role!r}")

    @property
    def long_name(self) -> str:
        """The CF ``long_name``: the description."""
        return self.description

    def entry(self) -> dict[str, Any]:
        """What a result carries about the quantity (``quantities`` of every result): symbol, long name, units,
        role, and the dims of an array-valued one."""
        out: dict[str, Any] = {"symbol": self.symbol, "long_name": self.long_name, "units": self.units,
                               "role": self.role}
        if self.dims:
            out["dims"] = list(self.dims)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "symbol": self.symbol, "description": self.description,
                "long_name": self.long_name, "units": self.units, "role": self.role,
                "groups": list(self.groups), "dims": list(self.dims)}


def _default_role(name: str, groups: tuple[Group, ...]) -> Role:
    if name.startswith("diagnostics.") or ".diagnostics." in name:
        return "diagnostic"
    if "order_parameters" in groups:
        return "order_parameter"
    if "parameters" in groups:
        return "parameter"
    if groups == ("branch",):
        return "diagnostic"
    return "observable"


#: The fields of every branch besides its quantities: described once for every theory (a theory that reports a
#: free entropy of its own, with its papers' symbol, declares it and its entry is used).
BRANCH_QUANTITIES: tuple[Quantity, ...] = (
    Quantity("free_entropy", r"$\phi$", "free entropy of the branch (null where the theory has none)", ("branch",),
             role="observable"),
    Quantity("stable", r"$\mathrm{stable}$", "whether the branch is locally stable (sign of its stability margin)",
             ("branch",)),
    Quantity("converged", r"$\mathrm{converged}$", "whether the branch's equations converged", ("branch",)),
)


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
        headlines = [q.name for q in self.quantities if q.role == "headline"]
        if len(headlines) > 1:
            raise ValueError(f"a theory has one headline quantity, not {headlines}")
        object.__setattr__(self, "by_name", by_name)

    @property
    def headline(self) -> str | None:
        """The theory's headline quantity (what a learning curve and a benchmark show first)."""
        return next((q.name for q in self.quantities if q.role == "headline"), None)

    def find(self, name: str) -> Quantity | None:
        """The entry of ``name``: declared, else a branch field's (:data:`BRANCH_QUANTITIES`); None when there is
        none."""
        if name in self.by_name:
            return self.by_name[name]
        return next((q for q in BRANCH_QUANTITIES if q.name == name), None)

    def entries(self, names: Iterable[str]) -> dict[str, dict[str, Any]]:
        """``{name: entry}`` of the names that have an entry (:meth:`find`), in the order given: what a result
        carries as its ``quantities``."""
        out: dict[str, dict[str, Any]] = {}
        for name in names:
            q = self.find(name)
            if q is not None and name not in out:
                out[name] = q.entry()
        return out

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


def table(*parts: Quantity | Iterable[Quantity], headline: str) -> QuantityTable:
    """A table from quantities and groups of them (the result of :func:`nested`, :func:`records`); ``headline``
    names the theory's headline quantity (its role becomes ``headline``)."""
    out: list[Quantity] = []
    for part in parts:
        out.extend([part] if isinstance(part, Quantity) else part)
    if headline not in {q.name for q in out}:
        raise ValueError(f"the headline {headline!r} is not declared")
    return QuantityTable(tuple(replace(q, role="headline") if q.name == headline else q for q in out))


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


def units_note(q: Quantity) -> str:
    """A field description's suffix naming the quantity's units (CF-style; 1: dimensionless)."""
    return f" [units: {q.units}]"


def annotate_schema(schema: dict[str, Any], quantities: QuantityTable) -> dict[str, Any]:
    """A spec's JSON schema with every declared spec field's symbol and units: ``x-symbol`` and ``x-units`` beside
    its description, and the description starting with the symbol and ending with the units (what /docs shows).
    Works on a schema with ``$defs`` (a tagged union of modes: each mode's properties are annotated) and returns
    the same dict, changed in place."""
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
                    prop["x-units"] = q.units
                    described = prop.get("description", q.description)
                    prop["description"] = label(q) + described + units_note(q)
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(schema)
    return schema
