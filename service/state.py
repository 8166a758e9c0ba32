"""The objects one running instance shares between requests, built from its settings."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from service.cache import Cache, MemoryCache, RedisCache
from service.experiments.local_kind import LocalChains
from service.jobs.local_kind import LocalLines
from service.kernel.local import LocalBackend
from service.kernel.waiting import HeldRequests
from service.redis_health import RedisHealth
from service.redis_link import RedisLink
from service.secrets import InstanceSecret
from service.settings import Settings
from service.singleflight import SingleFlight
from service.solving import SolveService


@dataclass
class AppState:
    settings: Settings
    link: RedisLink | None
    cache: Cache
    solver: SolveService
    jobs: Any
    secret: InstanceSecret
    health: RedisHealth | None = None
    experiments: Any = None
    held: HeldRequests = field(default_factory=lambda: HeldRequests(0))
    #: Job status bodies built at once (:func:`service.routers.jobs.job`). Building one is work under the GIL
    #: (a page is megabytes of text, spliced and validated): more at once would not finish sooner, would hold
    #: more pages in memory, and would starve the event loop (``/healthz`` waited seconds behind 20 of them).
    status_builds: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(2))

    @classmethod
    def build(cls, settings: Settings) -> AppState:
        link = RedisLink(settings.redis_url, settings.redis_retry_seconds) if settings.redis_url else None
        secret = InstanceSecret(settings.secret, link)
        cache: Cache = RedisCache(link, settings.cache_ttl) if link else MemoryCache(settings.memory_cache_size)
        solver = SolveService(cache, SingleFlight(link), settings)
        jobs: Any
        experiments: Any
        if link is not None:
            from service.experiments.rq_kind import EXPERIMENT_CHAINS  # lazily: the embedded default needs no RQ
            from service.jobs.rq_kind import SWEEP_LINES
            from service.kernel.rq_backend import RQBackend

            jobs = RQBackend(SWEEP_LINES, link, settings, secret)
            experiments = RQBackend(EXPERIMENT_CHAINS, link, settings, secret)
        else:
            jobs = LocalBackend(LocalLines(settings), settings.local_workers, secret, settings)
            experiments = LocalBackend(LocalChains(solver), settings.local_workers, secret, settings)
        return cls(settings, link, cache, solver, jobs, secret, RedisHealth(link) if link else None, experiments,
                   HeldRequests(settings.max_waits_per_key))

    def close(self) -> None:
        for backend in (self.jobs, self.experiments):
            if backend is not None:
                backend.shutdown()
        if self.health is not None:
            self.health.close()
