"""Sweep results as tables: one row per point (the equilibrium's scalars), and series for plotting."""

from __future__ import annotations

import csv
import io
from typing import Any

SCALAR = (bool, int, float, str, type(None))


def parameter_names(result: dict[str, Any]) -> list[str]:
    """The swept field(s): ``[p]`` for a sweep, ``[p1, p2]`` for a phase diagram."""
    if "parameters" in result:
        return list(result["parameters"])
    return [result.get("parameter") or "parameter"]


def branch_of(point: dict[str, Any], name: str) -> dict[str, Any] | None:
    """Branch ``name`` of a sweep point (or a solve) with complete tables. A sweep point is compact: each branch
    lists only the entries that differ from the point's tables (null for one it lacks), so a quantity's value on a
    branch is the branch's entry when it lists one, else the point's."""
    b = next((b for b in point.get("branches", []) if b["name"] == name), None)
    if b is None:
        return None
    out = dict(b)
    for group in ("order_parameters", "observables"):
        base, own = point.get(group) or {}, b.get(group) or {}
        merged = {**base, **own}
        out[group] = {k: v for k, v in merged.items() if not (v is None and k in own and base.get(k) is not None)}
    return out


def rows(result: dict[str, Any], branch: str | None = None) -> list[dict[str, Any]]:
    """One dict per point: the swept value(s), ``equilibrium``, ``converged``, then the scalar order
    parameters and observables of the equilibrium (or of ``branch``; empty where it does not exist).
    A name that is already a column is prefixed (``order_parameters.b``, ``observables.u``)."""
    names = parameter_names(result)
    out = []
    for pt in result["points"]:
        coords = pt["parameter"] if isinstance(pt["parameter"], list) else [pt["parameter"]]
        row: dict[str, Any] = dict(zip(names, coords, strict=True))
        row["equilibrium"] = pt.get("equilibrium")
        row["converged"] = pt.get("converged")
        if branch is None:
            source = pt
        else:
            source = branch_of(pt, branch) or {}
            row["branch"] = branch
            row["stable"] = source.get("stable")
            row["free_entropy"] = source.get("free_entropy")
        for group in ("order_parameters", "observables"):
            for key, value in (source.get(group) or {}).items():
                if isinstance(value, SCALAR):
                    row[f"{group}.{key}" if key in row else key] = value
        out.append(row)
    return out


def line_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One dict per point of every traced line of a boundary job: line index, kind, type, branches, p1, p2."""
    p1, p2 = parameter_names(result)
    out = []
    for k, line in enumerate(result.get("lines", [])):
        for q in line["points"]:
            out.append({"line": k, "kind": line["kind"], "type": line.get("type"),
                        "branches": "/".join(line.get("branches", [])), p1: q[0], p2: q[1]})
    return out


def to_csv(result: dict[str, Any], branch: str | None = None) -> str:
    """CSV text of :func:`rows` (columns: the union over points, in first-seen order); for a boundary job,
    of :func:`line_rows`."""
    table = line_rows(result) if result.get("method") == "boundary" else rows(result, branch)
    columns: list[str] = []
    for r in table:
        columns.extend(k for k in r if k not in columns)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    return buf.getvalue()


def value_of(entry: dict[str, Any], quantity: str) -> Any:
    """``quantity`` from a point or branch: its order parameters first, then its observables."""
    for group in ("order_parameters", "observables"):
        values = entry.get(group) or {}
        if quantity in values:
            return values[quantity]
    return None


def series(result: dict[str, Any], quantity: str, branch: str | None = None) -> tuple[list[float], list[float | None]]:
    """(swept values, ``quantity`` of the equilibrium or of ``branch``) along a one-parameter sweep."""
    xs, ys = [], []
    for pt in result["points"]:
        if isinstance(pt["parameter"], list):
            raise ValueError("series() takes a one-parameter sweep; this is a phase diagram")
        source = pt if branch is None else branch_of(pt, branch)
        value = value_of(source, quantity) if source is not None else None
        xs.append(pt["parameter"])
        ys.append(value if isinstance(value, (int, float)) and not isinstance(value, bool) else None)
    return xs, ys


def branch_names(result: dict[str, Any]) -> list[str]:
    """Every branch that appears anywhere along the sweep, in order of first appearance."""
    names: list[str] = []
    for pt in result["points"]:
        for b in pt.get("branches", []):
            if b["name"] not in names:
                names.append(b["name"])
    return names


def experiment_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One dict per point and scalar observable of an experiment: the parameter value, the estimate with its
    figures, and per branch of the theory its value and z (``theory:<branch>``, ``z:<branch>``)."""
    points = result.get("points") or [result]
    out = []
    for pt in points:
        comparison = (pt.get("theory") or {}).get("comparison") or {}
        for name, est in (pt.get("observables") or {}).items():
            if not isinstance(est.get("mean"), SCALAR):
                continue
            row: dict[str, Any] = {"parameter": pt.get("parameter"), "observable": name, "status": pt.get("status"),
                                   **{k: est.get(k) for k in ("mean", "stderr", "ess", "ess_tail", "rhat")}}
            for branch, rows_ in comparison.items():
                if name in rows_ and isinstance(rows_[name].get("theory"), SCALAR):
                    row[f"theory:{branch}"] = rows_[name]["theory"]
                    row[f"z:{branch}"] = rows_[name]["z"]
            out.append(row)
    return out


def experiment_csv(result: dict[str, Any]) -> str:
    """CSV text of :func:`experiment_rows`."""
    table = experiment_rows(result)
    columns: list[str] = []
    for r in table:
        columns.extend(k for k in r if k not in columns)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    return buf.getvalue()
