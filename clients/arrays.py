"""Results as labelled arrays (xarray; the client's ``arrays`` extra) and netCDF files.

- a solve: a ``Dataset`` along ``branch``;
- a sweep: a ``DataTree`` whose root holds only the result's attributes, with ``points`` every quantity on
  (swept parameter × branch) at the requested values, ``equilibrium`` the equilibrium's values along the
  parameter, ``curves/<k>`` each traced curve along its own ``arclength`` dimension, and ``special_points`` the
  transitions as a table;
- a phase diagram: the same on (p1 × p2 × branch), with the transition lines located row by row under
  ``lines/<k>``: ``points``, an array of (p1, p2) pairs (point × parameter);
- a boundary job: each traced line under ``lines/<k>`` (``points`` likewise), ``critical_points`` and ``regions``.

The root has no coordinates, so that no group inherits a dimension it does not use: a curve's dataframe has one row
per point of the curve, ``equilibrium`` has no ``branch``. A curve's branch at each point is ``curve_branch``.

Every quantity is one variable named by its dotted name (``class_distance.D2``), with the ``symbol`` (mathtext),
``long_name`` and ``units`` (CF-style, "1": dimensionless) of the entry the result carries (``quantities``; a table
passed as ``quantities=``, e.g. ``Client.quantities``, overrides it), its ``quantity`` name and its ``group``; every
other variable (``present``, ``curve_branch``, the special points' columns, …) is described alike. Vector quantities
get the dimensions the table names (else ``<name>_dim_k``); ragged ones (a varying number of wells) are padded with
NaN (numbers) or "" (text); a quantity with no value anywhere (no barrier at any point) is left out. Missing numbers
are NaN. A flag is boolean everywhere, False where missing: ``present`` says where a branch exists. The result's
``model``, ``quantities``, ``provenance`` and settings are attributes of the root (JSON text where they are not
scalars), so a netCDF file (:func:`to_netcdf`, engine h5netcdf) is self-describing, and
:func:`clients.from_arrays.from_xarray` rebuilds the result from it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from clients.array_labels import Labels, Quantities, label_all
from clients.from_arrays import open_netcdf as open_netcdf  # read back here, where it is written
from clients.from_arrays import xarray_module
from clients.names import GROUPS, Keyed, is_number
from clients.result import BranchState, Result, as_result

#: Flags of a branch: boolean everywhere (False where the branch is absent or the flag unknown).
FLAGS = ("stable", "converged")
#: Attributes of a sweep's or phase diagram's root (JSON text where they are not scalars).
SWEEP_ATTRS = ("theory", "parameter", "parameters", "method", "curves_reason", "model", "quantities", "provenance",
               "diagnostics")


def _np() -> Any:
    import numpy as np

    return np


# ---------------------------------------------------------------------------------------------
# values → arrays
# ---------------------------------------------------------------------------------------------


def _shape(value: Any) -> tuple[int, ...]:
    """The (padded) shape of a nested list: the longest length at each depth."""
    if not isinstance(value, list):
        return ()
    inner = [_shape(v) for v in value]
    depth = max((len(s) for s in inner), default=0)
    return (len(value), *(max((s[k] for s in inner if len(s) > k), default=0) for k in range(depth)))


def _kind(values: list[Any]) -> str:
    """How a quantity's values are stored: "str", "bool" (False where missing), "float"."""
    leaves: list[Any] = []

    def collect(v: Any) -> None:
        if isinstance(v, list):
            for x in v:
                collect(x)
        elif v is not None:
            leaves.append(v)

    for v in values:
        collect(v)
    if leaves and all(isinstance(v, str) for v in leaves):
        return "str"
    if leaves and all(isinstance(v, bool) for v in leaves):
        return "bool"
    return "float"


def _fill(target: Any, index: tuple[int, ...], value: Any, kind: str) -> None:
    if isinstance(value, list):
        for k, v in enumerate(value):
            _fill(target, (*index, k), v, kind)
        return
    if value is None:
        return
    if kind == "float" and not (is_number(value) or isinstance(value, bool)):
        return  # text among numbers: not representable, left missing
    target[index] = float(value) if kind == "float" else value


