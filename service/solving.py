"""Cached, deduplicated solves: only a complete answer is cached."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, ValidationError

from service.cache import Cache
from service.keys import spec_hash
from service.schemas import SolveResponse
from service.serialize import solution_json
from service.settings import Settings
from service.singleflight import SingleFlight
from solvers.core.options import SolverOptions
from solvers.core.results import Catalogue
from solvers.theories import get as get_theory

log = logging.getLogger("saddlelab.solve")


def effective_options(options: SolverOptions, settings: Settings) -> SolverOptions:
    """The instance's per-solve time limit caps the user's; it is not part of the key."""
    limit = settings.solve_time_limit
    if limit and (options.time_limit is None or options.time_limit > limit):
        return options.model_copy(update={"time_limit": limit})
    return options


def compute(model: BaseModel, options: SolverOptions, settings: Settings) -> Catalogue:
    """Solve one spec. Non-convergence is in the catalogue; an exception here is a bug and propagates."""
    theory = get_theory(model.theory)  # type: ignore[attr-defined]
    return theory.solve(model, effective_options(options, settings))


def valid_entry(key: str, value: dict[str, Any]) -> bool:
    """A cached value is served only if it is a complete response for this very key."""
    if value.get("spec_hash") != key:
        return False
    if value.get("diagnostics", {}).get("complete") is False:
        return False
    try:
        SolveResponse.model_validate({**value, "cached": True})
    except ValidationError:
        return False
    return True


class SolveService:
    def __init__(self, cache: Cache, flight: SingleFlight, settings: Settings):
        self.cache = cache
        self.flight = flight
        self.settings = settings

    def lookup(self, key: str) -> dict[str, Any] | None:
        hit = self.cache.get(key)
        if hit is None:
            return None
        if not valid_entry(key, hit):
            log.warning("discarding corrupted cache entry %s", key)
            self.cache.delete(key)
            return None
        return hit

    def solve(self, model: BaseModel, options: SolverOptions | None) -> dict[str, Any]:
        options = options or SolverOptions()
        key = spec_hash(model, options)
        hit = self.lookup(key)
        if hit is not None:
            return {**hit, "cached": True}
        with self.flight.hold(key):
            hit = self.lookup(key)  # computed by whoever held the key before us
            if hit is not None:
                return {**hit, "cached": True}
            try:
                cat = compute(model, options, self.settings)
            except Exception:
                log.exception("solve of spec %s (theory %s) raised", key, model.theory)  # type: ignore[attr-defined]
                raise
            result = {**solution_json(model.theory, cat), "spec_hash": key}  # type: ignore[attr-defined]
            # A catalogue cut short (time limit) or with a failed evaluation is the circumstances' answer,
            # not the equations': it is returned, never cached.
            if cat.cacheable:
                self.cache.set(key, result)
        return {**result, "cached": False}
