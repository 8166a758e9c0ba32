"""Experiments of the theories: effective samples per second per method, chains on 1 vs 2 RQ workers, and the
paper-size rubin_cavity network.

1. ESS per second per method (NUTS, MALA, unadjusted Langevin) on each theory's default experiment (the smallest
   network among its example specs, at the theory's example sizes; 4 chains (`--chains`), vectorised, float64): the
   smallest bulk ESS over every reported observable component (the figure the convergence rule judges) over the
   run's seconds (warmup and sampling; a run with another seed compiles first), and the same for the headline
   observable. Langevin runs at the step MALA adapted on the same network (an unadjusted chain has no rule of its
   own for its step; the papers pick one by hand). Ratios are against NUTS in the same run.
2. An 8-chain experiment (each chain one RQ job) on 2 worker processes against 1, on a real redis-server, through
   ``POST /v1/experiments``; goal ≥ 1.7×. JAX's persistent compilation cache is warmed by a first run with another
   seed, so both configurations load compiled samplers instead of compiling them.
3. The paper-size rubin_cavity network (D = 150, N = 700, P = 3000; 105 700 sampled weights): seconds per 1000
   unadjusted Langevin steps (one chain, float32 as on a GPU, and float64), measured over ``--paper-steps`` steps
   after compilation.

    python -m benchmarks.bench_experiment_theories [--only ess rq paper] [--paper-steps 50] [--rq-repeats 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import Ratio

ROOT = Path(__file__).resolve().parents[1]
RQ_GOAL = 1.7


def default_experiments() -> list[tuple[str, Any, Any]]:
    """(theory name, spec, sizes) of each theory's default experiment: the smallest network (fewest sampled
    parameters) among its example specs, at the examples' sizes."""
    from pydantic import TypeAdapter

    from service.schemas import ModelSpec
    from solvers.theories import registry
    from solvers.theories.base import ExperimentRefused

    adapter = TypeAdapter(ModelSpec)
    out = []
    for name, theory in sorted(registry().items()):
        found = []
        for example in theory.examples:
            spec = adapter.validate_python(dict(example.spec))
            try:
                sizes = theory.experiment_sizes_for(spec).model_validate(dict(theory.experiment_example_sizes(spec)))
                dim = theory.check_experiment(spec, sizes)["experiment_parameters"][1]
            except ExperimentRefused:
                continue
            found.append((dim, len(found), spec, sizes))
        if found:
            _, _, spec, sizes = min(found, key=lambda f: f[:2])
            out.append((name, spec, sizes))
    return out


def _rates(result: Any, headline: str) -> tuple[float, float]:
    est = result.estimates.get(headline)
    head = float("nan") if est is None else float(min(est.ess_bulk.flat) if hasattr(est.ess_bulk, "flat")
                                                  else est.ess_bulk)
    return result.sampler.min_ess_bulk / result.seconds, head / result.seconds


def bench_ess_per_method(warmup: int = 300, draws: int = 500, max_tree_depth: int = 10,
                         theories: tuple[str, ...] | None = None, chains: int = 4) -> list[Ratio]:
    import jax

    from solvers.experiments import SamplerOptions, sample
    from solvers.theories import get

    jax.config.update("jax_enable_x64", True)
    out = []
    for name, spec, sizes in default_experiments():
        if theories and name not in theories:
            continue
        target = get(name).experiment(spec, sizes, 0)
        headline = get(name).quantities.headline  # the theory's table names it: no fallback kept here
        if headline is None:
            raise ValueError(f"{name}'s quantity table names no headline quantity")
        runs: dict[str, Any] = {}
        for method in ("nuts", "mala", "langevin"):
            fields: dict[str, Any] = {"method": method}
            if method == "langevin":
                fields["step_size"] = runs["mala"].sampler.step_size
            if method == "nuts":
                fields["max_tree_depth"] = max_tree_depth
            options = SamplerOptions(chains=chains, warmup=warmup, draws=draws, block_size=draws, seed=1, **fields)
            sample(target, options.model_copy(update={"seed": 2}))  # compiles
            runs[method] = sample(target, options).result
        nuts_rate, _ = _rates(runs["nuts"], headline)
        for method, result in runs.items():
            worst, head = _rates(result, headline)
            row = Ratio(
                f"experiments: {name} {method} min-ESS/s / nuts min-ESS/s", worst / nuts_rate, 1.0, sense=">=",
                note=f"{worst:.1f} ESS/s (min over observables, ESS {result.sampler.min_ess_bulk:.0f}); {headline} "
                     f"{head:.1f} ESS/s; {result.seconds:.1f} s, {result.gradient_evaluations} gradients, max R-hat "
                     f"{result.sampler.max_rhat:.3f}, step {result.sampler.step_size:.3g}; dim {target.dim}")
            print(row.row(), flush=True)  # as it comes: a slow theory does not hide the others' rows
            out.append(row)
    return out


