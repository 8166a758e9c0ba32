"""Load test on loopback: concurrent clients hammering cached solves of a live server.

Starts ``python -m service`` (embedded default: in-process LRU) on a free loopback port, warms
one solve, then runs ``--clients`` threads for ``--seconds`` (bounded in both count and time).
Prints cached solves per second, p50/p99 latency and the error count, then floods the LRU with
more distinct specs than it holds and prints the server's resident memory before and after,
which stays bounded because the in-process cache is an LRU of fixed size.

    .venv/bin/python -m benchmarks.load --clients 8 --seconds 10
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

import httpx

SPEC = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 29.45}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def start_server(port: int, cache_size: int) -> subprocess.Popen:
    env = {**os.environ, "SADDLELAB_PORT": str(port), "SADDLELAB_MEMORY_CACHE_SIZE": str(cache_size),
           "SADDLELAB_RATE_LIMIT_PER_MINUTE": "0"}
    env.pop("REDIS_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "service"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("server did not start")


def hammer(url: str, clients: int, seconds: float, max_requests: int) -> tuple[list[float], int]:
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    stop = time.monotonic() + seconds
    budget = [max_requests]

    def worker() -> None:
        nonlocal errors
        with httpx.Client(timeout=10) as c:
            while time.monotonic() < stop:
                with lock:
                    if budget[0] <= 0:
                        return
                    budget[0] -= 1
                t0 = time.perf_counter()
                try:
                    r = c.post(url, json={"model": SPEC})
                    ok = r.status_code == 200 and r.json()["cached"]
                except httpx.HTTPError:
                    ok = False
                dt = time.perf_counter() - t0
                with lock:
                    latencies.append(dt)
                    errors += not ok

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, errors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--max-requests", type=int, default=50_000)
    ap.add_argument("--cache-size", type=int, default=256)
    args = ap.parse_args()
    port = free_port()
    proc = start_server(port, args.cache_size)
    base = f"http://127.0.0.1:{port}"
    try:
        httpx.post(f"{base}/v1/solve", json={"model": SPEC}, timeout=30).raise_for_status()
        t0 = time.perf_counter()
        lat, errors = hammer(f"{base}/v1/solve", args.clients, args.seconds, args.max_requests)
        wall = time.perf_counter() - t0
        lat_ms = sorted(x * 1e3 for x in lat)
        p99 = lat_ms[min(len(lat_ms) - 1, int(0.99 * len(lat_ms)))]
        print(f"cached solves: {len(lat)} in {wall:.1f} s with {args.clients} clients "
              f"-> {len(lat) / wall:.0f} /s; p50 {statistics.median(lat_ms):.2f} ms, p99 {p99:.2f} ms; "
              f"errors {errors}")
        before = rss_kib(proc.pid)
        with httpx.Client(timeout=30) as c:
            for i in range(4 * args.cache_size):
                c.post(f"{base}/v1/solve", json={"model": {**SPEC, "u": 20 + i * 1e-3}}).raise_for_status()
            mid = rss_kib(proc.pid)
            for i in range(4 * args.cache_size):
                c.post(f"{base}/v1/solve", json={"model": {**SPEC, "u": 40 + i * 1e-3}}).raise_for_status()
        after = rss_kib(proc.pid)
        print(f"in-process cache of {args.cache_size} entries: server RSS {before} KiB -> {mid} KiB after "
              f"{4 * args.cache_size} distinct specs -> {after} KiB after {4 * args.cache_size} more "
              f"(growth in the second flood {after - mid} KiB: bounded)")
        if errors:
            raise SystemExit(1)
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
