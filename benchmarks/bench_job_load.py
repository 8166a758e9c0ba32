"""Large jobs under load, on a live API with Redis and an RQ worker, at the instance's own limits.

- **Large reads**: the largest kernel_renormalization sweep the limits accept (teacher data P = 50, P_test at
  ``kernel_p_test``, N0 = 10, as many temperatures as ``job_stored_bytes`` lets through the up-front estimate,
  at most ``max_sweep_points``) is computed; then ``READERS`` clients read pages of its result at once (each a
  few pages at different offsets) while ``/healthz`` is probed every 50 ms and the API's resident memory
  (``/proc``) is sampled. Goals: ``/healthz`` p99 under one second; the API's growth in memory within
  ``READERS × PAGE_COPIES × result_page_bytes`` — every concurrent read may hold its page a few times over (the
  texts read from Redis, the joined body, the bytes sent), never more than its page.
- **Long-polls**: a phase diagram of ``max_sweep_points`` lines (rubin_cavity potential, one line per value of u
  with 20 values of b, as ``max_grid_points`` allows) runs on the worker; another key's cached solve is timed in
  blocks alternating between no held request and ``POLLERS`` clients each asking ``GET /v1/jobs/{id}?wait=10``
  in a loop (two keys, so that neither passes ``max_waits_per_key``; started ``wait / POLLERS`` apart so
  that answers, each a full status of the job, come throughout the loaded block). Goal: the loaded p50 within
  2× the idle p50. The CPU the API and Redis spent per second of each block is printed beside it.

The machine's other load shows in every figure: the ratios come from one run, idle and loaded interleaved.

``python -m benchmarks.bench_job_load [--points N]`` (default: the largest sweep the limits accept)
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import threading
import time
from collections.abc import Callable

import httpx
import redis

from benchmarks.bench_phase_diagram import start_redis, start_workers, stop
from benchmarks.common import Ratio, print_table
from benchmarks.load import SPEC, free_port, percentile, rss_kib, start_server
from service.kernel import stored_bytes
from service.settings import Settings
from solvers.theories.kernel_renormalization.theory import SIZE_LIMITS

READERS = 20
POLLERS = 20
#: Copies of its page one read may hold in the API at once (see the module's docstring).
PAGE_COPIES = 4
KEYS = ("load-big", "load-poll-a", "load-poll-b", "load-cached")


def largest_sweep(settings: Settings) -> tuple[dict, int]:
    """The kernel_renormalization T-sweep at P_test's limit with the most points the byte estimate accepts."""
    p_test = int(settings.limit("kernel_p_test", SIZE_LIMITS["kernel_p_test"]))
    limit = settings.limit(stored_bytes.LIMIT_NAME, stored_bytes.DEFAULT_LIMIT)
    per_point = stored_bytes.estimate(1, 2.0 * p_test)  # Theory.result_numbers: mean and variance per test point
    num = min(settings.max_sweep_points, int(limit // per_point) if limit else settings.max_sweep_points)
    model = {"theory": "kernel_renormalization", "N1": 200, "T": 0.1,
             "data": {"kind": "teacher", "P": 50, "P_test": p_test, "N0": 10, "seed": 0}}
    return {"model": model, "parameter": "T", "values": {"start": 0.01, "stop": 1.0, "num": num},
            "method": "grid"}, num


def largest_diagram(settings: Settings) -> dict:
    """``max_sweep_points`` lines (one per value of u, the first parameter) of 20 values of b, or as many as
    ``max_grid_points`` leaves: the job whose status costs most to read (one count per line)."""
    lines = settings.max_sweep_points
    per_line = max(1, min(20, settings.max_grid_points // lines))
    return {"model": {**SPEC, "D": 150.0}, "parameter": ["u", "b"],
            "values": [{"start": 20, "stop": 40, "num": lines}, {"start": 0.25, "stop": 0.34, "num": per_line}]}


def _wait_finished(c: httpx.Client, job_id: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = c.get(f"/v1/jobs/{job_id}", params={"wait": 30, "limit": 1})
        if r.status_code != 200:
            raise RuntimeError(f"reading job {job_id}: {r.status_code} {r.text[:500]}")
        body = r.json()
        if body["status"] in ("finished", "failed", "cancelled"):
            return body
    raise RuntimeError(f"job {job_id} did not end within {timeout:.0f} s")


def _while(fn: Callable[[threading.Event], None], n: int) -> tuple[threading.Event, list[threading.Thread]]:
    """``n`` threads running ``fn(done)``; set ``done`` to end them."""
    done = threading.Event()
    threads = [threading.Thread(target=fn, args=(done,), daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    return done, threads


def large_reads(base: str, api_pid: int, job_id: str, total: int, settings: Settings) -> list[Ratio]:
    health: list[float] = []
    codes: dict[int, int] = {}
    lock = threading.Lock()
    idle_rss = rss_kib(api_pid)
    peak = [idle_rss]
    page_bytes: list[int] = []

    def probe(done: threading.Event) -> None:
        with httpx.Client(base_url=base, timeout=30) as c:
            while not done.is_set():
                t0 = time.perf_counter()
                c.get("/healthz").raise_for_status()
                health.append(time.perf_counter() - t0)
                time.sleep(0.05)

    def sample(done: threading.Event) -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_kib(api_pid))
            time.sleep(0.05)

    def reader(i: int) -> None:
        with httpx.Client(base_url=base, timeout=300, headers={"X-API-Key": "load-big"}) as c:
            for k in range(3):  # three pages, at offsets spread over the result
                r = c.get(f"/v1/jobs/{job_id}", params={"offset": (i * 3 + k) * total // (3 * READERS)})
                with lock:
                    codes[r.status_code] = codes.get(r.status_code, 0) + 1
                    page_bytes.append(len(r.content))

    done, background = _while(probe, 1)
    done_rss, sampler = _while(sample, 1)
    time.sleep(1.0)
    t0 = time.perf_counter()
    readers = [threading.Thread(target=reader, args=(i,)) for i in range(READERS)]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    wall = time.perf_counter() - t0
    time.sleep(0.5)
    for d in (done, done_rss):
        d.set()
    for t in background + sampler:
        t.join()
    ms = [1e3 * x for x in health]
    bound = READERS * PAGE_COPIES * settings.result_page_bytes / 2**20
    growth = (peak[0] - idle_rss) / 1024
    note = (f"{READERS} readers x 3 pages of {max(page_bytes) / 2**20:.1f} MiB at most, {wall:.1f} s; "
            f"status codes {codes}")
    print(f"large reads: {note}; /healthz {len(ms)} probes p50 {statistics.median(ms):.1f} ms, "
          f"p99 {percentile(ms, 0.99):.1f} ms, max {max(ms):.1f} ms; API RSS {idle_rss / 1024:.0f} MiB idle, "
          f"peak {peak[0] / 1024:.0f} MiB (growth {growth:.0f} MiB, bound {bound:.0f} MiB)")
    if set(codes) != {200}:
        raise RuntimeError(f"a read failed: {codes}")
    return [Ratio("/healthz p99 under 20 reads of the largest result", percentile(ms, 0.99), 1000.0, "ms",
                  note=f"p50 {statistics.median(ms):.1f} ms, max {max(ms):.0f} ms; {note}"),
            Ratio("API RSS growth under 20 reads of the largest result", growth, bound, "MiB",
                  note=f"{idle_rss / 1024:.0f} -> {peak[0] / 1024:.0f} MiB; bound {READERS} x {PAGE_COPIES} x "
                       f"result_page_bytes")]


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (``/proc/{pid}/stat``)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def long_polls(base: str, job_ids: dict[str, str], pids: dict[str, int], blocks: int = 3, wait: float = 10.0,
               idle_seconds: float = 5.0) -> list[Ratio]:
    """Cached solves timed in blocks alternating between no held request and ``POLLERS`` clients each asking
    ``?wait=`` in a loop (started ``wait / POLLERS`` apart, so that answers — a full status of the job — come
    throughout a loaded block of ``wait`` seconds); with the CPU the API and Redis spent per second of each (what
    the held requests cost, whatever else the machine runs)."""
    idle: list[float] = []
    loaded: list[float] = []
    polls = [0]
    cpu = {(who, phase): [0.0, 0.0] for who in pids for phase in ("idle", "loaded")}

    def account(phase: str, fn: Callable[[], None]) -> None:
        before = {who: cpu_seconds(pid) for who, pid in pids.items()}
        t0 = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - t0
        for who, pid in pids.items():
            cpu[who, phase][0] += cpu_seconds(pid) - before[who]
            cpu[who, phase][1] += elapsed

    def poller(key: str, delay: float, done: threading.Event) -> None:
        time.sleep(delay)
        with httpx.Client(base_url=base, timeout=120, headers={"X-API-Key": key}) as c:
            while not done.is_set():
                c.get(f"/v1/jobs/{job_ids[key]}", params={"wait": wait}).raise_for_status()
                polls[0] += 1

    with httpx.Client(base_url=base, timeout=30, headers={"X-API-Key": "load-cached"}) as c:
        def timed(into: list[float], seconds: float) -> None:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                t0 = time.perf_counter()
                r = c.post("/v1/solve", json={"model": SPEC})
                into.append(time.perf_counter() - t0)
                assert r.status_code == 200 and r.json()["cached"], r.text

        timed([], 1.0)  # warm the connection
        for _ in range(blocks):
            account("idle", lambda: timed(idle, idle_seconds))
            done = threading.Event()
            threads = [threading.Thread(target=poller, args=(KEYS[1 + i % 2], i * wait / POLLERS, done))
                       for i in range(POLLERS)]
            for t in threads:
                t.start()
            time.sleep(wait)  # every poller holds its request; from now on one is answered every wait / POLLERS
            account("loaded", lambda: timed(loaded, wait))
            done.set()
            for t in threads:
                t.join()
    i_ms, l_ms = [1e3 * x for x in idle], [1e3 * x for x in loaded]
    ratio = statistics.median(l_ms) / statistics.median(i_ms)
    share = {k: 100 * used / max(elapsed, 1e-9) for k, (used, elapsed) in cpu.items()}
    note = (f"idle p50 {statistics.median(i_ms):.1f} / p99 {percentile(i_ms, 0.99):.1f} ms, with {POLLERS} "
            f"long-polls (wait={wait:g}) p50 {statistics.median(l_ms):.1f} / p99 {percentile(l_ms, 0.99):.1f} ms; "
            f"{polls[0]} polls answered; CPU (% of a core) " +
            ", ".join(f"{who} {share[who, 'idle']:.0f} idle, {share[who, 'loaded']:.0f} loaded" for who in pids))
    print(f"long-polls: {note}; ratio of p50s {ratio:.2f}")
    return [Ratio("cached solve p50 beside 20 long-polls on the largest diagram / idle", ratio, 2.0, note=note)]


def measure(points: int | None = None) -> list[Ratio]:
    settings = Settings()
    sweep, num = largest_sweep(settings)
    if points is not None:
        num = points
        sweep["values"]["num"] = points
    server, url = start_redis()
    workers: list = []
    api = None
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    ratios: list[Ratio] = []
    try:  # nothing it started outlives it, even when the worker or the API fails to start
        workers = start_workers(url, 1)
        api = start_server(port, 256, {"REDIS_URL": url, "SADDLELAB_API_KEYS": ",".join(KEYS)}, start_timeout=180)
        with httpx.Client(base_url=base, timeout=60, headers={"X-API-Key": "load-big"}) as c:
            t0 = time.perf_counter()
            r = c.post("/v1/sweeps", json=sweep)
            if r.status_code != 202:
                raise RuntimeError(f"the largest sweep was refused: {r.text}")
            job = _wait_finished(c, r.json()["job_id"], timeout=3600)
            if job["status"] != "finished":
                raise RuntimeError(f"the largest sweep did not finish: {job.get('error')}")
            stored = redis.Redis.from_url(url).info("memory")["used_memory"]
            print(f"largest sweep: {num} temperatures at P_test={sweep['model']['data']['P_test']}, computed in "
                  f"{time.perf_counter() - t0:.0f} s; Redis holds {stored / 2**20:.0f} MiB")
            ratios.append(Ratio("largest accepted sweep: points", num, 0, "points", sense="report",
                                note=f"kernel_renormalization T sweep, P = 50, P_test = "
                                     f"{sweep['model']['data']['P_test']}, N0 = 10; Redis {stored / 2**20:.0f} MiB"))
            ratios += large_reads(base, api.pid, job["job_id"], num, settings)
        diagram = largest_diagram(settings)
        ids = {}
        for key in ("load-poll-a", "load-poll-b"):
            with httpx.Client(base_url=base, timeout=600, headers={"X-API-Key": key}) as c:
                t0 = time.perf_counter()
                r = c.post("/v1/sweeps", json=diagram)
                print(f"diagram submitted by {key}: {r.status_code} in {time.perf_counter() - t0:.1f} s")
                if r.status_code != 202:
                    raise RuntimeError(f"the diagram was refused: {r.text}")
                ids[key] = r.json()["job_id"]
        with httpx.Client(base_url=base, timeout=30, headers={"X-API-Key": "load-cached"}) as c:
            c.post("/v1/solve", json={"model": SPEC}).raise_for_status()
        ratios += long_polls(base, ids, {"API": api.pid, "Redis": server.pid})
        with httpx.Client(base_url=base, timeout=60, headers={"X-API-Key": "load-poll-a"}) as c:
            status = c.get(f"/v1/jobs/{ids['load-poll-a']}").json()
            print(f"diagram during the long-polls: {status['status']}, progress {status['progress']}")
    finally:
        if api is not None:
            api.terminate()
            api.wait(10)
        stop(workers)
        server.kill()
        server.wait(10)
    return ratios


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=None, help="temperatures of the large sweep (default: the most "
                                                             "the limits accept)")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    print_table(measure(ap.parse_args().points))
