"""What a sweep costs over HTTP, in warm single solves; and what the served curves add to a continuation.

1. The kernel_renormalization Q̄ sweep of the README's performance table, over HTTP on a live embedded server
   (``python -m service``): erf, N1 = 750, teacher data P = 1500, N0 = 100, 250 test points, 200 values of T
   log-spaced in [1e-4, 10], by grid and by continuation, each timed from submission to the whole result (every
   page of points and curves) as ``clients.Client`` waits for it, against a warm single solve (a solve of an
   uncached spec on the same server, after a first solve started its solve processes). Every repetition uses
   new data (another teacher seed),
   so nothing is cached or deduplicated; single solves and sweeps are interleaved and the best of each kept.
   Two ratios: of wall time, submission to the last page received, which is what a user waits for (the
   client holds each status request open with ``?wait=``, so the job's end is seen without a polling delay);
   and of the CPU time the server's processes spend (the API, its fork server, the solve and line processes,
   read from /proc), which a loaded machine changes much less. Each repetition runs when the rest of the machine
   is quiet and is run again (on new data) when another process used the CPU meanwhile (``benchmarks/idle.py``):
   on a shared machine a best of three can otherwise be three disturbed runs. Goal: at most 1.5 single solves by
   either method, in both.
2. The curves' share of a continuation sweep, in process: the same sweep with and without the curve tables
   (their resampling, special points and the theory's report at every kept row), JSON included, CPU time,
   best of interleaved runs on one BLAS thread, for the kernel sweep (from new data each time, as a job line
   computes it: data, kernel and spectrum included) and the README's rubin_cavity potential sweep. Goal: at
   most 5 %.

    python -m benchmarks.bench_sweep_cost [--repeats 5] [--quick] [--one-blas-thread] [--http-only]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any
from unittest import mock

import numpy as np

from benchmarks.common import Ratio, print_table
from benchmarks.idle import TICK, timed_when_quiet
from benchmarks.load import free_port, start_server
from clients import Client


def tree_cpu(root: int) -> float:
    """CPU seconds of a process and its descendants, finished ones included (from /proc: each process's own time
    and that of the children it reaped). Read when none of its short-lived children is running."""
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stats[int(entry)] = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
    parent = {pid: int(fields[1]) for pid, fields in stats.items()}

    def under(pid: int) -> bool:
        while pid > 1:
            if pid == root:
                return True
            pid = parent.get(pid, 0)
        return False

    return sum(sum(int(v) for v in fields[11:15]) for pid, fields in stats.items() if under(pid)) / TICK


def _settled(root: int, children: int) -> None:
    """Wait until the server is back to its resident processes (a finished solve or line has been reaped)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        live = sum(1 for e in os.listdir("/proc") if e.isdigit() and _descends(int(e), root))
        if live <= children:
            return
        time.sleep(0.02)


def settled_cpu(root: int, children: int) -> float:
    """:func:`tree_cpu` once the server is back to its resident processes and two reads 50 ms apart agree: a child
    being reaped between the reads of its own and its parent's times would be counted in neither."""
    _settled(root, children)
    last = tree_cpu(root)
    for _ in range(100):
        time.sleep(0.05)
        now = tree_cpu(root)
        if now == last:
            return now
        last = now
    return last


def _descends(pid: int, root: int) -> bool:
    try:
        while pid > 1:
            if pid == root:
                return True
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return False
    return False


def kernel_spec(seed: int, P: int = 1500) -> dict[str, Any]:
    return {"theory": "kernel_renormalization", "activation": "erf", "N1": P // 2, "T": 0.1,
            "data": {"kind": "teacher", "P": P, "P_test": 250, "N0": 100, "seed": seed}}


def temperatures(points: int = 200) -> list[float]:
    return [float(t) for t in np.geomspace(1e-4, 10.0, points)]


def _solve(lab: Client, spec: dict[str, Any]) -> float:
    t0 = time.perf_counter()
    body = lab.solve(spec)
    seconds = time.perf_counter() - t0
    assert body["converged"] and not body["cached"], body["diagnostics"]
    return seconds


def _sweep(lab: Client, spec: dict[str, Any], method: str, values: list[float]) -> tuple[float, dict]:
    """Seconds from submission to the whole result (every page of points and curves), as the client waits for it."""
    t0 = time.perf_counter()
    accepted = lab.submit_sweep(spec, "T", values, method=method)
    assert not accepted["deduplicated"]
    result = lab.wait(accepted["job_id"], progress=False)
    seconds = time.perf_counter() - t0
    assert len(result["points"]) == len(values)
    return seconds, result


