"""Nothing the API started outlives it: stopping ``python -m service`` (SIGTERM or SIGKILL) in the middle of
a long sweep on the embedded executor leaves no solve process behind.

Regression: after SIGTERM the API exited within seconds but the line's solve process (a child of the fork server)
computed on for minutes, until its own alarm at the job timeout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from service.local_server import wait_healthy
from tests.redis_server import free_port

ROOT = Path(__file__).resolve().parents[2]
#: Minutes of work: a finite-sample solve per value (about 0.3 s each), its first points within a second.
LONG_SWEEP = {"model": {"theory": "rubin_cavity", "mode": "finite_sample", "P": 300, "P_test": 50, "D": 20, "N": 100},
              "parameter": "T", "values": {"start": 0.1, "stop": 0.3, "num": 1500}, "method": "grid"}


def _children() -> dict[int, int]:
    """pid -> parent pid of every process."""
    out: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            out[int(entry)] = int(fields[1])
    return out


def descendants(pid: int) -> set[int]:
    parents = _children()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - found
        found |= frontier
    return found


def alive(pids: set[int]) -> set[int]:
    now = _children()
    return {p for p in pids if p in now}


def _serve(port: int) -> subprocess.Popen:
    env = {**os.environ, "SADDLELAB_PORT": str(port), "SADDLELAB_API_KEYS": "", "SADDLELAB_LOCAL_WORKERS": "2"}
    env.pop("REDIS_URL", None)
    env.pop("SADDLELAB_REDIS_URL", None)
    return subprocess.Popen([sys.executable, "-m", "service"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def _busy_api(port: int, proc: subprocess.Popen) -> set[int]:
    """Wait for the API, start two long sweeps, and return its descendants once both lines compute."""
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    wait_healthy(base, proc, 120)
    ids = []
    for num in (1500, 1501):
        body = {**LONG_SWEEP, "values": {**LONG_SWEEP["values"], "num": num}}
        ids.append(httpx.post(f"{base}/v1/sweeps", json=body, timeout=30).json()["job_id"])
    while True:
        done = [httpx.get(f"{base}/v1/jobs/{i}", timeout=30).json()["progress"]["done"] for i in ids]
        if all(d > 0 for d in done):
            break
        assert time.monotonic() < deadline, "the sweeps did not start"
        time.sleep(0.2)
    return descendants(proc.pid)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_stopping_the_api_stops_every_process_it_started(sig: int) -> None:
    port = free_port()
    proc = _serve(port)
    try:
        started = _busy_api(port, proc)
        assert len(started) >= 3, started  # the fork server and a process per running line
        proc.send_signal(sig)
        proc.wait(30)
        deadline = time.monotonic() + 10
        while alive(started) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(started), f"still running {10} s after the API ended: {sorted(alive(started))}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
