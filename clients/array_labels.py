"""The attributes of every variable of a result's arrays: a quantity's ``symbol`` (mathtext), ``long_name`` and
``units`` from the table entries the result carries (``quantities``; a table given to ``to_xarray`` overrides them),
and the same for the variables that are not a theory's quantities (:data:`STRUCTURE`), so that every variable of a
netCDF file says what it is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: name -> {"symbol", "long_name" (or "description"), "units", "role", "dims"}: a result's ``quantities``, or a
#: theory's table as served by ``GET /v1/theories``.
Quantities = Mapping[str, Mapping[str, Any]]

#: Variables (and coordinates) of the arrays that are not a theory's quantities: name -> (symbol, long name). All
#: are dimensionless: flags, names, indices, counts.
STRUCTURE: dict[str, tuple[str, str]] = {
    "branch": (r"$\mathrm{branch}$", "name of the branch"),
    "curve_branch": (r"$\mathrm{branch}$", "branch of each point of the curve"),
    "present": (r"$\mathrm{present}$", "whether the branch exists at this value"),
    "equilibrium_branch": (r"$\mathrm{equilibrium}$", "name of the equilibrium branch ('' where there is none)"),
    "point_converged": (r"$\mathrm{converged}$", "whether the solve at this value converged"),
    "arclength": ("$s$", "length along the curve from its first point, in the continuation's coordinates"),
    "special_point": ("$k$", "index of the special point"),
    "kind": (r"$\mathrm{kind}$", "kind of the special point or line (first_order, spinodal, …)"),
    "type": (r"$\mathrm{type}$", "how the point was found (fold, first_order, stability_loss, bifurcation, event)"),
    "branches": (r"$\mathrm{branches}$", "the branches it involves, joined by '/'"),
    "refined": (r"$\mathrm{refined}$", "whether a root finder located the point (not only a bracket of values)"),
    "uncertainty": (r"$\delta$", "bound on the distance to the true point in the parameter"),
    "detail": (r"$\mathrm{detail}$", "what the engine says about the point"),
    "at": (r"$\mathrm{at}$", "the first parameter's value on the row where the point was found (JSON text)"),
    "parameter": (r"$\mathrm{parameter}$", "the parameter of a point's coordinate (p1, p2)"),
    "points": (r"$(p_1, p_2)$", "the points of the line in the parameter plane"),
    "point": ("$k$", "index of the point along the line"),
    "critical_point": ("$k$", "index of the critical point"),
    "probe": ("$k$", "index of the probe beside a line"),
    "lines": (r"$\mathrm{lines}$", "indices of the lines that end at the critical point (JSON text)"),
    "phase": (r"$\mathrm{phase}$", "the equilibrium's phase at the probe ('' where there is none)"),
}
DIMENSIONLESS = "1"


class Labels:
    """Dimension names and attributes of quantities, from the result's own table overridden by a given one."""

    def __init__(self, carried: Quantities | None = None, given: Quantities | None = None):
        self.quantities: dict[str, Mapping[str, Any]] = {**(carried or {}), **(given or {})}

    def entry(self, name: str) -> Mapping[str, Any]:
        if name in self.quantities:
            return self.quantities[name]
        head, _, last = name.rpartition(".")
        # a component by index (``Qbar.0``): how a curve's column of a vector was named in older results
        if last.isdigit() and head in self.quantities:
            return self.quantities[head]
        return {}

    def attrs(self, name: str, group: str | None = None) -> dict[str, Any]:
        """``quantity`` (the dotted name), ``group``, and the entry's ``symbol``, ``long_name`` and ``units``."""
        q = self.entry(name)
        out: dict[str, Any] = {"quantity": name}
        if group is not None:
            out["group"] = group
        if q:
            out["symbol"] = str(q.get("symbol") or name)
            out["long_name"] = str(q.get("long_name") or q.get("description") or name)
            if q.get("units"):
                out["units"] = str(q["units"])
        head, _, last = name.rpartition(".")
        if last.isdigit() and head in self.quantities:
            out["index"] = int(last)
        return out

    def dims(self, name: str, ndim: int) -> list[str]:
        declared = list(self.entry(name).get("dims") or [])
        if len(declared) == ndim:
            return declared
        return [f"{name}_dim_{k}" for k in range(ndim)]

    def complete(self, name: str, attrs: Mapping[str, Any]) -> dict[str, Any]:
        """What ``attrs`` of variable ``name`` lack of symbol, long name and units: from the quantity's entry, else
        :data:`STRUCTURE` (dimensionless), else the name itself (no units: nothing is known of it)."""
        key = str(attrs.get("quantity", name))
        out: dict[str, Any] = {}
        known = self.attrs(key) if self.entry(key) else {}
        symbol, long_name = STRUCTURE.get(key, STRUCTURE.get(name, (None, None)))
        for field, value in (("symbol", known.get("symbol") or symbol or key),
                             ("long_name", known.get("long_name") or long_name or key),
                             ("units", known.get("units") or (DIMENSIONLESS if symbol else None))):
            if field not in attrs and value is not None:
                out[field] = value
        return out


def label_all(ds: Any, labels: Labels) -> Any:
    """``ds`` with every variable and coordinate described (:meth:`Labels.complete`), changed in place."""
    for name, variable in ds.variables.items():
        variable.attrs.update(labels.complete(str(name), variable.attrs))
    return ds
