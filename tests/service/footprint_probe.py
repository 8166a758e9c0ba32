"""Run one point of an experiment on a Redis and measure what it stores and what assembling it holds; prints JSON.

``python -m tests.service.footprint_probe REDIS_URL REQUEST_JSON`` — run in a fresh process, so that the peak of
its resident memory (reset just before the assembly through ``/proc/self/clear_refs``) is the assembly's.
"""

from __future__ import annotations

import json
import sys

import redis

from service.cache import MemoryCache
from service.experiments.plan import plan
from service.experiments.redis_store import ExperimentKeys, RedisStore
from service.experiments.runner import assemble_point, run_chain
from service.experiments.schemas import ExperimentRequest
from service.settings import Settings
from service.singleflight import SingleFlight
from service.solving import SolveService


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def main(url: str, request: str) -> None:
    r = redis.Redis.from_url(url)
    settings = Settings(redis_url=None)
    payload = plan(ExperimentRequest.model_validate(json.loads(request)), settings)
    key, chains = payload["key"], payload["sampler"]["chains"]
    store = RedisStore(r, 3600)
    r.hset(ExperimentKeys(key).meta, mapping={"status": "running", "chains": chains})

    def used() -> int:  # Redis's own accounting of every key of the experiment
        return sum(r.memory_usage(k, samples=0) or 0 for k in r.scan_iter(f"saddlelab:experiment:{key}*"))

    for c in range(chains):
        run_chain(payload, 0, c, store)
    sampled = used()
    solver = SolveService(MemoryCache(8), SingleFlight(), settings)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak resident size starts again from here
    before = _status("VmRSS")
    assert assemble_point(payload, 0, store, solver)
    peak = _status("VmHWM") - before
    print(json.dumps({"sampled": sampled, "assembled": used(), "assembly_peak": peak}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
