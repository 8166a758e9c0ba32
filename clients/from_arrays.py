"""A result rebuilt from its labelled arrays (:func:`clients.arrays.to_xarray`, or a netCDF file read back with
:func:`clients.arrays.open_netcdf`), as the JSON holds it: so the figure and table functions draw a netCDF file as they
draw the JSON, labelled from the table entries the file carries.

A sweep or phase diagram comes back with its ``points`` (every present branch complete, the equilibrium's values at
the point), ``transitions``, ``curves`` and grid ``lines``; a solve with its branches; a boundary job with its
``lines``, ``critical_points`` and ``regions``. What the arrays padded (a ragged table's missing records) is dropped
again; a flag that was missing reads False (the arrays store flags as booleans).
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping
from typing import Any

from clients.install_hints import imported

#: Root attributes stored as JSON text.
JSON_ATTRS = ("parameters", "model", "quantities", "provenance", "diagnostics", "box", "branches", "special", "ends",
              "lines", "at")
#: Variables of a branch that are not in its groups.
BRANCH_FIELDS = ("stable", "free_entropy", "converged")


def xarray_module() -> Any:
    """xarray, or an ImportError that says how to install it."""
    return imported("xarray", "labelled arrays", "arrays")


def open_netcdf(path: str) -> Any:
    """Read back what :func:`clients.arrays.to_netcdf` wrote, as a ``DataTree`` (a solve's dataset is its root)."""
    return xarray_module().open_datatree(path, engine="h5netcdf").load()


def is_arrays(data: Any) -> bool:
    """Whether ``data`` is an xarray ``Dataset`` or ``DataTree`` (not a JSON result)."""
    return type(data).__module__.startswith("xarray")


def _attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        if key in JSON_ATTRS and isinstance(value, str):
            with contextlib.suppress(ValueError):  # a plain word stored as it is
                value = json.loads(value)
        out[str(key)] = value.item() if hasattr(value, "item") else value
    return out


def _plain(value: Any) -> Any:
    """A numpy value as JSON holds it: NaN → None, arrays → lists without their trailing padding."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list):
        items = [_plain(v) for v in value]
        while items and items[-1] in (None, "", []):
            items.pop()
        return items
    return value


def _groups(ds: Any, index: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``order_parameters`` and ``observables`` of the cell ``index`` of ``ds``, by the variables' ``group``."""
    out: dict[str, dict[str, Any]] = {"order_parameters": {}, "observables": {}}
    for name, variable in ds.data_vars.items():
        group = variable.attrs.get("group")
        if group in out:
            out[group][str(variable.attrs.get("quantity", name))] = _plain(variable.isel(index).values)
    return out


def _branches(ds: Any, index: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for k, name in enumerate(ds["branch"].values.tolist()):
        at = {**index, "branch": k}
        if not bool(ds["present"].isel(at)):
            continue
        entry: dict[str, Any] = {"name": name}
        entry.update({key: _plain(ds[key].isel(at).values) for key in BRANCH_FIELDS if key in ds})
        entry.update(_groups(ds, at))
        out.append(entry)
    return out


def _points(points: Any, equilibrium: Any, names: list[str]) -> list[dict[str, Any]]:
    import numpy as np

    axes = [points[n].values.tolist() for n in names]
    out = []
    for cell in np.ndindex(*(len(a) for a in axes)):
        index = dict(zip(names, cell, strict=True))
        coords = [axes[k][i] for k, i in enumerate(cell)]
        eq = str(points["equilibrium_branch"].isel(index).values)
        out.append({"parameter": coords if len(names) > 1 else coords[0],
                    "converged": bool(points["point_converged"].isel(index)),
                    "equilibrium": eq or None, "branches": _branches(points, index),
                    **_groups(equilibrium, index)})
    return out


def _curve(ds: Any) -> dict[str, Any]:
    attrs = _attrs(ds.attrs)
    columns: dict[str, dict[str, Any]] = {"order_parameters": {}, "observables": {}}
    for name, variable in ds.data_vars.items():
        group = variable.attrs.get("group")
        if group in columns:
            columns[group][str(variable.attrs.get("quantity", name))] = [_plain(v) for v in variable.values.tolist()]
    return {**attrs, "branch": ds["curve_branch"].values.tolist(), "parameter": ds["parameter"].values.tolist(),
            "arclength": ds["arclength"].values.tolist(),
            **{key: [_plain(v) for v in ds[key].values.tolist()] for key in ("stable", "free_entropy") if key in ds},
            **columns}


def _transitions(ds: Any) -> list[dict[str, Any]]:
    out = []
    for k in range(ds.sizes.get("special_point", 0)):
        row = {str(key): _plain(ds[key].values[k]) for key in ds.data_vars}
        row["branches"] = [b for b in str(row.get("branches") or "").split("/") if b]
        if "at" in row:
            row["at"] = json.loads(row["at"]) if row["at"] else None
        out.append(row)
    return out


def _pairs(ds: Any) -> list[list[float | None]]:
    return [[_plain(v) for v in pair] for pair in ds["points"].values.tolist()]


def _grid_lines(tree: Any, names: list[str]) -> list[dict[str, Any]]:
    out = []
    for node in (tree["lines"].children.values() if "lines" in tree.children else []):
        ds = node.to_dataset()
        points = [{**dict(zip(names, pair, strict=True)), "refined": bool(r), "uncertainty": _plain(u)}
                  for pair, r, u in zip(_pairs(ds), ds["refined"].values, ds["uncertainty"].values, strict=True)]
        out.append({**_attrs(ds.attrs), "points": points})
    return out


def _boundary(tree: Any, result: dict[str, Any]) -> dict[str, Any]:
    lines = [{**_attrs(node.attrs), "points": _pairs(node.to_dataset())}
             for node in (tree["lines"].children.values() if "lines" in tree.children else [])]
    critical = tree["critical_points"].to_dataset()
    regions = tree["regions"].to_dataset()
    return {**result, "lines": lines,
            "critical_points": [{"point": p, "lines": json.loads(str(n))}
                                for p, n in zip(_pairs(critical), critical["lines"].values, strict=True)],
            "regions": [{"point": p, "phase": str(f) or None}
                        for p, f in zip(_pairs(regions), regions["phase"].values, strict=True)]}


def from_xarray(data: Any) -> dict[str, Any]:
    """The result whose arrays ``data`` are (a solve's ``Dataset``, a sweep's, phase diagram's or boundary job's
    ``DataTree``, as :func:`~clients.arrays.to_xarray` made them or a netCDF file holds them)."""
    import xarray as xr

    tree = data if isinstance(data, xr.DataTree) else xr.DataTree(data)
    result = _attrs(tree.attrs)
    if result.get("method") == "boundary":
        return _boundary(tree, result)
    if "points" not in tree.children:  # a solve: its dataset along branch
        ds = tree.to_dataset()
        branches = _branches(ds, {})
        eq = next((b for b in branches if b["name"] == result.get("equilibrium")), None)
        groups = {g: (eq or {}).get(g, {}) for g in ("order_parameters", "observables")}
        return {**result, **groups, "branches": branches}
    names = list(result.get("parameters") or [result["parameter"]])
    points = tree["points"].to_dataset()
    result["points"] = _points(points, tree["equilibrium"].to_dataset(), names)
    result["transitions"] = _transitions(tree["special_points"].to_dataset())
    if "curves" in tree.children:
        result["curves"] = [_curve(node.to_dataset()) for _, node in sorted(
            tree["curves"].children.items(), key=lambda kv: int(kv[0]))]
    elif "curves_reason" in result or "curves" not in result:
        result["curves"] = None
    if len(names) == 2:
        result["lines"] = _grid_lines(tree, names)
        result["axes"] = {n: points[n].values.tolist() for n in names}
    return result
