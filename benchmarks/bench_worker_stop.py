"""How long real workers take to stop and restart, signalled the way ``docker compose`` signals containers.

- ``restart``: SIGTERM to every idle worker at once, wait for each to exit, start as many again, wait until
  they are registered (``docker compose restart worker`` less the container's own start);
- ``stop idle``: SIGTERM to idle workers, until each exited;
- ``stop with Redis``: SIGTERM to Redis and the idle workers at the same moment (``docker compose stop``);
- ``stop busy``: SIGTERM to a worker computing a sweep, until it handed its line back and exited;
- ``--check``: one run of the container healthcheck (``python -m service.worker --check``).

Goals: every stop well within the compose file's 3-minute grace period — 10 s (the grace period was what
every stop took before an idle worker obeyed SIGTERM).

``python -m benchmarks.bench_worker_stop [--workers N]``
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))

import redis  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from benchmarks.bench_phase_diagram import start_redis, start_workers  # noqa: E402
from benchmarks.common import Ratio, print_table  # noqa: E402
from service.app import create_app  # noqa: E402
from service.settings import Settings  # noqa: E402

GOAL = 10.0


def _stop(procs: list[subprocess.Popen], *also: subprocess.Popen) -> float:
    """SIGTERM to ``procs`` (and ``also``) at once; seconds until every one of ``procs`` exited (status 0)."""
    t0 = time.perf_counter()
    for p in (*also, *procs):
        p.send_signal(signal.SIGTERM)
    for p in procs:
        code = p.wait(300)
        if code != 0:
            raise RuntimeError(f"a worker exited with status {code}")
    return time.perf_counter() - t0


def _check(url: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "service.worker", "--check", "--url", url], cwd=ROOT, check=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    return time.perf_counter() - t0


def _busy_stop(url: str) -> float:
    (worker,) = start_workers(url, 1)
    with TestClient(create_app(Settings(redis_url=url, api_keys=(), rate_limit_per_minute=0))) as api:
        body = {"model": {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3,
                          "u": 20, "D": 150}, "parameter": "u", "values": {"start": 20, "stop": 40, "num": 2000}}
        job = api.post("/v1/sweeps", json=body).json()["job_id"]
        while api.get(f"/v1/jobs/{job}").json()["progress"]["done"] < 30:
            time.sleep(0.05)
        return _stop([worker])


def measure(workers: int = 2) -> list[Ratio]:
    server, url = start_redis()
    try:
        procs = start_workers(url, workers)
        check = _check(url)
        t0 = time.perf_counter()
        stopped = _stop(procs)
        procs = start_workers(url, workers)
        restart = time.perf_counter() - t0
        stop_idle = _stop(procs)
        redis.Redis.from_url(url).flushall()
        busy = _busy_stop(url)
        redis.Redis.from_url(url).flushall()  # the line handed back: idle workers must stay idle
        procs = start_workers(url, workers)
        together = _stop(procs, server)
    finally:
        if server.poll() is None:
            server.kill()
        server.wait(10)
    note = f"{workers} workers, shared machine (load average {os.getloadavg()[0]:.1f})"
    return [
        Ratio("restart: SIGTERM, exit, start, registered", restart, GOAL * 6, "s",
              note=f"{note}; of which the stop {stopped:.2f} s"),
        Ratio("stop idle workers", stop_idle, GOAL, "s", note=note),
        Ratio("stop idle workers and Redis together", together, GOAL, "s", note=note),
        Ratio("stop a busy worker (hands its line back)", busy, GOAL, "s", note="1 worker, 2000-point sweep"),
        Ratio("healthcheck --check", check, 2.0, "s", note="python -m service.worker --check, one run"),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    ratios = measure(parser.parse_args().workers)
    print_table(ratios)
    return 0 if all(r.met for r in ratios) else 1


if __name__ == "__main__":
    raise SystemExit(main())
