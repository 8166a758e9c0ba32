"""Load tests on loopback against a live server (``python -m service``, embedded default).

``--scenario cached`` (default): concurrent clients hammering cached solves. Warms one solve, runs
``--clients`` threads for ``--seconds`` (bounded in both count and time), prints cached solves per
second, p50/p99 latency and the error count, then floods the LRU with more distinct specs than it
holds and prints the server's resident memory before and after (bounded: the LRU has a fixed size).

``--scenario mixed``: everything at once for ``--seconds`` — clients hammering a cached solve, cold
expensive solves (kernels of 1500 training points, each seconds of work in its own process), a long
sweep and a phase diagram on the embedded executor, and midway a burst from two API keys (each
submitting more sweeps than its job limit allows). Prints p50/p99 of ``/healthz`` and of the cached
solves, the peak resident memory of the API process and of its solve processes, every status code
seen, and fails if any answer was a 5xx.

    .venv/bin/python -m benchmarks.load --clients 8 --seconds 10
    .venv/bin/python -m benchmarks.load --scenario mixed --clients 4 --seconds 30
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

import httpx

from service.local_server import free_port

SPEC = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 29.45}


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def tree_rss_kib(pid: int) -> int:
    """Resident memory of a process and all its descendants (the solve processes of an API)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            total += max(0, rss_kib(p))
        except OSError:
            continue
        stack.extend(children.get(p, []))
    return total