# ---- RQ workers -------------------------------------------------------------------------------------------
RQ_REQUEST: dict[str, Any] = {
    "model": {"theory": "rubin_cavity", "mode": "finite_sample", "P": 100, "D": 20, "N": 100.0, "s_a2": 0.0008,
              "T": 0.3, "P_test": 20},
    "sampler": {"method": "mala", "chains": 8, "warmup": 300, "draws": 1500, "thin": 3, "block_size": 500,
                "seed": 11},
}


def _workers(url: str, n: int, cache: str, log_dir: str) -> list[subprocess.Popen]:
    env = {**os.environ, "REDIS_URL": url, "SADDLELAB_JAX_CACHE_DIR": cache, "PYTHONWARNINGS": "ignore",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    procs = []
    for i in range(n):
        log = open(os.path.join(log_dir, f"worker-{n}-{i}.log"), "w")  # noqa: SIM115 -- the process holds it
        procs.append(subprocess.Popen([sys.executable, "-m", "service.worker", "--name", f"bench-{n}-{i}"], cwd=ROOT,
                                      env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
    return procs


def _wait_registered(client: Any, n: int, timeout: float = 60) -> None:
    from rq import Worker
    from rq.serializers import JSONSerializer

    deadline = time.monotonic() + timeout
    while len(Worker.all(connection=client, serializer=JSONSerializer)) < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{n} workers did not register within {timeout} s")
        time.sleep(0.1)


def _run_on_workers(api: Any, request: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    r = api.post("/v1/experiments", json=request)
    if r.status_code != 202:
        raise RuntimeError(r.text)
    job_id = r.json()["job_id"]
    while True:
        body = api.get(f"/v1/experiments/{job_id}").json()
        if body["status"] in ("finished", "failed", "cancelled"):
            break
        time.sleep(0.1)
    if body["status"] != "finished":
        raise RuntimeError(f"experiment {body['status']}: {body.get('error')}")
    return time.perf_counter() - t0, body["result"]


def bench_rq_workers(repeats: int = 2) -> Ratio:
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings
    from tests.redis_server import start_redis

    with tempfile.TemporaryDirectory() as tmp:
        server = start_redis(workdir=tmp)
        cache = os.path.join(tmp, "jax-cache")
        seconds: dict[int, float] = {}
        runs = 0
        try:
            settings = Settings(redis_url=server.url, api_keys=(), rate_limit_per_minute=0)
            with TestClient(create_app(settings)) as api:
                load_before = os.getloadavg()[0]
                for n in (1, 2) * repeats:  # alternated, best of ``repeats``: the machine is shared
                    procs = _workers(server.url, n, cache, tmp)
                    try:
                        _wait_registered(server.client(), n)
                        if not runs:  # fill the compilation cache first (another seed: another experiment)
                            _run_on_workers(api, {**RQ_REQUEST, "sampler": {**RQ_REQUEST["sampler"], "seed": 99}})
                        runs += 1
                        wall, _ = _run_on_workers(api, {**RQ_REQUEST, "sampler": {**RQ_REQUEST["sampler"],
                                                                                   "seed": RQ_REQUEST["sampler"]["seed"]
                                                                                   + runs}})
                        seconds[n] = min(seconds.get(n, float("inf")), wall)
                    finally:
                        for p in procs:
                            p.kill()
                            p.wait(10)
                        server.client().flushall()  # worker registrations of killed processes
                load_after = os.getloadavg()[0]
        finally:
            server.stop()
    return Ratio("experiments: 8-chain experiment, 2 RQ workers / 1 (speed-up)", seconds[1] / seconds[2], RQ_GOAL,
                 sense=">=", note=f"rubin_cavity finite_sample D = 20, N = 100, P = 100, MALA 8 chains × (300 + 4500) "
                                  f"steps; best of {repeats}: 1 worker {seconds[1]:.1f} s, 2 workers "
                                  f"{seconds[2]:.1f} s; "
                                  f"{os.cpu_count()} cores, load average {load_before:.1f} before / "
                                  f"{load_after:.1f} after")


# ---- paper-size rubin_cavity -------------------------------------------------------------------------------
#: the paper's main experiment (the spec's defaults: σ_w² = 0.5, ε = −0.3, T = 0.18, s_a2 = 8/700²)
PAPER = {"theory": "rubin_cavity", "mode": "finite_sample", "D": 150, "N": 700.0, "P": 3000}


def bench_paper_rubin(steps: int = 50) -> list[Ratio]:
    import jax
    from pydantic import TypeAdapter

    from service.schemas import ModelSpec
    from solvers.experiments import SamplerOptions, run_block, warmup
    from solvers.theories import get

    out = []
    for precision in ("float32", "float64"):
        jax.config.update("jax_enable_x64", precision == "float64")
        spec = TypeAdapter(ModelSpec).validate_python(PAPER)
        theory = get("rubin_cavity")
        sizes = theory.experiment_sizes_for(spec).model_validate({})
        target = theory.experiment(spec, sizes, 0)
        # one kept draw at the end: the estimators (test set, ρ histogram) are evaluated once, the steps timed
        options = SamplerOptions(method="langevin", step_size=1e-5, chains=1, warmup=0, draws=1, thin=steps,
                                 block_size=1, seed=0)
        start = warmup(target, options)
        run_block(target, options, start)  # compiles
        t0, c0 = time.perf_counter(), time.process_time()
        run_block(target, options, start)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        out.append(Ratio(f"experiments: rubin_cavity paper size (D = 150, N = 700, P = 3000), {precision}, "
                         "seconds per 1000 Langevin steps", 1000 * wall / steps, 0.0, unit="s", sense="report",
                         note=f"dim {target.dim}, 1 chain, {steps} steps timed after compilation; CPU "
                              f"{1000 * cpu / steps:.0f} s per 1000 steps; device "
                              f"{jax.devices()[0].platform}; load average {os.getloadavg()[0]:.1f}"))
    jax.config.update("jax_enable_x64", True)
    return out


def measure(only: tuple[str, ...] = ("ess", "rq", "paper"), paper_steps: int = 50, rq_repeats: int = 2,
            ess: dict[str, Any] | None = None) -> list[Ratio]:
    ratios: list[Ratio] = []
    if "ess" in only:
        ratios += bench_ess_per_method(**(ess or {}))
    if "rq" in only:
        if shutil.which("redis-server") is None:
            print("bench_experiment_theories: no redis-server on PATH, the RQ workers' ratio is not measured",
                  file=sys.stderr)
        else:
            ratios.append(bench_rq_workers(rq_repeats))
    if "paper" in only:
        ratios += bench_paper_rubin(paper_steps)
    return ratios


if __name__ == "__main__":
    from benchmarks.common import print_table

    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="+", choices=("ess", "rq", "paper"), default=["ess", "rq", "paper"])
    parser.add_argument("--paper-steps", type=int, default=50)
    parser.add_argument("--rq-repeats", type=int, default=2, help="alternations of 1 and 2 workers (best of)")
    parser.add_argument("--warmup", type=int, default=300, help="ess: warmup steps per chain")
    parser.add_argument("--draws", type=int, default=500, help="ess: draws per chain")
    parser.add_argument("--max-tree-depth", type=int, default=10, help="ess: NUTS's most trajectory doublings")
    parser.add_argument("--theories", nargs="+", default=None, help="ess: only these theories")
    parser.add_argument("--chains", type=int, default=4, help="ess: chains per run (vectorised)")
    args = parser.parse_args()
    ess = {"warmup": args.warmup, "draws": args.draws, "max_tree_depth": args.max_tree_depth,
           "theories": tuple(args.theories) if args.theories else None, "chains": args.chains}
    print_table(measure(tuple(args.only), args.paper_steps, args.rq_repeats, ess))
