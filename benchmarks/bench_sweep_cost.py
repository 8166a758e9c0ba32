"""What a sweep costs over HTTP, in warm single solves; and what the served curves add to a continuation.

1. The kernel_renormalization Q̄ sweep of the README's performance table, over HTTP on a live embedded server
   (``python -m service``): erf, N1 = 750, teacher data P = 1500, N0 = 100, 250 test points, 200 values of T
   log-spaced in [1e-4, 10], by grid and by continuation, each timed from submission to the whole result (every
   page of points and curves), against a warm single solve (a solve of an uncached spec on the same server,
   after a first solve started its solve processes). Every repetition uses new data (another teacher seed),
   so nothing is cached or deduplicated; single solves and sweeps are interleaved and the best of each kept.
   Goal: at most 1.5 single solves by either method.
2. The curves' share of a continuation sweep, in process: the same sweep with and without the curve tables
   (their resampling, special points and the theory's report at every kept row), JSON included, CPU time,
   best of interleaved runs, for the kernel sweep (from new data each time, as a job line computes it:
   data, kernel and spectrum included) and the README's rubin_cavity potential sweep. Goal: at most 5 %.

    python -m benchmarks.bench_sweep_cost [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any
from unittest import mock

import httpx
import numpy as np

from benchmarks.common import Ratio, print_table
from benchmarks.load import free_port, start_server

POLL = 0.01


def kernel_spec(seed: int, P: int = 1500) -> dict[str, Any]:
    return {"theory": "kernel_renormalization", "activation": "erf", "N1": P // 2, "T": 0.1,
            "data": {"kind": "teacher", "P": P, "P_test": 250, "N0": 100, "seed": seed}}


def temperatures(points: int = 200) -> list[float]:
    return [float(t) for t in np.geomspace(1e-4, 10.0, points)]


def _solve(c: httpx.Client, url: str, spec: dict[str, Any]) -> float:
    t0 = time.perf_counter()
    body = c.post(f"{url}/v1/solve", json={"model": spec}).raise_for_status().json()
    seconds = time.perf_counter() - t0
    assert body["converged"] and not body["cached"], body["diagnostics"]
    return seconds


def _sweep(c: httpx.Client, url: str, spec: dict[str, Any], method: str, values: list[float]) -> tuple[float, dict]:
    """Seconds from submission to the whole result (every page), and the result."""
    t0 = time.perf_counter()
    job = c.post(f"{url}/v1/sweeps", json={"model": spec, "parameter": "T", "values": values,
                                           "method": method}).raise_for_status().json()
    assert not job["deduplicated"]
    while True:
        status = c.get(f"{url}{job['status_url']}").raise_for_status().json()
        if status["status"] not in ("queued", "running"):
            break
        time.sleep(POLL)
    assert status["status"] == "finished", status.get("error")
    result = status["result"]
    for key, param, page in (("points", "offset", status.get("page")), ("curves", "curve_offset",
                                                                         status.get("curve_page"))):
        while page and page["next"] is not None:
            more = c.get(f"{url}{job['status_url']}", params={param: page["next"]}).raise_for_status().json()
            result[key].extend(more["result"][key])
            page = more["page" if key == "points" else "curve_page"]
    seconds = time.perf_counter() - t0
    assert len(result["points"]) == len(values)
    return seconds, result


def bench_http(repeats: int, P: int, points: int) -> list[Ratio]:
    port = free_port()
    proc = start_server(port, cache_size=64)
    url = f"http://127.0.0.1:{port}"
    values = temperatures(points)
    singles: list[float] = []
    sweeps: dict[str, list[float]] = {"grid": [], "continuation": []}
    curves = 0
    try:
        with httpx.Client(timeout=600) as c:
            _solve(c, url, kernel_spec(1000, P))  # starts the server's solve processes
            seed = 1
            for _ in range(repeats):
                for what in ("single", "grid", "continuation"):
                    seed += 1
                    if what == "single":
                        singles.append(_solve(c, url, kernel_spec(seed, P)))
                        continue
                    seconds, result = _sweep(c, url, kernel_spec(seed, P), what, values)
                    sweeps[what].append(seconds)
                    if what == "continuation":
                        curves = sum(len(cv["parameter"]) for cv in result["curves"])
                print(f"[http] single {singles[-1]:.2f} s; grid {sweeps['grid'][-1] if sweeps['grid'] else 0:.2f} s; "
                      f"continuation {sweeps['continuation'][-1] if sweeps['continuation'] else 0:.2f} s")
    finally:
        proc.terminate()
        proc.wait(10)
    single = min(singles)
    load = os.getloadavg()[0]
    out = []
    for method, times in sweeps.items():
        note = (f"P = {P}, {points} values over HTTP: sweep {min(times):.2f} s, warm single solve {single:.2f} s "
                f"(best of {repeats}, interleaved; load average {load:.1f})")
        if method == "continuation":
            note += f"; {curves} curve points served"
        out.append(Ratio(f"Q̄ {points}-point T sweep over HTTP ({method}) / one warm single solve", min(times) / single,
                         1.5, note=note))
    return out


def _cpu(fn: Any) -> float:
    c0 = time.process_time()
    fn()
    return time.process_time() - c0


def curve_share(name: str, run: Any, repeats: int) -> Ratio:
    """CPU time of a continuation sweep with its curve tables over the same sweep without them, minus one."""
    import solvers.core.sweep as sweep_module

    with_tables, without = [], []
    for _ in range(repeats):
        with_tables.append(_cpu(run))
        with mock.patch.object(sweep_module, "curve_tables", lambda *a, **k: ()):
            without.append(_cpu(run))
    share = min(with_tables) / min(without) - 1.0
    print(f"[curves] {name}: with curves {min(with_tables):.3f} s CPU, without {min(without):.3f} s CPU")
    return Ratio(f"curves' cost in a continuation sweep: {name}", 100 * share, 5.0, unit="%",
                 note=f"CPU, best of {repeats} interleaved: {min(with_tables):.3f} s with, {min(without):.3f} s "
                      f"without")


def bench_curves(repeats: int, P: int, points: int) -> list[Ratio]:
    from pydantic import TypeAdapter

    from service.schemas import ModelSpec
    from service.serialize import sweep_json
    from solvers.core.options import SolverOptions
    from solvers.theories import get
    from solvers.theories.kernel_renormalization import datasets, spectrum

    spec_of = TypeAdapter(ModelSpec).validate_python
    kernel, rubin = get("kernel_renormalization"), get("rubin_cavity")
    ks = spec_of(kernel_spec(0, P))
    rs = spec_of({"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 20})
    values = temperatures(points)

    def kernel_sweep() -> None:
        spectrum.clear_cache()  # a job line starts from nothing: data, kernel and spectrum are part of its cost
        datasets.clear_memo()
        sweep_json(kernel.name, "T", kernel.sweep(ks, "T", values, "continuation", SolverOptions()))

    def rubin_sweep() -> None:
        sweep_json(rubin.name, "u", rubin.sweep(rs, "u", list(np.linspace(20, 40, 41)), "continuation",
                                                SolverOptions()))

    return [curve_share(f"Q̄ {points}-point T sweep (P = {P})", kernel_sweep, repeats),
            curve_share("rubin_cavity potential, 41 values of u", rubin_sweep, repeats)]


def measure(repeats: int = 3, quick: bool = False) -> list[Ratio]:
    P, points = (400, 50) if quick else (1500, 200)
    return [*bench_http(repeats, P, points), *bench_curves(max(repeats, 3), P, points)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes, to check the script")
    args = parser.parse_args()
    print_table(measure(args.repeats, args.quick))


if __name__ == "__main__":
    main()
