"""A live server (``python -m service``) under mixed load answers every ``/healthz`` probe, never waits with it
behind the load, and never answers anything with a 5xx.

The load: cold solves that each take seconds (large kernels; three clients for two solve processes, so one
always waits for a slot), a sweep and a phase diagram on the embedded executor, and clients hammering a cached
solve, all at once, until a fixed number of probes is done. What is checked is behaviour, not the machine's
speed: a probe never takes as long as the quickest cold solve of the same run (a probe queued behind the solves
would), and the probes ran while cold solves were in flight. The speed itself (p50/p99 of ``/healthz`` under
this load) is measured by ``benchmarks/load.py --scenario mixed``.
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
#: Probes of /healthz, 50 ms apart; the load runs until they are done.
PROBES = 20


def cold(seed: int) -> dict:
    return {"theory": "kernel_renormalization", "N1": 200, "T": 0.1,
            "data": {"kind": "teacher", "P": 1000, "P_test": 300, "N0": 200, "seed": seed}}


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
def test_healthz_never_waits_behind_mixed_load(server: str) -> None:
    done = threading.Event()
    errors: list[str] = []
    health: list[tuple[float, float]] = []  # (start, end) of each probe
    solves: list[tuple[float, float]] = []  # (start, end) of each cold solve
    lock = threading.Lock()

    def note(r: httpx.Response) -> None:
        if r.status_code >= 500:
            with lock:
                errors.append(f"{r.status_code} {r.request.url.path}: {r.text[:200]}")

    def cold_solves(first: int) -> None:
        with httpx.Client(base_url=server, timeout=300) as c:
            seed = first
            while not done.is_set():
                t0 = time.perf_counter()
                r = c.post("/v1/solve", json={"model": cold(seed)})
                with lock:
                    solves.append((t0, time.perf_counter()))
                note(r)
                seed += 10

    def cached_solves() -> None:
        with httpx.Client(base_url=server, timeout=60) as c:
            while not done.is_set():
                note(c.post("/v1/solve", json={"model": POTENTIAL}))

    def probe() -> None:
        try:
            with httpx.Client(base_url=server, timeout=60) as c:
                for _ in range(PROBES):
                    t0 = time.perf_counter()
                    r = c.get("/healthz")
                    with lock:
                        health.append((t0, time.perf_counter()))
                    note(r)
                    if r.status_code != 200:
                        errors.append(f"/healthz answered {r.status_code}")
                    time.sleep(0.05)
        finally:
            done.set()

    with httpx.Client(base_url=server, timeout=60) as c:
        c.post("/v1/solve", json={"model": POTENTIAL}).raise_for_status()
        for body in ({"model": {**POTENTIAL, "D": 150.0}, "parameter": "u",
                      "values": {"start": 20, "stop": 40, "num": 1500}},
                     {"model": POTENTIAL, "parameter": ["b", "u"],
                      "values": [[0.25, 0.3, 0.33], {"start": 20, "stop": 40, "num": 200}]}):
            assert c.post("/v1/sweeps", json=body).status_code == 202
    load = [threading.Thread(target=cold_solves, args=(i,)) for i in range(3)]
    load += [threading.Thread(target=cached_solves) for _ in range(4)]
    for t in load:
        t.start()
    prober = threading.Thread(target=probe)
    prober.start()
    prober.join(600)
    for t in load:
        t.join(600)
    assert not errors, errors
    assert len(health) == PROBES
    latency = [end - start for start, end in health]
    quickest = min(end - start for start, end in solves)
    # A probe that waited for a solve slot (or for the event loop behind a solve) would take about as long as a
    # solve: every probe must take less than the quickest solve of this run, whatever the machine's speed.
    assert max(latency) < quickest, (sorted(latency)[-3:], quickest)
    # ... and the probes did run under the load: each of them while some cold solve was in flight.
    under_load = [p for p in health if any(s0 < p[0] and p[1] < s1 for s0, s1 in solves)]
    assert len(under_load) >= PROBES // 2, (len(under_load), PROBES)
