"""Cached solve over HTTP: median latency of a cache hit on a live server (loopback, one client)."""

from __future__ import annotations

import statistics
import time

import httpx

from benchmarks.common import Ratio, print_table
from benchmarks.load import SPEC, free_port, start_server


def measure(n: int = 300) -> list[Ratio]:
    port = free_port()
    proc = start_server(port, cache_size=256)
    try:
        url = f"http://127.0.0.1:{port}/v1/solve"
        with httpx.Client(timeout=30) as c:
            c.post(url, json={"model": SPEC}).raise_for_status()
            lat = []
            for _ in range(n):
                t0 = time.perf_counter()
                r = c.post(url, json={"model": SPEC})
                lat.append(time.perf_counter() - t0)
                assert r.json()["cached"]
    finally:
        proc.terminate()
        proc.wait(10)
    return [Ratio("cached solve over HTTP, median", 1e3 * statistics.median(lat), 10.0, "ms",
                  note=f"{n} sequential requests, loopback")]


if __name__ == "__main__":
    print_table(measure())