def start_server(port: int, cache_size: int, extra_env: dict[str, str] | None = None,
                 start_timeout: float = 120) -> subprocess.Popen:
    env = {**os.environ, "SADDLELAB_PORT": str(port), "SADDLELAB_MEMORY_CACHE_SIZE": str(cache_size),
           "SADDLELAB_RATE_LIMIT_PER_MINUTE": "0", **(extra_env or {})}
    if "REDIS_URL" not in (extra_env or {}):  # embedded executor unless a Redis is named
        env.pop("REDIS_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "service"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + start_timeout  # imports take tens of seconds on a loaded machine
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


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def cold_spec(seed: int) -> dict:
    return {"theory": "kernel_renormalization", "N1": 200, "T": 0.1,
            "data": {"kind": "teacher", "P": 1500, "P_test": 500, "N0": 300, "seed": seed}}


def mixed(args: argparse.Namespace) -> int:
    """Cached solves, cold expensive solves, a sweep and a phase diagram, and a two-key burst, all at once."""
    keys = ["load-cached", "load-cold", "load-sweep", "burst-a", "burst-b"]
    port = free_port()
    proc = start_server(port, args.cache_size, {"SADDLELAB_API_KEYS": ",".join(keys),
                                                "SADDLELAB_SOLVE_PROCESSES": "2", "SADDLELAB_LOCAL_WORKERS": "2"})
    base = f"http://127.0.0.1:{port}"
    stop = time.monotonic() + args.seconds
    lock = threading.Lock()
    codes: dict[int, int] = {}
    fivexx: list[str] = []
    lat: dict[str, list[float]] = {"healthz": [], "cached": [], "cold": []}
    peak = {"api": 0, "tree": 0}

    def record(kind: str | None, r: httpx.Response | None, dt: float) -> None:
        with lock:
            if r is None:
                codes[0] = codes.get(0, 0) + 1
                return
            codes[r.status_code] = codes.get(r.status_code, 0) + 1
            if r.status_code >= 500:
                fivexx.append(f"{r.status_code} {r.request.method} {r.request.url.path}: {r.text[:200]}")
            if kind is not None and r.status_code < 300:
                lat[kind].append(dt)

    def call(c: httpx.Client, kind: str | None, method: str, path: str, **kw: object) -> httpx.Response | None:
        t0 = time.perf_counter()
        try:
            r = c.request(method, path, **kw)  # type: ignore[arg-type]
        except httpx.HTTPError:
            r = None
        record(kind, r, time.perf_counter() - t0)
        return r

    def client(key: str | None, timeout: float = 60) -> httpx.Client:
        return httpx.Client(base_url=base, timeout=timeout, headers={"X-API-Key": key} if key else None)

    def cached() -> None:
        with client("load-cached") as c:
            while time.monotonic() < stop:
                call(c, "cached", "POST", "/v1/solve", json={"model": SPEC})

    def cold(first: int) -> None:
        with client("load-cold", timeout=300) as c:
            seed = first
            while time.monotonic() < stop:
                call(c, "cold", "POST", "/v1/solve", json={"model": cold_spec(seed)})
                seed += 2

    def health() -> None:
        with client(None) as c:
            while time.monotonic() < stop:
                call(c, "healthz", "GET", "/healthz")
                time.sleep(0.05)

    def memory() -> None:
        while time.monotonic() < stop:
            api, tree = rss_kib(proc.pid), tree_rss_kib(proc.pid)
            with lock:
                peak["api"], peak["tree"] = max(peak["api"], api), max(peak["tree"], tree)
            time.sleep(0.2)

    def sweeps() -> None:
        with client("load-sweep") as c:
            jobs = []
            for body in ({"model": {**SPEC, "D": 150.0}, "parameter": "u",
                          "values": {"start": 20, "stop": 40, "num": 2000}},
                         {"model": SPEC, "parameter": ["b", "u"],
                          "values": [[0.25, 0.28, 0.3, 0.33], {"start": 20, "stop": 40, "num": 400}]}):
                r = call(c, None, "POST", "/v1/sweeps", json=body)
                if r is not None and r.status_code == 202:
                    jobs.append(r.json()["job_id"])
            while time.monotonic() < stop:
                for j in jobs:
                    call(c, None, "GET", f"/v1/jobs/{j}")
                time.sleep(0.5)

    def burst(key: str) -> None:
        time.sleep(args.seconds / 3)
        with client(key) as c:
            for i in range(25):  # more than max_jobs_per_key (20): the last ones are 429, never 5xx
                call(c, None, "POST", "/v1/sweeps",
                     json={"model": {**SPEC, "u": 20.0 + i}, "parameter": "b", "values": [0.25, 0.3]})
            for _ in range(200):
                call(c, None, "GET", "/v1/theories")

    try:
        with httpx.Client(timeout=30, headers={"X-API-Key": "load-cached"}) as c:
            c.post(f"{base}/v1/solve", json={"model": SPEC}).raise_for_status()
        threads = [threading.Thread(target=cached) for _ in range(args.clients)]
        threads += [threading.Thread(target=cold, args=(i,)) for i in range(2)]
        threads += [threading.Thread(target=f) for f in (health, memory, sweeps)]
        threads += [threading.Thread(target=burst, args=(k,)) for k in ("burst-a", "burst-b")]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(10)
    ms = {k: [x * 1e3 for x in v] for k, v in lat.items()}
    print(f"mixed load for {wall:.1f} s ({args.clients} cached-solve clients, 2 cold-solve clients, a 2000-point "
          f"sweep and a 4 x 400 phase diagram, a burst of 2 keys x (25 sweeps + 200 requests)):")
    print(f"  /healthz: {len(ms['healthz'])} probes, p50 {statistics.median(ms['healthz']):.1f} ms, "
          f"p99 {percentile(ms['healthz'], 0.99):.1f} ms, max {max(ms['healthz']):.1f} ms")
    print(f"  cached solves: {len(ms['cached'])} ({len(ms['cached']) / wall:.0f} /s), "
          f"p50 {statistics.median(ms['cached']):.1f} ms, p99 {percentile(ms['cached'], 0.99):.1f} ms")
    if ms["cold"]:
        print(f"  cold solves: {len(ms['cold'])} completed, median {statistics.median(ms['cold']) / 1e3:.1f} s each")
    print(f"  peak resident memory: API process {peak['api'] / 1024:.0f} MiB, with its solve and job processes "
          f"{peak['tree'] / 1024:.0f} MiB")
    print(f"  status codes: {dict(sorted(codes.items()))}; 5xx: {len(fivexx)}")
    for line in fivexx[:10]:
        print(f"    {line}")
    return 1 if fivexx or codes.get(0) else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", choices=["cached", "mixed"], default="cached")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--max-requests", type=int, default=50_000)
    ap.add_argument("--cache-size", type=int, default=256)
    args = ap.parse_args()
    if args.scenario == "mixed":
        raise SystemExit(mixed(args))
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
