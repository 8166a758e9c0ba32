"""An experiment's result on the client side: the JSON, its points, and ArviZ output from its per-draw series.

The result JSON carries the estimates and diagnostics; the per-draw series (every estimator of every chain,
thinned to a bounded number of draws, vector estimators flattened to their first components) are fetched on demand
from ``GET /v1/experiments/{id}/draws?point=k``, so results stay small.

:func:`to_datatree` makes the whole experiment one ArviZ ``DataTree`` (arviz-base, xarray; the client's ``arrays``
extra): ``posterior`` and ``sample_stats`` in ArviZ's layout (``chain``, ``draw``; a learning curve adds its
parameter as a dimension), ``theory`` (the theory's value of each estimator on each branch of the solve of the
same spec), ``summary`` (the server's mean, stderr, ESS and R-hat of each estimator), and as attributes the spec,
the sampler options, the network's sizes and seed, the parameter's values and the provenance. The server does not
send the network's training data, so there is no ``observed_data`` group.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from clients.result import Result, as_result

STATISTICS = ("mean", "stderr", "ess", "ess_tail", "rhat")


def points_of(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The points of a learning curve, or the single experiment as one point."""
    return as_result(result).points


def _floats(values: Any) -> Any:
    """A nested list (null = missing) as a float array with NaN."""
    import numpy as np

    a = np.array(values, dtype=object)
    return np.where(a == None, np.nan, a).astype(float)  # noqa: E711 - elementwise test for JSON null


def _sample_stats(series: Mapping[str, Any]) -> dict[str, Any]:
    import numpy as np

    s = series["sample_stats"]
    stats = {"lp": _floats(s["lp"]), "diverging": np.asarray(s["diverging"], dtype=bool),
             "n_steps": np.asarray(s["n_steps"], dtype=int), "nonfinite": np.asarray(s["nonfinite"], dtype=int)}
    if "acceptance_rate" in s:
        stats["acceptance_rate"] = _floats(s["acceptance_rate"])
    return stats


def inference_data(series: Mapping[str, Any]) -> Any:
    """ArviZ ``DataTree`` (arviz-base) of one point's per-draw series, as served by the draws endpoint.

    ``posterior``: one variable per estimator, dimensions ``chain``, ``draw`` (the kept draws' indices after
    warmup, every ``thin``-th) and ``<name>_dim_0`` (the flattened components served); ``sample_stats``: ``lp``,
    ``diverging``, ``n_steps``, ``nonfinite`` and, for the adjusted samplers, ``acceptance_rate``. Undefined values
    (null) are NaN.
    """
    import arviz_base
    import numpy as np

    posterior = {name: _floats(v) for name, v in series["posterior"].items()}
    coords = {"chain": np.arange(int(series["chains"])), "draw": np.asarray(series["draw"], dtype=int)}
    tree = arviz_base.from_dict({"posterior": posterior, "sample_stats": _sample_stats(series)}, coords=coords)
    tree.attrs.update({k: series[k] for k in ("thin", "draws", "point") if series.get(k) is not None})
    if series.get("parameter") is not None:
        tree.attrs["parameter"] = series["parameter"]
    return tree


def _stack(arrays: Sequence[Any]) -> Any:
    """Arrays of shape (chains, draws_k, *shape_k) stacked on a third axis, padded with NaN to the largest."""
    import numpy as np

    shape = tuple(max(a.shape[k] if a.ndim > k else 1 for a in arrays) for k in range(max(a.ndim for a in arrays)))
    out = np.full((shape[0], shape[1], len(arrays), *shape[2:]), np.nan)
    for k, a in enumerate(arrays):
        out[(slice(0, a.shape[0]), slice(0, a.shape[1]), k, *(slice(0, n) for n in a.shape[2:]))] = a
    return out


def _attr(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str | int | float):
        return value
    return json.dumps(value, separators=(",", ":"))


def _per_point(per_point: Sequence[Any], outer: list[str], name: str) -> tuple[list[str], Any]:
    """A value at every point as one array: (points, *shape) on a learning curve (``outer`` names the parameter),
    (*shape) for a single experiment; NaN where a point has no value (None)."""
    import numpy as np

    values = [None if v is None else _floats(v) for v in per_point]
    shape = next((v.shape for v in values if v is not None), ())
    array = np.full((len(values), *shape), np.nan)
    for k, v in enumerate(values):
        if v is not None and v.shape == shape:
            array[k] = v
    dims = [f"{name}_dim_{k}" for k in range(len(shape))]
    return ([*outer, *dims], array) if outer else (dims, array[0])


def _names(per_point: Sequence[Iterable[str]]) -> list[str]:
    """The names of every point's mapping, in order of first appearance."""
    return list({n: None for names in per_point for n in names})


