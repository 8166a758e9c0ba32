"""An experiment's result on the client side: the JSON, its points, and ArviZ output from its per-draw series.

The result JSON carries the estimates and diagnostics; the per-draw series (every estimator of every chain,
thinned to a bounded number of draws, vector estimators to their first components) are fetched on demand from
``GET /v1/experiments/{id}/draws?point=k``, so results stay small. :func:`inference_data` converts such a
series into ``arviz.InferenceData`` (ArviZ and NumPy are imported only then).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any


def points_of(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The points of a learning curve, or the single experiment as one point."""
    points = result.get("points")
    return list(points) if points is not None else [result]


def inference_data(series: Mapping[str, Any]) -> Any:
    """``arviz.InferenceData`` of one point's per-draw series (as served by the draws endpoint).

    ``posterior``: one variable per estimator, dimensions ``chain``, ``draw`` (the kept draws' indices after
    warmup, every ``thin``-th) and ``<name>_dim_k``; ``sample_stats``: ``lp``, ``diverging``, ``n_steps``,
    ``nonfinite`` and, for the adjusted samplers, ``acceptance_rate``. Undefined values (null) are NaN.
    """
    import arviz as az
    import numpy as np

    def array(values: Any, dtype: Any = float) -> Any:
        a = np.array(values, dtype=object)
        if dtype is float:
            return np.where(a == None, np.nan, a).astype(float)  # noqa: E711 - elementwise test for JSON null
        return a.astype(dtype)

    posterior = {name: array(v) for name, v in series["posterior"].items()}
    stats = {"lp": array(series["sample_stats"]["lp"]), "diverging": array(series["sample_stats"]["diverging"], bool),
             "n_steps": array(series["sample_stats"]["n_steps"], int),
             "nonfinite": array(series["sample_stats"]["nonfinite"], int)}
    if "acceptance_rate" in series["sample_stats"]:
        stats["acceptance_rate"] = array(series["sample_stats"]["acceptance_rate"])
    coords = {"chain": np.arange(int(series["chains"])), "draw": np.asarray(series["draw"], dtype=int)}
    attrs = {"thin": series["thin"], "draws": series["draws"], "point": series["point"],
             "parameter": series["parameter"]}
    return az.from_dict(posterior=posterior, sample_stats=stats, coords=coords, attrs=attrs)


class ExperimentResult(Mapping[str, Any]):
    """A finished experiment: reads like its JSON (``result["observables"]``), and knows how to fetch its draws.

    ``points`` lists the learning curve's points (one for a single experiment); :meth:`to_inference_data`
    gives a point's ArviZ ``InferenceData``.
    """

    def __init__(self, data: Mapping[str, Any], job_id: str, fetch_draws: Callable[[int], Mapping[str, Any]]):
        self.data = dict(data)
        self.job_id = job_id
        self._fetch = fetch_draws

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return (f"ExperimentResult({self.job_id[:12]}…, {self.data.get('kind')}, status={self.data.get('status')!r}, "
                f"{len(self.points)} point(s))")

    @property
    def points(self) -> list[Mapping[str, Any]]:
        return points_of(self.data)

    def draws(self, point: int = 0) -> Mapping[str, Any]:
        """The per-draw series of one point (bounded and thinned by the server)."""
        return self._fetch(point)

    def to_inference_data(self, point: int = 0) -> Any:
        """ArviZ ``InferenceData`` of one point's draws."""
        return inference_data(self._fetch(point))
