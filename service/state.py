"""The objects one running instance shares between requests, built from its settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.cache import Cache, MemoryCache, RedisCache
from service.jobs.local import LocalJobs
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

    @classmethod
    def build(cls, settings: Settings) -> AppState:
        link = RedisLink(settings.redis_url, settings.redis_retry_seconds) if settings.redis_url else None
        secret = InstanceSecret(settings.secret, link)
        cache: Cache = RedisCache(link, settings.cache_ttl) if link else MemoryCache(settings.memory_cache_size)
        solver = SolveService(cache, SingleFlight(link), settings)
        jobs: Any
        if link is not None:
            from service.jobs.rq_backend import RQJobs  # imported lazily: the embedded default needs no RQ

            jobs = RQJobs(link, settings, secret)
        else:
            jobs = LocalJobs(settings.local_workers, secret, settings)
        return cls(settings, link, cache, solver, jobs, secret, RedisHealth(link) if link else None)

    def close(self) -> None:
        self.jobs.shutdown()
        if self.health is not None:
            self.health.close()