def _array(values: list[Any], outer: tuple[int, ...], kind: str | None = None) -> tuple[Any, tuple[int, ...]]:
    """An array of shape ``outer + inner`` from ``values`` (flat list over the outer cells, None = missing), of
    ``kind`` ("str", "bool", "float"; by default from the values)."""
    np = _np()
    inner: tuple[int, ...] = ()
    for v in values:
        s = _shape(v)
        inner = tuple(max(a, b) for a, b in zip(s, inner, strict=False)) + s[len(inner):] + inner[len(s):]
    kind = kind or _kind(values)
    fill = {"str": "", "bool": False, "float": np.nan}[kind]
    dtype = {"str": object, "bool": bool, "float": float}[kind]
    out = np.full(outer + inner, fill, dtype=dtype)
    for flat, v in enumerate(values):
        _fill(out, np.unravel_index(flat, outer) if outer else (), v, kind)
    if kind == "str":
        out = out.astype(str)
    return out, inner


def _variables(
    entries: list[Keyed | None], outer_dims: Sequence[str], outer: tuple[int, ...], labels: Labels,
    sizes: dict[str, int],
) -> dict[str, Any]:
    """Every quantity of ``entries`` (one per outer cell, each a point's or branch's quantities as the result keys
    them, :attr:`clients.result.Result.keyed_at`; None where absent) as (dims, array, attrs) triples; a quantity
    with no value anywhere (an empty list at every cell) is left out.

    A quantity named like one of the outer dimensions (``u``, reported beside a sweep in u) is prefixed with its
    group (``observables.u``)."""
    flat = [e or {} for e in entries]
    names: dict[str, str] = {}
    for f in flat:
        for name, (group, _) in f.items():
            names.setdefault(name, group)
    out = {}
    for name, group in names.items():
        array, inner = _array([f[name][1] if name in f else None for f in flat], outer)
        if 0 in inner:
            continue
        dims = labels.dims(name, len(inner))
        if any(sizes.get(d, n) != n for d, n in zip(dims, inner, strict=True)) or set(dims) & set(outer_dims):
            dims = [f"{name}_dim_{k}" for k in range(len(inner))]
        sizes.update(zip(dims, inner, strict=True))
        out[f"{group}.{name}" if name in outer_dims else name] = ([*outer_dims, *dims], array,
                                                                   labels.attrs(name, group))
    return out


def _attr(value: Any) -> Any:
    """A netCDF attribute: numbers and text as they are, anything else (and None) as JSON text."""
    if isinstance(value, str) or is_number(value):
        return value
    if isinstance(value, bool):
        return int(value)
    return json.dumps(value, separators=(",", ":"))


