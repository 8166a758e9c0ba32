"""Experiment chains as a kind of job on RQ: every chain of every point is one unit (``"<point>:<chain>"``).

A chain stores its checkpoint and the block just drawn after every block (:mod:`.redis_store`); a chain whose
worker dies is resumed by another after the last stored block. The execution that completes a point's last chain
assembles the point (solving the same spec through the cached solve path in Redis), and the one that assembles
the last point stores the result. A failed, cancelled or time-limited experiment submitted again resumes every
chain where it stopped. Everything else — ownership, queueing, cancellation, hand-back, hard clocks — is the
kernel's (:mod:`service.kernel.rq_backend`).
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable
from typing import Any

import redis

from service.cache import RedisCache
from service.experiments.redis_store import ExperimentKeys, RedisStore
from service.experiments.runner import assemble_point, finalize, n_chains, n_points, run_chain
from service.experiments.units import ChainUnits, experiment_kind, point_chain, unit_of
from service.kernel.kind import Pages
from service.kernel.ownership import HoldingKeys
from service.kernel.unit_task import run_task
from service.redis_link import RedisLink
from service.settings import get_settings
from service.singleflight import SingleFlight
from service.solving import SolveService


def _solver(client: redis.Redis, payload: dict[str, Any]) -> SolveService:
    """The API's cached solve path, on the worker's Redis, with the per-solve cap that travelled with the job."""
    settings = dataclasses.replace(get_settings(), solve_time_limit=float(payload["solve_time_limit"]))
    link = RedisLink(None, client=client)
    return SolveService(RedisCache(link, settings.cache_ttl), SingleFlight(link), settings)


class ExperimentChains(ChainUnits):
    """The :class:`~service.kernel.kind.RedisKind` of experiments and learning curves."""

    name, task = "experiment", "service.experiments.rq_kind.run_chain_job"
    holdings = HoldingKeys("saddlelab:experiment-job", "experiment-jobs")
    store = RedisStore
    # A chain's writes are not retried across an outage: RQ runs it again, from its last stored block.
    rides_outages = shows_queue_position = False

    @staticmethod
    def record_fields(payload: dict[str, Any]) -> dict[str, Any]:
        points, chains = n_points(payload), n_chains(payload)
        return {"kind": experiment_kind(payload), "points": points, "chains": chains,
                "total": points * chains * int(payload["sampler"]["draws"]),
                "run": uuid.uuid4().hex}  # this submission: its chains' time limits count from it

    @staticmethod
    def stale(key: str) -> tuple[str, ...]:
        return (ExperimentKeys(key).result,)

    @staticmethod
    def reusable(store: RedisStore, key: str) -> bool:
        return bool(store.r.exists(ExperimentKeys(key).result)) and store.complete(key)

    @staticmethod
    def plan(store: RedisStore, key: str, payload: dict[str, Any]) -> list[str]:
        # Points stopped by their time limit are reopened: their chains resume from their checkpoints.
        points, chains = n_points(payload), n_chains(payload)
        assembled = store.reopen(key, points)
        units = []
        for p in range(points):
            if p in assembled:
                continue
            finished = store.chains_done(key, p)
            # a point whose chains all finished but which was not assembled: one unit assembles it
            units += [unit_of(p, c) for c in [c for c in range(chains) if c not in finished] or [0]]
        return units

    @staticmethod
    def pending(store: RedisStore, key: str, meta: dict[str, str]) -> list[str]:
        assembled = store.points_done(key)
        return [unit_of(p, c) for p in range(int(meta["points"])) if p not in assembled
                for c in range(int(meta["chains"])) if c not in store.chains_done(key, p)]

    @staticmethod
    def assemble(store: RedisStore, key: str, payload: dict[str, Any]) -> None:
        finalize(payload, store)

    @staticmethod
    def describe(store: RedisStore, key: str, meta: dict[str, str], status: str, detail: bool,
                 pages: Pages) -> dict[str, Any]:
        points, chains, total = int(meta["points"]), int(meta["chains"]), int(meta["total"])
        out: dict[str, Any] = {"kind": meta.get("kind"), "experiment_hash": key}
        if status == "finished":
            raw = store.result_text(key)
            if raw is None:  # the result expired before the record did
                out.update(status="failed", error="the result has expired (result_ttl); submit the experiment again")
                done = 0
            else:
                out["result"] = json.loads(raw)
                done = total
        else:
            done = min(total, store.progress(key, points, chains))
        out["progress"] = {"done": done, "total": total}
        out["chains"] = {"done": sum(len(store.chains_done(key, p)) for p in range(points)), "total": points * chains}
        out["points"] = {"done": len(store.points_done(key)), "total": points}
        return out

    @staticmethod
    def run(store: RedisStore, client: Any, key: str, unit: str, payload: dict[str, Any], meta: dict[str, str],
            should_stop: Callable[[], bool], who: dict[str, Any]) -> dict[str, Any]:
        """Run (or finish) one chain; every block is stored as soon as it exists."""
        point, chain = point_chain(unit)
        started = store.mark_started(key)
        out = run_chain(payload, point, chain, store, run=meta.get("run", ""), should_stop=should_stop, who=who)
        if assemble_point(payload, point, store, _solver(client, payload)):
            finalize(payload, store, started)
        return out

    @staticmethod
    def handed_back(store: RedisStore, key: str, unit: str) -> dict[str, Any]:
        return {}

    @staticmethod
    def on_full(store: RedisStore, key: str, unit: str, meta: dict[str, str]) -> None:
        return None


EXPERIMENT_CHAINS = ExperimentChains()


def run_chain_job(key: str, unit: str) -> dict[str, Any]:
    """The RQ task of one chain: run (or finish) it, storing every block as it exists."""
    return run_task(EXPERIMENT_CHAINS, key, unit)
