"""One result as the client reads it: built once, by :func:`as_result`, from a live answer, a saved JSON file (or its
dict), a netCDF file or the labelled arrays; tables, arrays and figures all read from it.

A :class:`Result` is the result's JSON (it is a read-only mapping of it, so every function that reads a result's
fields reads a :class:`Result` as it is) together with what is read from that JSON once: its kind, swept
parameters, points, the names of its branches and of its quantities, and its quantity table (``quantities``: symbol,
long name, units and role of every quantity it holds), which labels its tables, arrays and figures. The functions of
:mod:`clients.tables`, :mod:`clients.arrays` and :mod:`clients.plot` take any of those sources and wrap it once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

from clients.array_labels import Labels
from clients.from_arrays import from_xarray, is_arrays, open_netcdf
from clients.names import GROUPS, quantities_of
from clients.plot_labels import Symbols

#: A quantity table: dotted name -> {"symbol", "long_name", "units", "role", ...}.
Table = Mapping[str, Mapping[str, Any]]


class Result(Mapping[str, Any]):
    """A result's JSON with its labels, read once (the JSON must not change after it is wrapped)."""

    def __init__(self, data: Mapping[str, Any], quantities: Table | None = None):
        self.data = data
        #: The quantity table: the result's own entries, overridden by ``quantities`` (a theory's table).
        self.quantities: dict[str, Mapping[str, Any]] = {**(data.get("quantities") or {}), **(quantities or {})}

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"<Result {self.kind} of {self.data.get('theory') or self.data.get('theory_name')!r}>"

    @cached_property
    def kind(self) -> str:
        """solve, sweep, phase_diagram, boundary, experiment or learning_curve."""
        if self.data.get("kind") in ("experiment", "learning_curve"):
            return str(self.data["kind"])
        if self.data.get("method") == "boundary":
            return "boundary"
        if "points" in self.data:
            return "phase_diagram" if "parameters" in self.data else "sweep"
        return "solve"

    @cached_property
    def parameters(self) -> list[str]:
        """The swept field(s): ``[p]`` for a sweep, ``[p1, p2]`` for a phase diagram or boundary job."""
        if "parameters" in self.data:
            return list(self.data["parameters"])
        return [self.data.get("parameter") or "parameter"]

    @cached_property
    def points(self) -> list[Mapping[str, Any]]:
        """The points of a sweep or phase diagram; a solve as its one point."""
        points = self.data.get("points")
        return list(points) if points is not None else [self.data]

    @cached_property
    def branch_names(self) -> list[str]:
        """Every branch that appears anywhere in the result, in order of first appearance."""
        names = {b["name"]: None for pt in self.points for b in pt.get("branches", [])}
        return list(names)

    @cached_property
    def branches_at(self) -> list[dict[str, dict[str, Any]]]:
        """Per point, its branches by name with complete tables (:func:`branch_of`), in the point's order."""
        return [{b["name"]: branch_of(pt, b["name"]) for b in pt.get("branches", [])} for pt in self.points]

    def branch(self, index: int, name: str) -> dict[str, Any] | None:
        """Branch ``name`` at point ``index`` with complete tables; None where it does not exist there."""
        return self.branches_at[index].get(name)

    @cached_property
    def tables_at(self) -> list[tuple[dict[str, Any], dict[str, dict[str, Any]]]]:
        """Per point, (its quantities by dotted name, each branch's quantities by dotted name): the equilibrium's
        and every branch's values, keyed by quantity (:func:`clients.names.quantities_of`)."""
        return [(quantities_of(pt), {name: quantities_of(b) for name, b in self.branches_at[k].items()})
                for k, pt in enumerate(self.points)]

    def values(self, quantity: str, branch: str | None = None) -> list[Any]:
        """``quantity`` (dotted name) at every point: the point's (the equilibrium's), or ``branch``'s; None where
        that branch is absent or does not report it."""
        return [(own if branch is None else mine.get(branch, {})).get(quantity) for own, mine in self.tables_at]

    @cached_property
    def quantity_names(self) -> list[str]:
        """Every quantity the result reports anywhere (a point's tables or a branch's), by dotted name, sorted."""
        names: set[str] = set()
        for own, mine in self.tables_at:
            names.update(own)
            for table in mine.values():
                names.update(table)
        return sorted(names)

    @cached_property
    def labels(self) -> Labels:
        """The quantity table as the arrays use it (attributes of every variable)."""
        return Labels(self.quantities)

    def symbols(self, override: Any = None) -> Symbols:
        """The quantity table as the figures use it, overridden by ``override`` (``symbols=``: a client, a table)."""
        return Symbols.of(override, self.data.get("theory"), self.quantities)

    @property
    def headline(self) -> str | None:
        """The theory's headline quantity (role ``headline`` in the table), if the table names one."""
        return next((name for name, e in self.quantities.items() if e.get("role") == "headline"), None)


def branch_of(point: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """Branch ``name`` of a sweep point (or a solve) with complete tables. A sweep point is compact: each branch
    lists only the entries that differ from the point's tables (null for one it lacks), so a quantity's value on a
    branch is the branch's entry when it lists one, else the point's."""
    b = next((b for b in point.get("branches", []) if b["name"] == name), None)
    if b is None:
        return None
    out = dict(b)
    for group in GROUPS:
        base, own = point.get(group) or {}, b.get(group) or {}
        merged = {**base, **own}
        out[group] = {k: v for k, v in merged.items() if not (v is None and k in own and base.get(k) is not None)}
    return out


def as_result(source: Any, quantities: Table | None = None) -> Result:
    """``source`` as a :class:`Result`: a Result (with ``quantities`` laid over its table), a result's JSON (a live
    answer or a saved file's dict), the path of a saved ``.json`` or netCDF (``.nc``) file, or the labelled arrays
    (:func:`clients.arrays.to_xarray`, read back with ``open_netcdf``)."""
    if isinstance(source, Result):
        return source if not quantities else Result(source.data, {**source.quantities, **quantities})
    if isinstance(source, (str, Path)):
        source = _read(Path(source))
    if is_arrays(source):
        source = from_xarray(source)
    if not isinstance(source, Mapping):
        raise TypeError(f"not a result: {type(source).__name__} (a result's JSON, a .json/.nc path or its arrays)")
    return Result(source, quantities)


def _read(path: Path) -> Any:
    if path.suffix in (".nc", ".nc4", ".netcdf"):
        return open_netcdf(str(path))
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)
