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
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from clients.array_labels import Labels
from clients.from_arrays import from_xarray, is_arrays, open_netcdf
from clients.names import GROUPS, Keyed, UnknownQuantity, flatten, is_number, keyed
from clients.plot_labels import Symbols

#: A quantity table: dotted name -> {"symbol", "long_name", "units", "role", ...}.
Table = Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True)
class Column:
    """One quantity of a result as a labelled column: the equilibrium's value at each point (dimension ``point``)
    and each branch's (dimensions ``branch`` × ``point``; None where the branch is absent or does not report it),
    the group that reports it, and its quantity table entry as attributes (``symbol``, ``long_name``, ``units``,
    ``role``; empty where the result carries none)."""

    quantity: str
    group: str
    point: list[Any]
    branches: dict[str, list[Any]]
    attrs: Mapping[str, Any]

    @property
    def symbol(self) -> str:
        return str(self.attrs.get("symbol") or self.quantity)

    @property
    def units(self) -> str | None:
        return str(self.attrs["units"]) if self.attrs.get("units") else None

    @property
    def long_name(self) -> str | None:
        text = self.attrs.get("long_name") or self.attrs.get("description")
        return str(text) if text else None

    def values(self, branch: str | None = None) -> list[Any]:
        """The equilibrium's values along the points, or ``branch``'s."""
        return self.point if branch is None else self.branches.get(branch, [None] * len(self.point))


def _float(value: Any) -> float | None:
    return float(value) if is_number(value) else None


@dataclass(frozen=True)
class Transition:
    """A special point of a sweep (``transitions``) or a phase diagram's row: its kind (first_order, spinodal,
    stability_loss, …), how it was found (``type``), where (``parameter``; None where it is not one number), the
    branches it involves and the engine event it is (if any)."""

    kind: str
    parameter: float | None
    type: str | None = None
    branches: tuple[str, ...] = ()
    event: str | None = None

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> Transition:
        return cls(record["kind"], _float(record.get("parameter")), record.get("type"),
                   tuple(record.get("branches") or ()), record.get("event"))


@dataclass(frozen=True)
class Special:
    """A special point where it lies on a traced curve: row ``index`` of the curve."""

    kind: str
    parameter: float
    index: int
    type: str | None = None
    branches: tuple[str, ...] = ()
    event: str | None = None


@dataclass(frozen=True)
class Curve:
    """A curve the continuation traced: per row its branch, parameter value and stability, each quantity's column
    by dotted name (an order parameter's before an observable's of the same name), and its special points."""

    branch: list[str]
    parameter: list[float | None]
    stable: list[bool | None]
    columns: dict[str, list[Any]] = field(default_factory=dict)
    special: list[Special] = field(default_factory=list)

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> Curve:
        columns: dict[str, list[Any]] = {}
        for group in GROUPS:
            for name, column in (record.get(group) or {}).items():
                if column is not None:
                    columns.setdefault(name, list(column))
        special = [Special(sp["kind"], float(sp["parameter"]), int(sp["index"]), sp.get("type"),
                           tuple(sp.get("branches") or ()), sp.get("event")) for sp in record.get("special") or []]
        return cls(list(record["branch"]), list(record["parameter"]), list(record["stable"]), columns, special)

    def values(self, quantity: str) -> list[Any] | None:
        """The column of ``quantity`` (dotted name), None if the curve does not carry it."""
        return self.columns.get(quantity)


Pair = tuple[Any, Any]  # a point (p1, p2) of the parameter plane


@dataclass(frozen=True)
class Line:
    """A line of a phase diagram in the (p1, p2) plane: traced by a boundary job, or located row by row on a grid
    (``name``: ``kind:branch/branch``)."""

    kind: str
    points: list[Pair]
    type: str | None = None
    branches: tuple[str, ...] = ()
    name: str = ""

    @classmethod
    def of(cls, record: Mapping[str, Any], parameters: list[str]) -> Line:
        p1, p2 = parameters[:2]
        # a traced line's points are [p1, p2] pairs, a grid's rows {p1: …, p2: …, "refined", …} records
        points = [(q[p1], q[p2]) if isinstance(q, Mapping) else (q[0], q[1]) for q in record.get("points") or []]
        return cls(record["kind"], points, record.get("type"), tuple(record.get("branches") or ()),
                   record.get("name", ""))


@dataclass(frozen=True)
class Marked:
    """A point of the parameter plane a boundary job reports: a critical point, a probe beside a line (``label``: its
    phase), or a special point it saw but no traced line explains (``label``: its kind, ``type``)."""

    point: Pair
    label: str | None = None
    type: str | None = None


@dataclass(frozen=True)
class Estimate:
    """An experiment's estimate of one observable at one point, with its Monte-Carlo error and diagnostics (a vector
    observable's are lists)."""

    mean: Any
    stderr: Any = None
    ess: Any = None
    ess_tail: Any = None
    rhat: Any = None

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> Estimate:
        return cls(record.get("mean"), record.get("stderr"), record.get("ess"), record.get("ess_tail"),
                   record.get("rhat"))


