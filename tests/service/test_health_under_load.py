"""A live server (``python -m service``) under mixed load answers ``/healthz`` within a second and never with a 5xx.

The load: cold solves that each take seconds (large kernels), a sweep and a phase diagram on the embedded
executor, and clients hammering a cached solve, all at once, for a bounded time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.redis_server import free_port

ROOT = Path(__file__).resolve().parents[2]
POTENTIAL = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 29.45}
SECONDS = 8.0


def cold(seed: int) -> dict:
    return {"theory": "kernel_renormalization", "N1": 200, "T": 0.1,
            "data": {"kind": "teacher", "P": 1500, "P_test": 500, "N0": 300, "seed": seed}}


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "SADDLELAB_PORT": str(port), "SADDLELAB_RATE_LIMIT_PER_MINUTE": "0",
           "SADDLELAB_SOLVE_PROCESSES": "2", "SADDLELAB_LOCAL_WORKERS": "2", "PYTHONWARNINGS": "ignore"}
    env.pop("REDIS_URL", None)
    with open(tmp_path / "api.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "service"], cwd=ROOT, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "api.log").read_text()[-3000:]
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        yield url
    finally:
        os.killpg(proc.pid, 9)
        proc.wait(10)


@pytest.mark.slow
def test_healthz_stays_fast_under_mixed_load(server: str) -> None:
    stop = time.monotonic() + SECONDS
    errors: list[str] = []
    health: list[float] = []
    lock = threading.Lock()

    def note(r: httpx.Response) -> None:
        if r.status_code >= 500:
            with lock:
                errors.append(f"{r.status_code} {r.request.url.path}: {r.text[:200]}")

    def cold_solves(first: int) -> None:
        with httpx.Client(base_url=server, timeout=120) as c:
            seed = first
            while time.monotonic() < stop:
                note(c.post("/v1/solve", json={"model": cold(seed)}))
                seed += 10

    def cached_solves() -> None:
        with httpx.Client(base_url=server, timeout=30) as c:
            while time.monotonic() < stop:
                note(c.post("/v1/solve", json={"model": POTENTIAL}))

    def probe() -> None:
        with httpx.Client(base_url=server, timeout=10) as c:
            while time.monotonic() < stop:
                t0 = time.perf_counter()
                r = c.get("/healthz")
                with lock:
                    health.append(time.perf_counter() - t0)
                note(r)
                time.sleep(0.05)

    with httpx.Client(base_url=server, timeout=30) as c:
        c.post("/v1/solve", json={"model": POTENTIAL}).raise_for_status()
        for body in ({"model": {**POTENTIAL, "D": 150.0}, "parameter": "u",
                      "values": {"start": 20, "stop": 40, "num": 1500}},
                     {"model": POTENTIAL, "parameter": ["b", "u"],
                      "values": [[0.25, 0.3, 0.33], {"start": 20, "stop": 40, "num": 200}]}):
            assert c.post("/v1/sweeps", json=body).status_code == 202
    threads = [threading.Thread(target=cold_solves, args=(i,)) for i in range(3)]
    threads += [threading.Thread(target=cached_solves) for _ in range(4)]
    threads.append(threading.Thread(target=probe))
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert not errors, errors
    assert len(health) > 20
    assert max(health) < 1.0, sorted(health)[-5:]
