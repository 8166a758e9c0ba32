"""Settings of a SaddleLab instance, read from the environment (12-factor style)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def _float(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def _limits() -> dict[str, float]:
    prefix = "SADDLELAB_LIMIT_"
    return {k[len(prefix):].lower(): float(v) for k, v in os.environ.items() if k.startswith(prefix)}


def limit_key(name: str) -> str:
    """How a limit name is matched: without regard to case, since an environment variable's name is written in
    capitals whatever the limit's spelling (``mean_field_P`` is ``SADDLELAB_LIMIT_MEAN_FIELD_P``)."""
    return name.lower()


def _list(name: str) -> tuple[str, ...]:
    raw = os.environ.get(name, "")
    return tuple(k.strip() for k in raw.split(",") if k.strip())


def _keys() -> tuple[str, ...]:
    return _list("SADDLELAB_API_KEYS")


@dataclass(frozen=True)
class Settings:
    """Every limit and switch of the service; each has an environment variable of the same name."""

    #: Redis URL; unset = embedded in-process cache and executor.
    redis_url: str | None = field(default_factory=lambda: os.environ.get("REDIS_URL") or None)
    #: Seconds a cached solve lives in Redis.
    cache_ttl: int = field(default_factory=lambda: _int("SADDLELAB_CACHE_TTL", 7 * 24 * 3600))
    #: Entries of the in-process LRU cache.
    memory_cache_size: int = field(default_factory=lambda: _int("SADDLELAB_MEMORY_CACHE_SIZE", 2048))
    #: Seconds job results (points, transitions) are kept.
    result_ttl: int = field(default_factory=lambda: _int("SADDLELAB_RESULT_TTL", 30 * 24 * 3600))
    #: Wall-clock limit of one job (RQ job timeout).
    job_timeout: int = field(default_factory=lambda: _int("SADDLELAB_JOB_TIMEOUT", 6 * 3600))
    #: Per-solve time limit in seconds (a solve past it returns converged: false).
    solve_time_limit: float = field(default_factory=lambda: _float("SADDLELAB_SOLVE_TIME_LIMIT", 120.0))
    #: Seconds past a solve's time limit after which its process is killed (the hard wall-clock limit).
    solve_kill_grace: float = field(default_factory=lambda: _float("SADDLELAB_SOLVE_KILL_GRACE", 5.0))
    #: Largest number of values in one sweep (per axis).
    max_sweep_points: int = field(default_factory=lambda: _int("SADDLELAB_MAX_SWEEP_POINTS", 2000))
    #: Largest number of grid cells in a two-parameter phase diagram.
    max_grid_points: int = field(default_factory=lambda: _int("SADDLELAB_MAX_GRID_POINTS", 40_000))
    #: Largest request body in bytes (413 beyond).
    max_body_bytes: int = field(default_factory=lambda: _int("SADDLELAB_MAX_BODY_BYTES", 8 * 1024 * 1024))
    #: Threads of the in-process executor used when there is no Redis.
    local_workers: int = field(default_factory=lambda: _int("SADDLELAB_LOCAL_WORKERS", 2))
    #: API keys (comma-separated); empty = open instance.
    api_keys: tuple[str, ...] = field(default_factory=_keys)
    #: Requests per minute per key (0 = unlimited).
    rate_limit_per_minute: int = field(default_factory=lambda: _int("SADDLELAB_RATE_LIMIT_PER_MINUTE", 600))
    #: Failed authentications per minute per client address before 429 (0 = unlimited).
    auth_failures_per_minute: int = field(default_factory=lambda: _int("SADDLELAB_AUTH_FAILURES_PER_MINUTE", 30))
    #: Instance secret for keyed hashes of API keys and addresses (HMAC). Unset: shared through Redis
    #: (created once), or random per process without Redis.
    secret: str | None = field(default_factory=lambda: os.environ.get("SADDLELAB_SECRET") or None)
    #: Addresses of reverse proxies whose X-Forwarded-For / X-Forwarded-Proto are trusted (default: none).
    trusted_proxies: tuple[str, ...] = field(default_factory=lambda: _list("SADDLELAB_TRUSTED_PROXIES"))
    #: API worker processes of ``python -m service``.
    api_workers: int = field(default_factory=lambda: _int("SADDLELAB_API_WORKERS", 1))
    #: Cold solves computed at once by one API process, each in its own killable process (0 = in-process).
    solve_processes: int = field(default_factory=lambda: _int("SADDLELAB_SOLVE_PROCESSES", 2))
    #: Largest memory of one solve or job line, in bytes: refused beforehand by the theory's estimate (422)
    #: and enforced on the process that computes it.
    max_solve_memory_bytes: int = field(
        default_factory=lambda: _int("SADDLELAB_MAX_SOLVE_MEMORY_BYTES", 4 * 1024**3)
    )
    #: Points per page of a job result (``GET /v1/jobs/{id}?offset=&limit=``).
    result_page_size: int = field(default_factory=lambda: _int("SADDLELAB_RESULT_PAGE_SIZE", 5000))
    #: Most traced curves (each at most 200 points) one result page carries.
    result_page_curves: int = field(default_factory=lambda: _int("SADDLELAB_RESULT_PAGE_CURVES", 100))
    #: Most bytes of point (or curve) text one result page carries (beyond its first point): a page ends at this
    #: or at result_page_size points, whichever comes first; ``page.next`` says where the next one starts.
    result_page_bytes: int = field(default_factory=lambda: _int("SADDLELAB_RESULT_PAGE_BYTES", 8 * 2**20))
    #: Concurrent unfinished jobs per key (0 = unlimited).
    max_jobs_per_key: int = field(default_factory=lambda: _int("SADDLELAB_MAX_JOBS_PER_KEY", 20))
    #: Status requests one key may hold at once with ``?wait=`` (0 = unlimited); past it, answered at once.
    max_waits_per_key: int = field(default_factory=lambda: _int("SADDLELAB_MAX_WAITS_PER_KEY", 10))
    #: Seconds between attempts to reach Redis again after an outage.
    redis_retry_seconds: float = field(default_factory=lambda: _float("SADDLELAB_REDIS_RETRY_SECONDS", 2.0))
    #: Seconds each chain of an experiment may sample per submission, warmup included (caps the sampler's
    #: time_limit; every compiled call is sized to end before it; not part of an experiment's key).
    experiment_time_limit: float = field(default_factory=lambda: _float("SADDLELAB_EXPERIMENT_TIME_LIMIT", 3600.0))
    #: Seconds past a chain's time limit after which a sampling call still running is abandoned (the hard bound).
    experiment_kill_grace: float = field(default_factory=lambda: _float("SADDLELAB_EXPERIMENT_KILL_GRACE", 5.0))
    #: Floating point of the samplers: "float64" (JAX's x64 mode, set per process) or "float32".
    experiment_precision: str = field(default_factory=lambda: os.environ.get("SADDLELAB_EXPERIMENT_PRECISION",
                                                                             "float64"))
    #: Directory of JAX's persistent compilation cache, shared by the processes that sample (every RQ work horse
    #: compiles its chain's sampler; from the cache it loads it instead). Empty: no cache.
    jax_cache_dir: str = field(default_factory=lambda: os.environ.get(
        "SADDLELAB_JAX_CACHE_DIR", os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                                                "saddlelab", "jax")))
    #: Per-draw series served by ``GET /v1/experiments/{id}/draws``: at most this many draws per chain (thinned) …
    experiment_series_draws: int = field(default_factory=lambda: _int("SADDLELAB_EXPERIMENT_SERIES_DRAWS", 1000))
    #: … and at most this many components of a vector observable (its first ones).
    experiment_series_components: int = field(
        default_factory=lambda: _int("SADDLELAB_EXPERIMENT_SERIES_COMPONENTS", 64)
    )
    #: Seconds a job's write is retried (with bounded backoff) while Redis is unreachable or full, before
    #: the line gives up (a full Redis: the job is then failed, its points freed so the failure can be written).
    redis_outage_seconds: float = field(default_factory=lambda: _float("SADDLELAB_REDIS_OUTAGE_SECONDS", 300.0))
    #: Problem-size limits overriding the theories' defaults, by limit name
    #: (``SADDLELAB_LIMIT_<NAME>=value``, e.g. ``SADDLELAB_LIMIT_KERNEL_P=3000``); names match without regard to case.
    limits: dict[str, float] = field(default_factory=_limits)
    #: Host and port of ``python -m service``.
    host: str = field(default_factory=lambda: os.environ.get("SADDLELAB_HOST", "127.0.0.1"))
    port: int = field(default_factory=lambda: _int("SADDLELAB_PORT", 8000))

    def limit(self, name: str, default: float) -> float:
        wanted = limit_key(name)
        for key, value in self.limits.items():
            if limit_key(key) == wanted:
                return float(value)
        return float(default)


def get_settings() -> Settings:
    return Settings()
