"""Problem-size limits: a spec larger than the instance allows is a 422 naming field and limit.

One check for every size-like quantity — a theory's (``Theory.sizes``), its finite network's
(``Theory.check_experiment``) and a sampler run's (``solvers.experiments.options.sampler_sizes``): each is
declared with a limit name and a default, and the instance's settings may override every limit by name.
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
    theory = get_theory(model.theory)  # type: ignore[attr-defined]
    check_limits(theory.sizes(model), theory.size_limits, settings, prefix)
