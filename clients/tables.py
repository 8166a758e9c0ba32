"""Results as tables: one row per point (or per point and branch), series for plotting, CSV text.

Every quantity is reached by its dotted name (:mod:`clients.names`: ``class_distance.D2``,
``potential_wells.depth``); a name the result does not report raises :class:`~clients.names.UnknownQuantity`,
which lists the names it does. Every table is read from the result's labelled columns and keyed entries
(:class:`clients.result.Result`), which read the JSON once.

A CSV export opens with two comment lines that give each quantity column's units and symbol, from the table entries
the result carries (``quantities``), as JSON objects keyed by column::

    # units: {"u": "1", "rho": "1", "test_mse": "1", ...}
    # symbols: {"u": "$u$", "rho": "$\\rho$", ...}
    u,equilibrium,converged,rho,...

``pandas.read_csv(path, comment="#")`` skips them; :func:`read_csv` reads them too (``DataFrame.attrs``).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from typing import Any

from clients.names import GROUPS, Keyed, is_number
from clients.result import Result, as_result
from clients.result import branch_of as branch_of  # the compact-point rule, read where results are read

SCALAR = (bool, int, float, str, type(None))
#: ``branch=`` value of :func:`rows` and :func:`to_csv` asking for every branch (long format).
ALL_BRANCHES = "all"


def parameter_names(result: Mapping[str, Any]) -> list[str]:
    """The swept field(s): ``[p]`` for a sweep, ``[p1, p2]`` for a phase diagram."""
    return as_result(result).parameters


def branch_names(result: Mapping[str, Any]) -> list[str]:
    """Every branch that appears anywhere in the result, in order of first appearance."""
    return as_result(result).branch_names


def quantity_names(result: Mapping[str, Any]) -> list[str]:
    """Every quantity the result reports anywhere (a point's tables or a branch's), by dotted name, sorted."""
    return as_result(result).quantity_names


def check_scalar(result: Result, name: str) -> None:
    """:class:`~clients.names.UnknownQuantity` (listing the names there are) unless the result reports ``name``
    somewhere, and ValueError where ``name`` is vector-valued (a plot of it needs one component)."""
    column = result.table(name)
    if any(isinstance(v, list) for values in (column.point, *column.branches.values()) for v in values):
        raise ValueError(f"{name} is vector-valued; take one component from lab.to_xarray(result)")


def series(result: Mapping[str, Any], quantity: str, branch: str | None = None) -> tuple[list[float], list[Any]]:
    """(swept values, ``quantity`` of the equilibrium or of ``branch``) along a one-parameter sweep; None where the
    branch does not exist or does not report it. ``quantity`` is a dotted name; one the sweep does not report
    anywhere raises :class:`UnknownQuantity`. Numbers stay numbers, a vector-valued quantity gives its lists."""
    result = as_result(result)
    if any(isinstance(x, list) for x in result.parameter_values):
        raise ValueError("series() takes a one-parameter sweep; this is a phase diagram")
    column = result.table(quantity)
    if branch is not None and branch not in result.branch_names:
        raise KeyError(f"no branch {branch!r} in this sweep; branches: {', '.join(result.branch_names)}")
    ys = [None if isinstance(value, bool) or not (is_number(value) or isinstance(value, list)) else value
          for value in column.values(branch)]
    return list(result.parameter_values), ys


def _row(result: Result, k: int) -> dict[str, Any]:
    at = result.parameter_values[k]
    row: dict[str, Any] = dict(zip(result.parameters, at if isinstance(at, list) else [at], strict=True))
    row["equilibrium"] = result.equilibria[k]
    row["converged"] = result.converged[k]
    return row


def _add_quantities(row: dict[str, Any], table: Keyed) -> None:
    """Every quantity of a point's or branch's ``table``; a name already a column is prefixed with its group."""
    fixed = set(row)
    for key, (group, value) in table.items():
        row[f"{group}.{key}" if key in fixed else key] = value


def rows(result: Mapping[str, Any], branch: str | None = None) -> list[dict[str, Any]]:
    """One dict per point: the swept value(s), ``equilibrium``, ``converged``, then every quantity by dotted name
    (nested ones included; a vector or a record table's column is a list) of the equilibrium, or of ``branch``
    (with its ``stable`` and ``free_entropy``; empty where it does not exist). ``branch="all"``: one row per
    point and branch (in the point's order of branches), in long format with a ``branch`` column. A name that is
    already a column (the swept field itself, ``equilibrium``…) is prefixed with its group (``observables.u``)."""
    result = as_result(result)
    if branch not in (None, ALL_BRANCHES) and branch not in result.branch_names:
        raise KeyError(f"no branch {branch!r} in this result; branches: {', '.join(result.branch_names)}")
    states = {name: result.states(name) for name in result.branch_names}
    out = []
    for k, (own, mine) in enumerate(result.keyed_at):
        wanted = list(mine) if branch == ALL_BRANCHES else [branch]
        for name in wanted:
            row = _row(result, k)
            if name is None:
                _add_quantities(row, own)
            else:
                state = states[name][k]
                row["branch"] = name
                row["stable"] = state.stable if state is not None else None
                row["free_entropy"] = state.free_entropy if state is not None else None
                _add_quantities(row, mine.get(name) or {})
            out.append(row)
    return out


def line_rows(result: Result) -> list[dict[str, Any]]:
    """One dict per point of every traced line of a boundary job: line index, kind, type, branches, p1, p2."""
    p1, p2 = result.parameters
    out = []
    for k, line in enumerate(result.lines):
        for q in line.points:
            out.append({"line": k, "kind": line.kind, "type": line.type, "branches": "/".join(line.branches),
                        p1: q[0], p2: q[1]})
    return out


def _cell(value: Any) -> Any:
    """A CSV cell: scalars as they are, lists (vectors, record-table columns) as JSON arrays."""
    return value if isinstance(value, SCALAR) else json.dumps(value, separators=(",", ":"))


#: The comment lines a CSV export opens with, in order: what each names of a column (:func:`column_labels`).
CSV_LABELS = ("units", "symbols")


def _quantity_of_column(column: str) -> str:
    """The quantity a column holds: its name, without the group a clashing name is prefixed with (``observables.u``)."""
    group, _, rest = column.partition(".")
    return rest if group in GROUPS and rest else column


def column_labels(result: Result, columns: Iterable[str],
                  renamed: Mapping[str, str] | None = None) -> dict[str, dict[str, str]]:
    """``{"units": {column: units}, "symbols": {column: symbol}}`` of the columns that hold a quantity of the result
    (its ``quantities``; ``renamed``: column -> quantity where a column is named otherwise); the others (flags, names)
    are left out."""
    labels = result.labels
    out: dict[str, dict[str, str]] = {"units": {}, "symbols": {}}
    for column in columns:
        entry = labels.entry((renamed or {}).get(column) or _quantity_of_column(column))
        if entry.get("units"):
            out["units"][column] = str(entry["units"])
        if entry.get("symbol"):
            out["symbols"][column] = str(entry["symbol"])
    return out


def _columns_of(table: list[Mapping[str, Any]]) -> list[str]:
    columns: list[str] = []
    for r in table:
        columns.extend(k for k in r if k not in columns)
    return columns


def csv_text(table: Iterable[Mapping[str, Any]], labels: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """CSV of dicts (columns: the union over rows, in first-seen order), opened by a comment line per entry of
    ``labels`` (:data:`CSV_LABELS`: ``# units: {...}``) that names any column."""
    table = list(table)
    columns = _columns_of(table)
    buf = io.StringIO()
    for kind in CSV_LABELS:
        named = {c: v for c, v in ((labels or {}).get(kind) or {}).items() if c in columns}
        if named:
            buf.write(f"# {kind}: {json.dumps(named, ensure_ascii=False)}\n")
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: _cell(v) for k, v in r.items()} for r in table)
    return buf.getvalue()


def to_csv(result: Mapping[str, Any], branch: str | None = None) -> str:
    """CSV text of :func:`rows` (``branch="all"``: every branch, long format); for a boundary job, of
    :func:`line_rows`. Vector-valued quantities are JSON arrays in their cells. It opens with the columns' units and
    symbols (comment lines, see the module's note)."""
    result = as_result(result)
    table = line_rows(result) if result.is_boundary else rows(result, branch)
    return csv_text(table, column_labels(result, _columns_of(table)))


def read_csv(source: Any) -> Any:
    """A CSV export (a path, or an open text file) as a pandas DataFrame, with its columns' labels in
    ``attrs["units"]`` and ``attrs["symbols"]`` (``{}`` for a file without them). Needs pandas."""
    import pandas as pd

    text = source.read() if hasattr(source, "read") else open(source, encoding="utf-8").read()  # noqa: SIM115
    lines = text.splitlines(keepends=True)
    attrs: dict[str, Any] = {kind: {} for kind in CSV_LABELS}
    n = 0
    while n < len(lines) and lines[n].startswith("#"):
        kind, _, value = lines[n][1:].partition(":")
        if kind.strip() in attrs:
            attrs[kind.strip()] = json.loads(value)
        n += 1
    frame = pd.read_csv(io.StringIO("".join(lines[n:])))
    frame.attrs.update(attrs)
    return frame


def experiment_rows(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One dict per point and scalar observable of an experiment: the parameter value, the observable with its
    ``units`` and ``symbol`` (from the result's ``quantities``), the estimate with its figures, and per branch of
    the theory its value and z (``theory:<branch>``, ``z:<branch>``)."""
    result = as_result(result)
    labels = result.labels
    out = []
    for at, status, estimates, comparison in zip(result.parameter_values, result.statuses, result.estimates_at,
                                                 result.comparisons_at, strict=True):
        for name, est in estimates.items():
            if not isinstance(est.mean, SCALAR):
                continue
            entry = labels.entry(name)
            row: dict[str, Any] = {"parameter": at, "observable": name, "units": entry.get("units"),
                                   "symbol": entry.get("symbol"), "status": status, "mean": est.mean,
                                   "stderr": est.stderr, "ess": est.ess, "ess_tail": est.ess_tail, "rhat": est.rhat}
            for branch, compared in comparison.items():
                if name in compared and isinstance(compared[name].theory, SCALAR):
                    row[f"theory:{branch}"] = compared[name].theory
                    row[f"z:{branch}"] = compared[name].z
            out.append(row)
    return out


def experiment_csv(result: Mapping[str, Any]) -> str:
    """CSV text of :func:`experiment_rows` (each row names its observable's units and symbol; a learning curve's
    ``parameter`` column has its own in the opening comment lines)."""
    result = as_result(result)
    parameter = result.parameter
    return csv_text(experiment_rows(result),
                    column_labels(result, ["parameter"], {"parameter": parameter}) if parameter else None)
