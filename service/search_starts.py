"""Refusing a search restricted to start names the theory does not have, before anything is computed."""

from __future__ import annotations

from pydantic import BaseModel

from service.errors import field_error
from solvers.core.options import SolverOptions
from solvers.theories import get as get_theory


def check_starts(model: BaseModel, options: SolverOptions | None) -> None:
    """A 422 at ``solver.search.starts[i]`` for the first name that is not one of the theory's starts, listing
    them (a theory that declares none is not checked: its unknown names are reported in the result's search)."""
    wanted = None if options is None else options.search.starts
    if not wanted:
        return
    theory = get_theory(model.theory)  # type: ignore[attr-defined]
    valid = theory.start_names_for(model)
    if not valid:
        return
    for i, name in enumerate(wanted):
        if name not in valid:
            raise field_error(["solver", "search", "starts", i],
                              f"unknown start {name!r}: the starts of {theory.name} are {list(valid)}", value=name)
