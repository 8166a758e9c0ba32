"""Problem-size and memory limits: a spec larger than the instance allows is a 422 naming field and limit.

One check for every size-like quantity — a theory's (``Theory.sizes``), its finite network's
(``Theory.check_experiment``) and a sampler run's (``solvers.experiments.options.sampler_sizes``): each is
declared with a limit name and a default, and the instance's settings may override every limit by name. A
solve's memory estimate is checked against ``max_solve_memory_bytes`` as well.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel

from service.errors import field_error
from service.settings import Settings
from solvers.theories import get as get_theory
from solvers.theories.base import Sizes


def check_limits(
    sizes: Sizes, defaults: Mapping[str, float], settings: Settings, prefix: tuple[str | int, ...] = ()
) -> None:
    """Refuse the first quantity above its limit (the instance's, else the declared default)."""
    for name, (loc, value) in sizes.items():
        limit = settings.limit(name, defaults.get(name, float("inf")))
        if value > limit:
            raise field_error(
                [*prefix, *loc], f"{value:g} exceeds the limit {name}={limit:g} of this instance", value=value
            )


def check_sizes(model: BaseModel, settings: Settings, prefix: tuple[str | int, ...] = ("model",)) -> None:
    """The theory's declared sizes against the instance's limits, then its memory estimate against
    ``max_solve_memory_bytes`` — before anything is allocated."""
    theory = get_theory(model.theory)  # type: ignore[attr-defined]
    check_limits(theory.sizes(model), theory.size_limits, settings, prefix)
    cap = settings.max_solve_memory_bytes
    if cap and cap > 0:
        need = int(theory.memory_bytes(model))
        if need > cap:
            raise field_error(
                [*prefix, *theory.memory_fields(model)],
                f"solving this spec needs about {need / 2**20:,.0f} MiB (the theory's estimate), above the limit "
                f"max_solve_memory_bytes={cap} ({cap / 2**20:,.0f} MiB) of this instance",
            )