def bench_http(repeats: int, P: int, points: int, one_thread: bool = False) -> list[Ratio]:
    port = free_port()
    threads = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"} if one_thread else {}
    proc = start_server(port, cache_size=64, extra_env=threads)
    url = f"http://127.0.0.1:{port}"
    values = temperatures(points)
    walls: dict[str, list[float]] = {"single": [], "grid": [], "continuation": []}
    cpu: dict[str, list[float]] = {"single": [], "grid": [], "continuation": []}
    disturbed, discarded, curves = 0, 0, 0
    seed = [1]
    try:
        with Client(url, timeout=600) as c:
            _solve(c, kernel_spec(1000, P))  # starts the server's solve processes
            resident = sum(1 for e in os.listdir("/proc") if e.isdigit() and _descends(int(e), proc.pid))

            def once(what: str) -> tuple[float, float, dict | None]:
                """(wall, server CPU, sweep result) of one repetition on new data (a repeated one as well)."""
                seed[0] += 1
                before = settled_cpu(proc.pid, resident)
                if what == "single":
                    seconds, result = _solve(c, kernel_spec(seed[0], P)), None
                else:
                    seconds, result = _sweep(c, kernel_spec(seed[0], P), what, values)
                return seconds, settled_cpu(proc.pid, resident) - before, result

            for _ in range(repeats):
                for what in ("single", "grid", "continuation"):
                    timed = timed_when_quiet(lambda w=what: once(w), measured=lambda: tree_cpu(proc.pid))
                    seconds, used, result = timed.value
                    walls[what].append(seconds)
                    cpu[what].append(used)
                    disturbed += not timed.quiet
                    discarded += timed.discarded
                    if result is not None and what == "continuation":
                        curves = sum(len(cv["parameter"]) for cv in result.get("curves") or [])
                print(f"[http] single {walls['single'][-1]:.2f} s; grid {walls['grid'][-1]:.2f} s; "
                      f"continuation {walls['continuation'][-1]:.2f} s")
    finally:
        proc.terminate()
        proc.wait(10)
    single, single_cpu = min(walls["single"]), min(cpu["single"])
    quiet = (f"every repetition on a quiet machine ({discarded} run again because other processes used the CPU)"
             if not disturbed else f"{disturbed} of {3 * repeats} repetitions disturbed by other processes")
    out = []
    for method in ("grid", "continuation"):
        times = walls[method]
        # each repetition's sweep over its own single solve, timed next to each other: a slow stretch of a shared
        # machine moves both, which the ratio of the bests does not see
        paired = statistics.median(t / s for t, s in zip(times, walls["single"], strict=True))
        note = (f"P = {P}, {points} values over HTTP: wall {min(times):.2f} s against a warm single solve's "
                f"{single:.2f} s ({min(times) / single:.2f} ×); CPU of the server's processes {min(cpu[method]):.2f} s "
                f"against {single_cpu:.2f} s; best of {repeats}, interleaved (median of the repetitions' own wall "
                f"ratios {paired:.2f} ×); {quiet}"
                f"{'; server on one BLAS thread' if one_thread else ''}")
        if method == "continuation":
            note += f"; {curves} curve points served"
        label = f"Q̄ {points}-point T sweep over HTTP ({method}{', one BLAS thread' if one_thread else ''})"
        out.append(Ratio(f"{label} / one warm single solve, wall", min(times) / single, 1.5, note=note))
        out.append(Ratio(f"{label} / one warm single solve, CPU", min(cpu[method]) / single_cpu, 1.5, note=note))
    return out


def _cpu(fn: Any) -> float:
    c0 = time.process_time()
    fn()
    return time.process_time() - c0


def curve_share(name: str, run: Any, repeats: int) -> Ratio:
    """CPU time of a continuation sweep with its curve tables over the same sweep without them, minus one."""
    import solvers.core.sweep as sweep_module
    from solvers.core.blas import one_blas_thread

    with_tables, without = [], []
    # One BLAS thread: idle threads spinning on a shared machine would count as CPU time of either run.
    with one_blas_thread():
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

    # The rubin sweep takes 70 ms: more repeats, for a best-of that the machine's noise does not decide.
    return [curve_share(f"Q̄ {points}-point T sweep (P = {P})", kernel_sweep, repeats),
            curve_share("rubin_cavity potential, 41 values of u", rubin_sweep, 5 * repeats)]


def measure(repeats: int = 5, quick: bool = False, one_thread: bool = False, http_only: bool = False) -> list[Ratio]:
    P, points = (400, 50) if quick else (1500, 200)
    http = bench_http(repeats, P, points, one_thread)
    return http if http_only else [*http, *bench_curves(max(repeats, 3), P, points)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small sizes, to check the script")
    parser.add_argument("--one-blas-thread", action="store_true",
                        help="the server on one BLAS thread (its eigendecompositions too): steadier under load")
    parser.add_argument("--http-only", action="store_true", help="only the sweeps over HTTP, not the curves' share")
    args = parser.parse_args()
    print_table(measure(args.repeats, args.quick, args.one_blas_thread, args.http_only))


if __name__ == "__main__":
    main()
