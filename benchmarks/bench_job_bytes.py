"""Large results and held requests against a live lab instance: an API (``python -m service``) and a worker on a
real redis-server, on loopback.

1. **Reads of the largest result the limits allow.** A kernel_renormalization sweep with P_test = 10 000 (its
   limit) is computed on the worker (each point carries the predictor at every test point, about 420 kB); its
   stored points are then repeated in Redis up to the most points ``job_stored_bytes`` admits at that size. Twenty
   clients read its first pages (the default page: ``result_page_bytes``) at once, while ``/healthz`` is asked
   every 50 ms and the API's resident memory is sampled: prints the health latencies (p50, p99, max), the API's
   peak memory over its idle memory, the seconds per reader and any failed request.
2. **Long-polls on a big job.** A 2 000 × 20 phase diagram stays queued (no worker); twenty requests of one key
   hold ``?wait=30`` on it while another key asks for a cached solve: prints that solve's latency idle and
   during the long-polls (p50, p99) and their ratio.

    .venv/bin/python -m benchmarks.bench_job_bytes
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import httpx
import redis

from benchmarks.load import percentile, rss_kib
from service.local_server import LocalServer, free_port, stop_process_group

POTENTIAL = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 29.45}
BIG_POINTS = {"model": {"theory": "kernel_renormalization", "N1": 200, "T": 0.1,
                        "data": {"kind": "teacher", "P": 50, "P_test": 10_000, "N0": 10, "seed": 0}},
              "parameter": "T", "values": {"start": 0.05, "stop": 0.5, "num": 4}, "method": "grid"}
DIAGRAM = {"model": POTENTIAL, "parameter": ["b", "u"], "method": "grid",
           "values": [{"start": 0.1, "stop": 0.5, "num": 2000}, {"start": 20, "stop": 40, "num": 20}]}
LIMIT = 512 * 2**20  # job_stored_bytes, the default
OVERHEAD = 1.25  # the estimate's Redis overhead (service.kernel.stored_bytes)


def start(cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(cmd, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def wait_job(c: httpx.Client, job_id: str) -> dict[str, Any]:
    while True:
        body = c.get(f"/v1/jobs/{job_id}", params={"wait": 20, "limit": 0}, timeout=60).json()
        if body["status"] not in ("queued", "running"):
            return body


def largest_result(c: httpx.Client, r: redis.Redis) -> tuple[str, int, int]:
    """The big-points sweep, computed, then its points repeated up to the limit: (job id, points, point bytes)."""
    job_id = c.post("/v1/sweeps", json=BIG_POINTS).json()["job_id"]
    done = wait_job(c, job_id)
    assert done["status"] == "finished", done
    key = r.hget(f"saddlelab:handle:{job_id}", "key").decode()
    name = f"saddlelab:job:{key}:result:points"
    texts = r.lrange(name, 0, -1)
    size = max(len(t) for t in texts)
    n = int(LIMIT / (size * OVERHEAD))
    with r.pipeline(transaction=False) as p:
        for i in range(len(texts), n):
            p.rpush(name, texts[i % len(texts)])
        p.execute()
    return job_id, n, size


def next_offset(body: str) -> int | None:
    """``page.next`` of a status, found in its head (before the spliced result) without parsing megabytes."""
    found = re.search(r'"page":\{[^}]*"next":(null|\d+)', body[:65536])
    assert found is not None, body[:2000]
    return None if found.group(1) == "null" else int(found.group(1))


def read_pages(url: str, job_id: str, pages: int, errors: list[str]) -> float:
    """Read the result's first ``pages`` pages (each the default page: at most result_page_bytes of points);
    the seconds it took. A failed request is noted and not retried."""
    t0 = time.monotonic()
    with httpx.Client(base_url=url, timeout=120, headers={"X-API-Key": "key-a"}) as c:
        offset: int | None = 0
        for _ in range(pages):
            try:
                r = c.get(f"/v1/jobs/{job_id}", params={"offset": offset})
            except httpx.HTTPError as exc:
                errors.append(type(exc).__name__)
                break
            if r.status_code != 200:
                errors.append(str(r.status_code))
                break
            offset = next_offset(r.text)
            if offset is None:
                break
    return time.monotonic() - t0


def sample(url: str, api_pid: int, conn: Any) -> None:
    """In a process of its own (the readers' threads must not slow its clock): ``/healthz`` every 50 ms and the
    API's resident memory, until told to stop; sends back (latencies, memory samples)."""
    health: list[float] = []
    rss: list[int] = []
    with httpx.Client(base_url=url, timeout=30) as c:
        while not conn.poll():
            t0 = time.monotonic()
            c.get("/healthz")
            health.append(time.monotonic() - t0)
            rss.append(rss_kib(api_pid))
            time.sleep(0.05)
    conn.send((health, rss))


def reads(url: str, api_pid: int, job_id: str, readers: int, pages: int) -> None:
    idle = rss_kib(api_pid)
    here, there = multiprocessing.Pipe()
    watcher = multiprocessing.get_context("fork").Process(target=sample, args=(url, api_pid, there))
    watcher.start()
    times: list[float] = []
    errors: list[str] = []
    threads = [threading.Thread(target=lambda: times.append(read_pages(url, job_id, pages, errors)))
               for _ in range(readers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    here.send("stop")
    health, rss = here.recv()
    watcher.join()
    print(f"  {readers} concurrent readers of {pages} page(s) each: {statistics.median(times):.1f} s each (median), "
          f"{max(times):.1f} s the slowest; failed requests: {len(errors)} {sorted(set(errors))}")
    print(f"  /healthz meanwhile ({len(health)} asked): p50 {percentile(health, 0.5) * 1e3:.0f} ms, "
          f"p99 {percentile(health, 0.99) * 1e3:.0f} ms, max {max(health) * 1e3:.0f} ms")
    print(f"  API resident memory: idle {idle / 1024:.0f} MiB, peak {max(rss) / 1024:.0f} MiB "
          f"(+{(max(rss) - idle) / 1024:.0f} MiB)")


def solve_latencies(url: str, n: int) -> list[float]:
    out = []
    with httpx.Client(base_url=url, timeout=30, headers={"X-API-Key": "key-b"}) as c:
        for _ in range(n):
            t0 = time.monotonic()
            assert c.post("/v1/solve", json={"model": POTENTIAL}).json()["cached"] is True
            out.append(time.monotonic() - t0)
    return out


def long_polls(url: str, polls: int) -> None:
    with httpx.Client(base_url=url, timeout=60, headers={"X-API-Key": "key-a"}) as c:
        job_id = c.post("/v1/sweeps", json=DIAGRAM).json()["job_id"]
    httpx.post(f"{url}/v1/solve", json={"model": POTENTIAL}, headers={"X-API-Key": "key-b"}, timeout=60)
    solve_latencies(url, 20)  # warm: the solve is cached now
    idle = solve_latencies(url, 200)
    flag = threading.Event()

    def hold() -> None:
        with httpx.Client(base_url=url, timeout=60, headers={"X-API-Key": "key-a"}) as c:
            while not flag.is_set():
                try:
                    c.get(f"/v1/jobs/{job_id}", params={"wait": 30, "limit": 0})
                except httpx.HTTPError:  # the API is stopping at the end of the benchmark
                    return

    threads = [threading.Thread(target=hold, daemon=True) for _ in range(polls)]
    for t in threads:
        t.start()
    time.sleep(2)
    busy = solve_latencies(url, 200)
    flag.set()
    p50i, p50b = percentile(idle, 0.5), percentile(busy, 0.5)
    print(f"  another key's cached solve: idle p50 {p50i * 1e3:.1f} ms, p99 {percentile(idle, 0.99) * 1e3:.1f} ms; "
          f"with {polls} long-polls on a 2000-line job p50 {p50b * 1e3:.1f} ms, "
          f"p99 {percentile(busy, 0.99) * 1e3:.1f} ms (p50 ratio {p50b / p50i:.2f})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--readers", type=int, default=20)
    ap.add_argument("--polls", type=int, default=20)
    ap.add_argument("--pages", type=int, default=2, help="pages each reader reads (a full read is ~50 of them)")
    args = ap.parse_args()
    rport = free_port()
    redis_url = f"redis://127.0.0.1:{rport}/0"
    workdir = tempfile.mkdtemp(prefix="saddlelab-bench-")
    server = start(["redis-server", "--port", str(rport), "--save", "", "--appendonly", "no", "--dir", workdir], {})
    env = {"REDIS_URL": redis_url, "SADDLELAB_RATE_LIMIT_PER_MINUTE": "0",
           "SADDLELAB_API_KEYS": "key-a,key-b", "SADDLELAB_MAX_WAITS_PER_KEY": str(args.polls)}
    worker = start([sys.executable, "-m", "service.worker"], env)
    api = LocalServer(env)
    try:
        api.start()
        url = api.url
        r = redis.Redis.from_url(redis_url)
        with httpx.Client(base_url=url, timeout=60, headers={"X-API-Key": "key-a"}) as c:
            job_id, n, size = largest_result(c, r)
        stop_process_group(worker)  # from here on, jobs stay queued
        print(f"largest result: {n} points of {size / 1024:.0f} kB ({n * size / 2**20:.0f} MiB of text)")
        page = httpx.get(f"{url}/v1/jobs/{job_id}", headers={"X-API-Key": "key-a"}, timeout=120)
        print(f"default page: {page.json()['page']['returned']} points, {len(page.content) / 2**20:.1f} MiB")
        assert api.pid is not None
        reads(url, api.pid, job_id, args.readers, args.pages)
        print("long-polls:")
        long_polls(url, args.polls)
    finally:
        stop_process_group(worker)
        api.stop()
        stop_process_group(server)


if __name__ == "__main__":
    main()