@dataclass(frozen=True)
class Comparison:
    """The theory's value of an observable on one branch beside the experiment's estimate, and their z-score."""

    theory: Any
    z: Any = None


@dataclass(frozen=True)
class BranchState:
    """What a branch is at one point besides its quantities."""

    converged: bool | None
    stable: bool | None
    free_entropy: float | None


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

    @property
    def has_points(self) -> bool:
        """Whether the result is a series of points (a sweep, phase diagram or learning curve), not one solve or one
        experiment (which :attr:`points` gives as its one point)."""
        return self.data.get("points") is not None

    @cached_property
    def points(self) -> list[Mapping[str, Any]]:
        """The points of a sweep or phase diagram; a solve as its one point."""
        points = self.data.get("points")
        return list(points) if points is not None else [self.data]

    @cached_property
    def parameter_values(self) -> list[Any]:
        """Each point's swept value: a number (a sweep) or a list of them (a phase diagram's [p1, p2])."""
        return [pt.get("parameter") for pt in self.points]

    @cached_property
    def axes(self) -> list[list[Any]]:
        """Each swept parameter's values: a grid's served ``axes``, else the points' values in first-seen order."""
        served = self.data.get("axes")
        if served:
            return [list(served[n]) for n in self.parameters]
        values: list[list[Any]] = [[] for _ in self.parameters]
        for x in self.parameter_values:
            for k, v in enumerate(x if isinstance(x, list) else [x]):
                if v not in values[k]:
                    values[k].append(v)
        return values

    @cached_property
    def equilibria(self) -> list[str | None]:
        """Each point's equilibrium branch (None where there is none)."""
        return [pt.get("equilibrium") for pt in self.points]

    @cached_property
    def converged(self) -> list[bool | None]:
        """Whether each point's solve converged."""
        return [pt.get("converged") for pt in self.points]

    @property
    def parameter(self) -> str | None:
        """The swept field of a sweep or learning curve (None where nothing is swept: a single experiment)."""
        p = self.data.get("parameter")
        return p if isinstance(p, str) else None

    @property
    def theory_name(self) -> str | None:
        """The theory's identifier (a sweep's ``theory``, an experiment point's ``theory.name`` or ``theory_name``)."""
        theory = self.data.get("theory")
        if isinstance(theory, Mapping):
            theory = theory.get("name")
        return theory if isinstance(theory, str) else self.data.get("theory_name")

    @property
    def model(self) -> Mapping[str, Any] | None:
        """The model the result was computed for (its fixed parameters)."""
        return self.data.get("model")

    @property
    def is_boundary(self) -> bool:
        return self.kind == "boundary"

    @cached_property
    def transitions(self) -> list[Transition]:
        """The special points the result located (a sweep's, or a phase diagram's per row)."""
        return [Transition.of(t) for t in self.data.get("transitions") or []]

    @cached_property
    def curves(self) -> list[Curve]:
        """The curves the continuation traced (none for a grid sweep)."""
        return [Curve.of(c) for c in self.data.get("curves") or []]

    @property
    def box(self) -> Mapping[str, Any] | None:
        """The box a boundary job searched: parameter -> [low, high]."""
        return self.data.get("box") if self.is_boundary else None

    @cached_property
    def lines(self) -> list[Line]:
        """A phase diagram's lines: a boundary job's traced ones, or a grid's located row by row."""
        return [Line.of(line, self.parameters) for line in self.data.get("lines") or []]

    @cached_property
    def critical_points(self) -> list[Marked]:
        return [Marked(tuple(c["point"][:2])) for c in self.data.get("critical_points") or []]

    @cached_property
    def probes(self) -> list[Marked]:
        """A boundary job's solves beside its lines, each with its phase (None: no equilibrium)."""
        return [Marked(tuple(p["point"][:2]), p.get("phase")) for p in self.data.get("regions") or []]

    @cached_property
    def unexplained(self) -> list[Marked]:
        """Special points a boundary job saw that no traced line passes through, with their kind and type."""
        return [Marked(tuple(u["point"][:2]), u["kind"], u.get("type")) for u in self.data.get("unexplained") or []]

    @cached_property
    def estimates_at(self) -> list[dict[str, Estimate]]:
        """An experiment's estimates at each point (one for a single experiment), by observable."""
        return [{name: Estimate.of(est) for name, est in (pt.get("observables") or {}).items()}
                for pt in self.points]

    @cached_property
    def estimated(self) -> list[str]:
        """Every observable an experiment estimates at some point, in order of first appearance."""
        return list({name: None for at in self.estimates_at for name in at})

    @cached_property
    def comparisons_at(self) -> list[dict[str, dict[str, Comparison]]]:
        """An experiment's comparison with the theory at each point: branch -> observable -> theory's value, z."""
        return [{branch: {name: Comparison(row.get("theory"), row.get("z")) for name, row in (rows or {}).items()}
                 for branch, rows in ((pt.get("theory") or {}).get("comparison") or {}).items()}
                for pt in self.points]

    @cached_property
    def statuses(self) -> list[str | None]:
        """Each experiment point's status (converged, not_converged, …)."""
        return [pt.get("status") for pt in self.points]

    def states(self, branch: str) -> list[BranchState | None]:
        """``branch``'s convergence, stability and free entropy at every point; None where it does not exist."""
        out: list[BranchState | None] = []
        for at in self.branches_at:
            b = at.get(branch)
            out.append(None if b is None else BranchState(b.get("converged"), b.get("stable"), b.get("free_entropy")))
        return out

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
    def keyed_at(self) -> list[tuple[Keyed, dict[str, Keyed]]]:
        """Per point, (its quantities, each present branch's quantities), each by dotted name with its group
        (:func:`keyed`): the one place a point's and a branch's nested groups are flattened."""
        return [(keyed(pt), {name: keyed(b) for name, b in self.branches_at[k].items()})
                for k, pt in enumerate(self.points)]

    @cached_property
    def tables_at(self) -> list[tuple[dict[str, Any], dict[str, dict[str, Any]]]]:
        """:attr:`keyed_at` without the groups: per point, the equilibrium's and every branch's values by quantity."""
        return [({n: v for n, (_, v) in own.items()}, {b: {n: v for n, (_, v) in t.items()} for b, t in mine.items()})
                for own, mine in self.keyed_at]

    @cached_property
    def columns(self) -> dict[str, Column]:
        """Every quantity the result reports as a labelled :class:`Column`, in order of first appearance (a point's
        tables before its branches', point by point)."""
        branches = self.branch_names
        groups: dict[str, str] = {}
        for own, mine in self.keyed_at:
            for table in (own, *mine.values()):
                for name, (group, _) in table.items():
                    groups.setdefault(name, group)
        out = {}
        for name, group in groups.items():
            point = [own[name][1] if name in own else None for own, _ in self.keyed_at]
            per_branch = {b: [mine[b][name][1] if name in mine.get(b, {}) else None for _, mine in self.keyed_at]
                          for b in branches}
            out[name] = Column(name, group, point, per_branch, self.labels.entry(name))
        return out

    def table(self, quantity: str) -> Column:
        """The column of ``quantity`` (dotted name); :class:`~clients.names.UnknownQuantity` (listing the names the
        result reports) where it reports none."""
        if quantity not in self.columns:
            raise UnknownQuantity(quantity, self.columns)
        return self.columns[quantity]

    @property
    def dims(self) -> dict[str, int]:
        """The sizes of the columns' dimensions: ``point`` (a solve is one point) and ``branch``."""
        return {"point": len(self.points), "branch": len(self.branch_names)}

    @property
    def coords(self) -> dict[str, list[Any]]:
        """The columns' coordinates: each swept parameter's value at each point (along ``point``), and the branches'
        names (along ``branch``)."""
        out: dict[str, list[Any]] = {}
        if self.kind in ("sweep", "phase_diagram", "learning_curve"):
            for k, name in enumerate(self.parameters):
                out[name] = [x[k] if isinstance(x, list) else x for x in self.parameter_values]
        out["branch"] = self.branch_names
        return out

    def value_at(self, index: int, quantity: str, branch: str | None = None) -> Any:
        """``quantity`` at point ``index``: the point's (the equilibrium's), or ``branch``'s; None where absent."""
        own, mine = self.tables_at[index]
        return (own if branch is None else mine.get(branch, {})).get(quantity)

    def records(self, table: str, index: int = 0) -> list[dict[str, Any]]:
        """The records of a table-valued quantity (``potential_wells``: one per well) at point ``index``, rebuilt from
        its columns (``potential_wells.rho``, …); a field a record lacks is None."""
        own = self.tables_at[index][0] if self.points else {}
        columns = {name[len(table) + 1:]: v for name, v in own.items()
                   if name.startswith(table + ".") and isinstance(v, list)}
        n = max((len(v) for v in columns.values()), default=0)
        return [{c: (v[k] if k < len(v) else None) for c, v in columns.items()} for k in range(n)]

    def values(self, quantity: str, branch: str | None = None) -> list[Any]:
        """``quantity`` (dotted name) at every point: the point's (the equilibrium's), or ``branch``'s; None where
        that branch is absent or does not report it (or the result reports no such quantity)."""
        column = self.columns.get(quantity)
        return column.values(branch) if column is not None else [None] * len(self.points)

    def names_in(self, group: str, index: int = 0) -> list[str]:
        """The dotted names of ``group`` (``order_parameters``, ``observables``) at point ``index``, in order."""
        if not self.points:
            return []
        return list(flatten(self.points[index].get(group)))

    @cached_property
    def quantity_names(self) -> list[str]:
        """Every quantity the result reports anywhere (a point's tables or a branch's), by dotted name, sorted."""
        return sorted(self.columns)

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
