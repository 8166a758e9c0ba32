"""Cached, deduplicated solves, each cold solve in a killable process; only a complete answer is cached.

A request is answered from the cache when it can be (on the event loop's worker threads, never
waiting for a computation). A cold solve:

1. joins an identical solve already running in this process, if any (one computation, every
   requester gets its answer);
2. takes the cross-process lock of its key (several API processes on one Redis), re-reading the
   cache when another process held it;
3. waits for one of ``solve_processes`` slots without holding a thread, then runs in a child
   process (:mod:`service.isolation`) with the instance's memory cap and a hard wall-clock limit of
   its time limit plus ``solve_kill_grace``. A killed solve answers ``converged: false``, status
   ``time_limit``, ``complete: false``; like every incomplete catalogue it is never cached.

With ``solve_processes = 0`` the solve runs in a thread of the API process (the time limit is then
only the engine's cooperative one).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio import to_thread
from pydantic import BaseModel, ValidationError

from service.cache import Cache
from service.describe import result_quantities
from service.isolation import ChildDied, ChildFailed, ChildKilled, ChildOutOfMemory, run_child
from service.keys import spec_hash
from service.provenance import ensure_source_unchanged, provenance, seeds_in
from service.result_schemas import SolveResponse
from service.serialize import catalogue_from_solution, solution_json
from service.settings import Settings
from service.singleflight import SingleFlight
from solvers.core.options import SolverOptions
from solvers.core.results import Catalogue, Notes
from solvers.theories import get as get_theory

log = logging.getLogger("saddlelab.solve")


class SolveRefused(Exception):
    """The solve cannot be answered by this instance (its process ran out of memory, or died): HTTP ``status``."""

    def __init__(self, status: int, message: str, loc: tuple[str | int, ...] = ("model",)):
        self.status = status
        self.loc = loc
        super().__init__(message)


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


def answer(model: BaseModel, options: SolverOptions, settings: Settings) -> tuple[dict[str, Any], bool]:
    """(response body without ``spec_hash``/``cached``, whether it may be cached)."""
    cat = compute(model, options, settings)
    return solution_json(model.theory, cat), cat.cacheable  # type: ignore[attr-defined]


def stamped(body: dict[str, Any], key: str, model: BaseModel) -> dict[str, Any]:
    """A solve's body with its key, the validated model (every default filled in), the table entries of its
    quantities and its provenance (this process computed it)."""
    spec = model.model_dump(mode="json")
    described = result_quantities(spec["theory"], [body], model=spec)
    return {**body, "spec_hash": key, "model": spec, "quantities": described,
            "provenance": provenance(key, seeds_in(spec, "model"))}


def _answer_in_child(send: Any, model: BaseModel, options: SolverOptions, settings: Settings) -> tuple[Any, bool]:
    return answer(model, options, settings)


def stopped_answer(model: BaseModel, seconds: float, limit: float) -> dict[str, Any]:
    """The answer of a solve killed at its hard limit: no branch, ``time_limit``, incomplete (never cached)."""
    cat = Catalogue(parameter=0.0, branches=(), equilibrium=None, seconds=seconds, complete=False,
                    notes=Notes(diagnostics={"stopped": f"the solve was still running {limit:g} s after it "
                                                        f"started (its time limit plus solve_kill_grace) and its "
                                                        f"process was killed"}))
    return solution_json(model.theory, cat)  # type: ignore[attr-defined]


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


@dataclass
class _LoopState:
    """What concurrent requests of one event loop share: the slots and the solves in flight."""

    slots: anyio.CapacityLimiter
    inflight: dict[str, asyncio.Task[tuple[dict[str, Any], bool, bool]]] = field(default_factory=dict)


class SolveService:
    def __init__(self, cache: Cache, flight: SingleFlight, settings: Settings):
        self.cache = cache
        self.flight = flight
        self.settings = settings
        #: Cold computations started by this service (a statistic: identical concurrent requests count once).
        self.computations = 0
        self._count_lock = threading.Lock()
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = weakref.WeakKeyDictionary()

    # ---- the cache ----------------------------------------------------------------------------
    def lookup(self, key: str) -> dict[str, Any] | None:
        # Neither served nor computed under this process's fingerprint once its source changed on disk.
        ensure_source_unchanged()
        hit = self.cache.get(key)
        if hit is None:
            return None
        if not valid_entry(key, hit):
            log.warning("discarding corrupted cache entry %s", key)
            self.cache.delete(key)
            return None
        return hit

    # ---- computing ------------------------------------------------------------------------------
    def _hard_limit_for(self, options: SolverOptions) -> float | None:
        limit = effective_options(options, self.settings).time_limit
        return limit + self.settings.solve_kill_grace if limit else None

    def compute_answer(self, key: str, model: BaseModel, options: SolverOptions) -> tuple[dict[str, Any], bool]:
        """(body with ``spec_hash`` and ``provenance``, cacheable), computed in a child process (or in this thread
        without slots)."""
        with self._count_lock:
            self.computations += 1
        theory = model.theory  # type: ignore[attr-defined]
        if self.settings.solve_processes <= 0:
            try:
                body, cacheable = answer(model, options, self.settings)
            except Exception:
                log.exception("solve of spec %s (theory %s) raised", key, theory)
                raise
            ensure_source_unchanged()
            return stamped(body, key, model), cacheable
        limit = self._hard_limit_for(options)
        memory = self.settings.max_solve_memory_bytes or None
        try:
            body, cacheable = run_child(_answer_in_child, (model, options, self.settings), seconds=limit,
                                        memory_bytes=memory)
        except ChildKilled as exc:
            log.warning("solve of spec %s (theory %s) killed at its hard limit of %.1f s", key, theory, exc.seconds)
            return stamped(stopped_answer(model, exc.seconds, limit or exc.seconds), key, model), False
        except ChildOutOfMemory as exc:
            raise SolveRefused(422, f"the solve needed more memory than the limit max_solve_memory_bytes="
                                    f"{self.settings.max_solve_memory_bytes} of this instance ({exc})") from None
        except ChildDied as exc:
            log.error("solve of spec %s (theory %s): %s", key, theory, exc)
            raise SolveRefused(503, f"the solve's process died ({exc}); try again") from None
        except ChildFailed as exc:
            log.error("solve of spec %s (theory %s) raised %s\n%s", key, theory, exc, exc.remote_traceback)
            raise
        # A module the solve imported on its way may have changed since the process started.
        ensure_source_unchanged()
        return stamped(body, key, model), cacheable

    # ---- one request ------------------------------------------------------------------------------
    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None:
            state = self._loops[loop] = _LoopState(anyio.CapacityLimiter(max(1, self.settings.solve_processes)))
        return state

    async def solve(self, model: BaseModel, options: SolverOptions | None) -> dict[str, Any]:
        options = options or SolverOptions()
        key = await to_thread.run_sync(spec_hash, model, options)
        hit = await to_thread.run_sync(self.lookup, key)
        if hit is not None:
            return {**hit, "cached": True}
        state = self._state()
        task = state.inflight.get(key)
        joined = task is not None
        if task is None:
            task = asyncio.get_running_loop().create_task(self._cold(state, key, model, options))
            state.inflight[key] = task
            task.add_done_callback(lambda _: state.inflight.pop(key, None))
        # Shielded: a requester that goes away does not cancel the computation the others wait for.
        result, computed_here, stored = await asyncio.shield(task)
        cached = (stored or not computed_here) if joined else not computed_here
        return {**result, "cached": cached}

    async def _cold(self, state: _LoopState, key: str, model: BaseModel,
                    options: SolverOptions) -> tuple[dict[str, Any], bool, bool]:
        """(body, computed by this call, stored in the cache)."""
        token = await self._lock(key)
        try:
            if token is not None:  # another process may have computed it while we waited for its lock
                hit = await to_thread.run_sync(self.lookup, key)
                if hit is not None:
                    return hit, False, True
            result, cacheable = await to_thread.run_sync(self.compute_answer, key, model, options,
                                                         limiter=state.slots)
            # A catalogue cut short (time limit) or with a failed evaluation is the circumstances' answer,
            # not the equations': it is returned, never cached. A cache that refuses the write is logged.
            stored = bool(cacheable) and await to_thread.run_sync(self.cache.set, key, result)
            return result, True, stored
        finally:
            if token is not None:
                await to_thread.run_sync(self.flight.release, key, token)

    async def _lock(self, key: str) -> str | None:
        """The cross-process lock of ``key`` (None without Redis, or when it is unreachable or full)."""
        deadline = time.monotonic() + self.flight.lock_ttl
        while time.monotonic() < deadline:
            token, held_elsewhere = await to_thread.run_sync(self.flight.try_acquire, key)
            if token is not None or not held_elsewhere:
                return token
            await asyncio.sleep(0.05)
        return None

    # ---- beside an experiment -----------------------------------------------------------------------
    def catalogue(self, model: BaseModel, options: SolverOptions | None) -> tuple[dict[str, Any], Catalogue]:
        """The solve's response body and the typed catalogue behind it, synchronously, for an experiment's chain
        that assembles its point (already on a worker: the solve runs in this thread, under the engine's own
        time limit). From the cache when it can be (the catalogue rebuilt from the body); a complete answer is
        cached. Concurrent identical calls may each compute it (an experiment assembles each point once)."""
        options = options or SolverOptions()
        key = spec_hash(model, options)
        hit = self.lookup(key)
        if hit is not None:
            return {**hit, "cached": True}, catalogue_from_solution(hit)
        try:
            cat = compute(model, options, self.settings)
        except Exception:
            log.exception("solve of spec %s (theory %s) raised", key, model.theory)  # type: ignore[attr-defined]
            raise
        result = stamped(solution_json(model.theory, cat), key, model)  # type: ignore[attr-defined]
        if cat.cacheable:
            self.cache.set(key, result)
        return {**result, "cached": False}, cat