def _attrs(result: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    return {k: _attr(result[k]) for k in keys if k in result and result[k] is not None}


def _coord(name: str, values: Sequence[Any], labels: Labels) -> tuple[Any, ...]:
    return (name, _np().asarray(values, dtype=float), labels.attrs(name))


def _dataset(variables: dict[str, Any], coords: dict[str, Any], labels: Labels,
             attrs: dict[str, Any] | None = None) -> Any:
    """A dataset with every variable and coordinate described (symbol, long name, units)."""
    xr = xarray_module()
    ds = xr.Dataset({k: xr.Variable(*v) for k, v in variables.items()}, coords=coords, attrs=attrs or {})
    return label_all(ds, labels)


def _branch_variables(states: list[BranchState | None], names: list[str], outer_dims: list[str],
                      outer: tuple[int, ...], labels: Labels) -> dict[str, Any]:
    """``present``, ``stable``, ``free_entropy``, ``converged`` of each branch at each cell (``states``: cells ×
    branches, None where a branch is absent)."""
    out = {}
    present, _ = _array([e is not None for e in states], (*outer, len(names)), "bool")
    out["present"] = ([*outer_dims, "branch"], present, {"quantity": "present"})
    for key in ("stable", "free_entropy", "converged"):
        array, _ = _array([getattr(e, key) if e is not None else None for e in states], (*outer, len(names)),
                          "bool" if key in FLAGS else "float")
        out[key] = ([*outer_dims, "branch"], array, labels.attrs(key, "branch"))
    return out


# ---------------------------------------------------------------------------------------------
# results → datasets and trees
# ---------------------------------------------------------------------------------------------


def solve_dataset(result: Result) -> Any:
    """A single solve along ``branch``: every quantity of every branch, ``present``, ``stable``, ``free_entropy``,
    ``converged``; attributes: theory, equilibrium, converged, spec_hash, model, quantities, provenance."""
    labels = result.labels
    mine = result.keyed_at[0][1]
    names = list(mine)
    variables = _variables([mine[b] for b in names], ["branch"], (len(names),), labels, {})
    variables.update(_branch_variables([result.states(b)[0] for b in names], names, [], (), labels))
    return _dataset(variables, {"branch": names}, labels,
                    _attrs(result, ("theory", "equilibrium", "converged", "spec_hash", "cached", "model",
                                    "quantities", "provenance")))


def _curve_dataset(curve: Mapping[str, Any], parameter: str, labels: Labels) -> Any:
    np = _np()
    n = len(curve["parameter"])
    variables: dict[str, Any] = {
        "parameter": (["arclength"], np.asarray(curve["parameter"], dtype=float),
                      {**labels.attrs(parameter), "quantity": "parameter", "parameter": parameter}),
        "curve_branch": (["arclength"], np.asarray(curve["branch"], dtype=str), {"quantity": "curve_branch"}),
    }
    for key in ("stable", "free_entropy"):
        if key in curve:
            array, _ = _array(list(curve[key]), (n,), "bool" if key in FLAGS else "float")
            variables[key] = (["arclength"], array, labels.attrs(key, "branch"))
    for group in GROUPS:
        for name, column in (curve.get(group) or {}).items():
            key = f"{group}.{name}" if name in variables or name in ("arclength", "branch") else name
            if key in variables:
                continue  # a name reported in both groups keeps the order parameter's column
            array, inner = _array(list(column), (n,))
            if 0 in inner:
                continue
            variables[key] = (["arclength", *labels.dims(name, len(inner))], array, labels.attrs(name, group))
    special = curve.get("special") or []
    attrs = {**_attrs(curve, ("name", "traced", "message", "at")),
             "branches": json.dumps(curve.get("branches") or []),
             "special": json.dumps(special)}
    arclength = ("arclength", np.asarray(curve["arclength"], dtype=float), {"quantity": "arclength"})
    return _dataset(variables, {"arclength": arclength}, labels, attrs)


def _special_points(transitions: list[Mapping[str, Any]], parameter: str, labels: Labels) -> Any:
    np = _np()
    n = len(transitions)
    columns = ["kind", "type", "parameter", "branches", "refined", "uncertainty", "detail", "at"]
    kinds = {"refined": "bool", "parameter": "float", "uncertainty": "float"}
    variables = {}
    for key in columns:
        values = [t.get(key) for t in transitions]
        if key == "branches":
            values = ["/".join(v or []) for v in values]
        elif key == "at":
            if all(v is None for v in values):
                continue
            values = [json.dumps(v) if v is not None else "" for v in values]
        array, _ = _array(values, (n,), kinds.get(key, "str"))
        attrs = {**labels.attrs(parameter), "quantity": key, "parameter": parameter} if key == "parameter" else {
            "quantity": key}
        variables[key] = (["special_point"], array, attrs)
    return _dataset(variables, {"special_point": np.arange(n)}, labels)


def sweep_tree(result: Result) -> Any:
    """A sweep or a phase diagram (grid or continuation) as a ``DataTree`` (see the module's description)."""
    xr, np = xarray_module(), _np()
    if result.is_boundary:
        return boundary_tree(result)
    labels = result.labels
    names, axes = result.parameters, result.axes
    shape = tuple(len(a) for a in axes)
    at: list[int | None] = [None] * int(np.prod(shape))  # each cell's point (its index), None where none
    for i, x in enumerate(result.parameter_values):
        coords = x if isinstance(x, list) else [x]
        at[int(np.ravel_multi_index([axes[k].index(v) for k, v in enumerate(coords)], shape))] = i
    branches = result.branch_names
    states = {b: result.states(b) for b in branches}
    sizes: dict[str, int] = {}
    per_branch = [result.keyed_at[i][1].get(b) if i is not None else None for i in at for b in branches]
    variables = _variables(per_branch, [*names, "branch"], (*shape, len(branches)), labels, sizes)
    variables.update(_branch_variables([states[b][i] if i is not None else None for i in at for b in branches],
                                       branches, names, shape, labels))
    eq, _ = _array([result.equilibria[i] if i is not None else None for i in at], shape, "str")
    conv, _ = _array([result.converged[i] if i is not None else None for i in at], shape, "bool")
    variables["equilibrium_branch"] = (names, eq, {"quantity": "equilibrium_branch"})
    variables["point_converged"] = (names, conv, {"quantity": "point_converged"})
    coords = {n: _coord(n, a, labels) for n, a in zip(names, axes, strict=True)}
    points = _dataset(variables, {**coords, "branch": ("branch", np.asarray(branches, dtype=str))}, labels)
    cell = [result.keyed_at[i][0] if i is not None else None for i in at]
    equilibrium = _dataset(_variables(cell, names, shape, labels, dict(sizes)), coords, labels)
    root = _dataset({}, {}, labels, _attrs(result, SWEEP_ATTRS))
    children = {"points": points, "equilibrium": equilibrium,
                "special_points": _special_points(result.get("transitions", []), names[-1], labels)}
    for k, curve in enumerate(result.get("curves") or []):
        children[f"curves/{k}"] = _curve_dataset(curve, names[-1], labels)
    for k, line in enumerate(result.get("lines") or []):
        children[f"lines/{k}"] = _grid_line(line, names, labels)
    return xr.DataTree.from_dict({"/": root, **children})


def _points_variable(pairs: Any, names: list[str], dim: str) -> dict[str, Any]:
    """(p1, p2) pairs as one array ``points`` (dim × parameter); the ``parameter`` coordinate names p1 and p2."""
    np = _np()
    return {"points": ([dim, "parameter"], np.asarray(pairs, dtype=float).reshape(-1, 2), {"quantity": "points"})}


def _grid_line(line: Mapping[str, Any], names: list[str], labels: Labels) -> Any:
    """A transition line of a grid phase diagram, located row by row: (p1, p2) per row."""
    pts = line.get("points") or []
    variables = _points_variable([[q[n] for n in names] for q in pts], names, "point")
    for key, kind in (("refined", "bool"), ("uncertainty", "float")):
        array, _ = _array([q.get(key) for q in pts], (len(pts),), kind)
        variables[key] = (["point"], array, {"quantity": key})
    attrs = {**_attrs(line, ("name", "kind")), "branches": json.dumps(line.get("branches") or [])}
    return _dataset(variables, {"parameter": names}, labels, attrs)


def boundary_tree(result: Result) -> Any:
    """A boundary job: ``lines/<k>`` with the line's (p1, p2) as ``points`` (point × parameter; the ends and type as
    attributes), ``critical_points`` likewise, ``regions`` (the probes beside the lines: ``points`` and their
    ``phase``, '' where none); the box, reason, model, quantities and provenance as attributes."""
    xr = xarray_module()
    labels = result.labels
    names = result.parameters
    children: dict[str, Any] = {}
    for k, line in enumerate(result.get("lines", [])):
        children[f"lines/{k}"] = _dataset(_points_variable(line["points"], names, "point"), {"parameter": names},
                                          labels, {**_attrs(line, ("kind", "type", "event", "formulation", "message")),
                                                   "branches": json.dumps(line.get("branches") or []),
                                                   "ends": json.dumps(line.get("ends") or [])})
    critical = result.get("critical_points", [])
    variables = _points_variable([c["point"] for c in critical], names, "critical_point")
    variables["lines"] = (["critical_point"], _np().asarray([json.dumps(c.get("lines")) for c in critical],
                                                            dtype=str), {"quantity": "lines"})
    children["critical_points"] = _dataset(variables, {"parameter": names}, labels)
    probes = result.probes
    variables = _points_variable([p.point for p in probes], names, "probe")
    variables["phase"] = (["probe"], _np().asarray(["" if p.label is None else p.label for p in probes],
                                                   dtype=str), {"quantity": "phase", "missing": "''"})
    children["regions"] = _dataset(variables, {"parameter": names}, labels)
    root = _dataset({}, {}, labels, _attrs(result, ("theory", "parameters", "method", "box", "reason", "model",
                                                    "quantities", "provenance", "diagnostics")))
    return xr.DataTree.from_dict({"/": root, **children})


def to_xarray(result: Mapping[str, Any], quantities: Quantities | None = None) -> Any:
    """The labelled arrays of any result: a solve (``Dataset``), a sweep, phase diagram or boundary job
    (``DataTree``). Labels come from the result's own ``quantities``; ``quantities`` (a theory's table,
    ``Client.quantities(theory)``) overrides them. ``result``: anything :func:`clients.result.as_result` reads."""
    result = as_result(result, quantities)
    if result.kind in ("sweep", "phase_diagram", "boundary"):
        return sweep_tree(result)
    if "branches" in result:
        return solve_dataset(result)
    raise ValueError("not a solve, sweep, phase diagram or boundary result (an experiment: experiments.to_datatree)")


def to_netcdf(data: Any, path: str) -> None:
    """Write a ``Dataset`` or ``DataTree`` to a netCDF-4 file (h5netcdf engine, groups for a tree)."""
    data.to_netcdf(path, engine="h5netcdf")


