"""Phase diagram on RQ workers: wall time with 1 worker over wall time with 2, measured in one run.

A ``rubin_cavity`` potential diagram in (b, u) — one line per value of b, each a continuation in
u at finite D — is submitted to a real redis-server and real ``python -m service.worker``
processes; the time from submission to the assembled result is compared between 1 and 2
workers (Redis flushed in between, so nothing is deduplicated or cached), best of two interleaved runs each.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))

import redis  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from rq import Worker  # noqa: E402
from rq.serializers import JSONSerializer  # noqa: E402

from benchmarks.common import Ratio, print_table  # noqa: E402
from benchmarks.load import free_port  # noqa: E402
from service.app import create_app  # noqa: E402
from service.settings import Settings  # noqa: E402

REQUEST: dict[str, Any] = {
    "model": {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "c": -0.3, "D": 150},
    "parameter": ["b", "u"],
    "values": [{"start": 0.26, "stop": 0.34, "num": 8}, {"start": 20, "stop": 40, "num": 400}],
}


def start_redis() -> tuple[subprocess.Popen, str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed")
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", tempfile.mkdtemp(prefix="saddlelab-bench-")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(port=port)
    for _ in range(200):
        try:
            client.ping()
            return proc, f"redis://127.0.0.1:{port}/0"
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("redis-server did not start")


def start_workers(url: str, n: int) -> list[subprocess.Popen]:
    env = {**os.environ, "REDIS_URL": url, "PYTHONWARNINGS": "ignore",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    names = [f"bench-{n}-{k}" for k in range(n)]
    procs = [subprocess.Popen([sys.executable, "-m", "service.worker", "--name", name], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for name in names]
    conn = redis.Redis.from_url(url)
    deadline = time.monotonic() + 60
    while {w.name for w in Worker.all(connection=conn, serializer=JSONSerializer)} < set(names):
        if time.monotonic() > deadline:
            raise RuntimeError("workers did not start")
        time.sleep(0.1)
    return procs


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
        p.wait(10)


def time_diagram(url: str, workers: int) -> float:
    redis.Redis.from_url(url).flushall()
    procs = start_workers(url, workers)
    try:
        with TestClient(create_app(Settings(redis_url=url, api_keys=(), rate_limit_per_minute=0))) as api:
            t0 = time.perf_counter()
            job_id = api.post("/v1/sweeps", json=REQUEST).json()["job_id"]
            while True:
                status = api.get(f"/v1/jobs/{job_id}").json()
                if status["status"] in ("finished", "failed", "cancelled"):
                    break
                time.sleep(0.1)
            seconds = time.perf_counter() - t0
        if status["status"] != "finished":
            raise RuntimeError(f"the diagram did not finish: {status.get('error')}")
        return seconds
    finally:
        stop(procs)


def measure(repeat: int = 2) -> list[Ratio]:
    load_before = os.getloadavg()[0]
    proc, url = start_redis()
    try:
        # Interleaved and best-of: a machine shared with other work disturbs both configurations alike.
        one, two = float("inf"), float("inf")
        for _ in range(repeat):
            one = min(one, time_diagram(url, 1))
            two = min(two, time_diagram(url, 2))
    finally:
        proc.kill()
        proc.wait(10)
    rows = REQUEST["values"][0]["num"]
    points = rows * REQUEST["values"][1]["num"]
    return [
        Ratio("phase diagram: speed-up with 2 RQ workers over 1", one / two, 1.6, "×", sense=">=",
              note=f"{rows} lines × {points // rows} points (rubin_cavity potential, D = 150); "
                   f"best of {repeat}: 1 worker {one:.1f} s, 2 workers {two:.1f} s; {os.cpu_count()} cores, "
                   f"load average {load_before:.1f} before / {os.getloadavg()[0]:.1f} after (other work competes)"),
    ]


if __name__ == "__main__":
    print_table(measure())
