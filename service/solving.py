"""Cached, deduplicated solves."""

from __future__ import annotations

import logging
import time
from typing import Any

from pydantic import BaseModel, ValidationError

from service.cache import Cache
from service.keys import spec_hash
from service.schemas import SolveResponse
from service.settings import Settings
from service.singleflight import SingleFlight
from solvers.core.jsonsafe import json_safe
from solvers.core.options import SolverOptions
from solvers.theories import get as get_theory

log = logging.getLogger("saddlelab.solve")

#: Outcomes that depend on the machine's load, not on the spec: never cached.
UNCACHEABLE = {"time_limit", "error"}


def effective_options(options: SolverOptions, settings: Settings) -> SolverOptions:
    """The instance's per-solve time limit caps the user's; it is not part of the key."""
    limit = settings.solve_time_limit
    if limit and (options.time_limit is None or options.time_limit > limit):
        return options.model_copy(update={"time_limit": limit})
    return options


def compute(model: BaseModel, options: SolverOptions, settings: Settings) -> dict[str, Any]:
    """Solve one spec; a failure inside a theory becomes ``converged: false`` with the reason."""
    theory = get_theory(model.theory)  # type: ignore[attr-defined]
    start = time.perf_counter()
    try:
        return theory.solve(model, effective_options(options, settings))
    except Exception as exc:
        log.exception("solve failed for theory %s", model.theory)  # type: ignore[attr-defined]
        return json_safe({
            "theory": theory.name,
            "converged": False,
            "order_parameters": {},
            "observables": {},
            "branches": [],
            "equilibrium": None,
            "diagnostics": {
                "residual": None,
                "iterations": 0,
                "method": options.method,
                "seconds": time.perf_counter() - start,
                "status": "error",
                "message": f"{type(exc).__name__}: {exc}",
            },
        })


def valid_entry(key: str, value: dict[str, Any]) -> bool:
    """A cached value is served only if it is a complete response for this very key."""
    if value.get("spec_hash") != key:
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
            result = compute(model, options, self.settings)
            result["spec_hash"] = key
            if result.get("diagnostics", {}).get("status") not in UNCACHEABLE:
                self.cache.set(key, result)
        return {**result, "cached": False}
