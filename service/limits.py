"""Problem-size limits: a spec larger than the instance allows is a 422 naming field and limit."""

from __future__ import annotations

from pydantic import BaseModel

from service.errors import field_error
from service.settings import Settings
from solvers.theories import get as get_theory


def check_sizes(model: BaseModel, settings: Settings, prefix: tuple[str | int, ...] = ("model",)) -> None:
    theory = get_theory(model.theory)  # type: ignore[attr-defined]
    for name, (loc, value) in theory.sizes(model).items():
        limit = settings.limit(name, theory.size_limits.get(name, float("inf")))
        if value > limit:
            raise field_error(
                [*prefix, *loc], f"{value:g} exceeds the limit {name}={limit:g} of this instance", value=value
            )
