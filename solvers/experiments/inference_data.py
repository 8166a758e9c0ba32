"""ArviZ output of a run (an ``xarray.DataTree`` in ArviZ's layout): the per-draw estimates as the posterior group,
the sampler's statistics as sample_stats."""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.experiments.draws import Draws


def to_inference_data(draws: Draws, *, method: str | None = None) -> Any:
    """ArviZ ``DataTree`` (arviz-base) of a run's draws.

    ``posterior``: one variable per observable, and ``position`` when positions were kept. ``sample_stats``:
    ``lp``, ``acceptance_rate`` (adjusted methods), ``diverging`` (any divergence), ``n_steps`` (gradient
    evaluations) and ``nonfinite``, each over the ``thin`` steps behind a kept draw. Dimensions: ``chain``,
    ``draw`` (numbered from the run's first kept draw), ``<name>_dim_k`` for vector observables, ``parameter``.
    The sampler's name (``method``) is an attribute of the tree.
    """
    import arviz_base

    posterior: dict[str, np.ndarray] = dict(draws.estimates)
    dims: dict[str, list[str]] = {}
    if draws.positions is not None:
        if "position" in posterior:
            raise ValueError("an observable named 'position' clashes with the kept positions")
        posterior["position"] = draws.positions
        dims["position"] = ["parameter"]
    stats: dict[str, np.ndarray] = {
        "lp": draws.logdensity,
        "diverging": draws.divergences > 0,
        "n_steps": draws.gradient_evaluations,
        "nonfinite": draws.nonfinite,
    }
    if not np.all(np.isnan(draws.acceptance)):
        stats["acceptance_rate"] = draws.acceptance
    coords = {"chain": np.arange(draws.chains), "draw": np.arange(draws.start, draws.stop)}
    tree = arviz_base.from_dict({"posterior": posterior, "sample_stats": stats}, coords=coords, dims=dims)
    if method:
        tree.attrs["sampler"] = method
    return tree