def to_datatree(
    result: Mapping[str, Any],
    series: Sequence[Mapping[str, Any]],
    request: Mapping[str, Any] | None = None,
    quantities: Mapping[str, Mapping[str, Any]] | None = None,
) -> Any:
    """The whole experiment as one ArviZ ``DataTree`` (see the module's description).

    ``series``: the per-draw series of each point, in order (``ExperimentResult.draws(k)``); ``request``: what was
    submitted (``model``, ``sampler``, ``sizes``, ``network_seed``), kept as attributes. Each variable's symbol,
    long name and units come from the result's own ``quantities``; ``quantities`` (the theory's table) overrides
    them.
    """
    import arviz_base
    import numpy as np
    import xarray as xr

    result = as_result(result, quantities)
    labels = result.labels
    curve = result.has_points
    parameter = result.parameter or "parameter"
    values = result.parameter_values
    if len(series) != len(values):
        raise ValueError(f"{len(values)} point(s) but {len(series)} draw series")
    dims: dict[str, list[str]] = {}
    if curve:
        posterior = {name: _stack([_floats(s["posterior"][name]) for s in series]) for name in series[0]["posterior"]}
        first = _sample_stats(series[0])
        stats = {name: _stack([np.asarray(_sample_stats(s)[name], dtype=float) for s in series]) for name in first}
        for name, a in {**posterior, **stats}.items():
            dims[name] = [parameter, *(f"{name}_dim_{k}" for k in range(a.ndim - 3))]
        for name, a in stats.items():  # counts and flags keep their type where no point is padded
            if first[name].dtype.kind in "biu" and np.all(np.isfinite(a)):
                stats[name] = a.astype(first[name].dtype)
        draw = max((s["draw"] for s in series), key=len)
        coords: dict[str, Any] = {parameter: np.asarray(values, dtype=float)}
    else:
        posterior = {name: _floats(v) for name, v in series[0]["posterior"].items()}
        stats = _sample_stats(series[0])
        draw, coords = series[0]["draw"], {}
    coords.update({"chain": np.arange(int(series[0]["chains"])), "draw": np.asarray(draw, dtype=int)})
    tree = arviz_base.from_dict({"posterior": posterior, "sample_stats": stats}, coords=coords, dims=dims)

    outer = [parameter] if curve else []
    along = {parameter: coords[parameter]} if curve else {}
    compared = result.comparisons_at
    branches = _names(compared)
    theory = {}
    for name in _names([{n: 0 for rows in at.values() for n in rows} for at in compared]):
        per_branch = [_per_point([getattr(at.get(b, {}).get(name), "theory", None) for at in compared], outer, name)
                      for b in branches]
        shape = max((a.shape for _, a in per_branch), key=len)
        array = np.stack([a if a.shape == shape else np.full(shape, np.nan) for _, a in per_branch])
        theory[name] = xr.Variable(["branch", *per_branch[0][0]], array, labels.attrs(name))
    tree["theory"] = xr.Dataset(theory, coords={"branch": np.asarray(branches, dtype=str), **along})

    summary = {}
    for name in result.estimated:
        per_stat = [_per_point([getattr(at.get(name), stat, None) for at in result.estimates_at], outer, name)
                    for stat in STATISTICS]
        summary[name] = xr.Variable(["statistic", *per_stat[0][0]], np.stack([a for _, a in per_stat]),
                                    labels.attrs(name))
    status = np.asarray([str(s) for s in result.statuses], dtype=str)
    summary["status"] = xr.Variable(outer, status if curve else status.reshape(()))
    tree["summary"] = xr.Dataset(summary, coords={"statistic": list(STATISTICS), **along})
    for name in tree["posterior"].data_vars:
        tree["posterior"][name].attrs.update(labels.attrs(name))

    attrs = {k: result.get(k) for k in ("theory_name", "kind", "experiment_hash", "parameter", "values",
                                          "converged", "status", "provenance", "device")}
    if not curve:
        attrs.update({"parameter_value": result.get("parameter"), "sampler": result.get("sampler"),
                      "network": result.get("network"), "init": result.get("init")})
    for key, value in (request or {}).items():
        attrs["sampler_options" if key == "sampler" else "spec" if key == "model" else key] = value
    tree.attrs.update({k: _attr(v) for k, v in attrs.items() if v is not None})
    return tree


class ExperimentResult(Result):
    """A finished experiment: a :class:`~clients.result.Result` (it reads like its JSON, ``result["observables"]``),
    that knows how to fetch its draws.

    ``points`` lists the learning curve's points (one for a single experiment); :meth:`to_datatree` gives the whole
    experiment as one ArviZ ``DataTree``, :meth:`to_inference_data` one point's draws.
    """

    def __init__(self, data: Mapping[str, Any], job_id: str, fetch_draws: Callable[[int], Mapping[str, Any]],
                 request: Mapping[str, Any] | None = None,
                 quantities: Callable[[], Mapping[str, Mapping[str, Any]]] | None = None):
        super().__init__(dict(data))
        self.job_id = job_id
        self.request = dict(request or {})
        self._fetch = fetch_draws
        self._quantities = quantities

    def __repr__(self) -> str:
        return (f"ExperimentResult({self.job_id[:12]}…, {self.data.get('kind')}, status={self.data.get('status')!r}, "
                f"{len(self.points)} point(s))")

    def draws(self, point: int = 0) -> Mapping[str, Any]:
        """The per-draw series of one point (bounded and thinned by the server)."""
        return self._fetch(point)

    def to_inference_data(self, point: int = 0) -> Any:
        """ArviZ ``DataTree`` of one point's draws (posterior and sample_stats)."""
        return inference_data(self._fetch(point))

    def to_datatree(self) -> Any:
        """The whole experiment as one ArviZ ``DataTree``: every point's draws, the theory's values, the summary,
        and the spec, sampler options, parameter values and provenance as attributes."""
        quantities = self._quantities() if self._quantities is not None else None
        return to_datatree(self.data, [self._fetch(k) for k in range(len(self.points))], self.request, quantities)
