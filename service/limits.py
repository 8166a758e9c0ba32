"""Problem-size and memory limits: a spec larger than the instance allows is a 422 naming field and limit."""

from __future__ import annotations

from pydantic import BaseModel

from service.errors import field_error
from service.settings import Settings
from solvers.theories import get as get_theory


def check_sizes(model: BaseModel, settings: Settings, prefix: tuple[str | int, ...] = ("model",)) -> None:
    """The theory's declared sizes against the instance's limits, then its memory estimate against
    ``max_solve_memory_bytes`` — before anything is allocated."""
    theory = get_theory(model.theory)  # type: ignore[attr-defined]
    for name, (loc, value) in theory.sizes(model).items():
        limit = settings.limit(name, theory.size_limits.get(name, float("inf")))
        if value > limit:
            raise field_error(
                [*prefix, *loc], f"{value:g} exceeds the limit {name}={limit:g} of this instance", value=value
            )
    cap = settings.max_solve_memory_bytes
    if cap and cap > 0:
        need = int(theory.memory_bytes(model))
        if need > cap:
            raise field_error(
                [*prefix, *theory.memory_fields(model)],
                f"solving this spec needs about {need / 2**20:,.0f} MiB (the theory's estimate), above the limit "
                f"max_solve_memory_bytes={cap} ({cap / 2**20:,.0f} MiB) of this instance",
            )
