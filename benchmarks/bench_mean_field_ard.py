"""Benchmarks of the ``mean_field_ard`` theory; every figure is measured in this run.

1. Reduced solver: a 100-point κ sweep of MF-ARD (k = 2, d = 35, N = 512, population limit) by
   continuation with its spinodals and first-order point located — wall time against the 2 s goal and
   against 100 independent solves; the same sweep at k = 4 with 20 points (the paper's k).
2. Particle solver at the paper's parity setting d = 35, k = 4, N = 512 (P = 2000 generated points):
   seconds per solve and particle-steps per solve, next to the 7.5·10⁶ steps of the paper's Algorithm 1.

    python -m benchmarks.bench_mean_field_ard [--skip-k4] [--particles 1024]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from benchmarks.common import Ratio, print_table
from solvers.core.options import SolverOptions
from solvers.theories import get
from solvers.theories.mean_field_ard import particles
from solvers.theories.mean_field_ard.data import dataset
from solvers.theories.mean_field_ard.particle_report import physics

THEORY = get("mean_field_ard")
PAPER_STEPS = 7.5e6


def spec(**kw: object):
    base = {"theory": "mean_field_ard", "model": "mf_ard", "d": 35, "N": 512, "kappa": 0.05,
            "target": {"kind": "parity", "k": 2}}
    return THEORY.spec_model.model_validate(base | kw)


def bench_sweep(k: int, num: int, lo: float, hi: float) -> list[Ratio]:
    s = spec(target={"kind": "parity", "k": k}, kappa=lo)
    values = list(np.linspace(lo, hi, num))
    THEORY.solve(s, SolverOptions())  # compile and cache
    t0 = time.perf_counter()
    out = THEORY.sweep(s, "kappa", values, "continuation", SolverOptions())
    sweep = time.perf_counter() - t0
    t0 = time.perf_counter()
    for v in values[:: max(1, num // 10)]:
        THEORY.solve(s.model_copy(update={"kappa": float(v)}), SolverOptions())
    single = (time.perf_counter() - t0) / len(values[:: max(1, num // 10)])
    tr = ", ".join(f"{sp.transition} {sp.parameter:.5f}" for sp in out.special_points)
    return [
        Ratio(f"mean_field_ard: {num}-point κ sweep, MF-ARD k = {k}", sweep, 2.0 * num / 100, "s", note=tr),
        Ratio(f"mean_field_ard: that sweep / {num} single solves", sweep / (num * single), 1.5, "×",
              note=f"single solve {single:.2f} s (both starts)"),
    ]


def bench_particles(n: int) -> list[Ratio]:
    s = THEORY.spec_model.model_validate({
        "theory": "mean_field_ard", "model": "mf", "d": 35, "N": 512, "kappa": 0.02, "P": 2000,
        "solver": "particles", "target": {"kind": "parity", "k": 4}, "data": {"seed": 0, "P_test": 2000},
        "particles": {"n": n, "inner_steps": 100, "average_steps": 50, "outer_iterations": 30, "warmup": 200},
    })
    data = dataset(s)
    rho0 = np.full(s.d, s.d / s.sigma_w2)
    run = lambda: particles.solve(physics(s), data.X, data.y, rho0, None, s.particles, "symmetric",  # noqa: E731
                                  [0, 1, 2, 3], s.seed_asymmetry)
    run()  # compile
    t0 = time.perf_counter()
    res = run()
    secs = time.perf_counter() - t0
    note = (f"{res.particle_steps:.3g} particle-steps ({res.particle_steps / PAPER_STEPS:.2f}× the paper's 7.5e6), "
            f"{res.iterations} outer steps, converged={res.converged}, "
            f"residual {res.residual:.2e} ± {res.mc_error:.1e}")
    return [
        Ratio("mean_field_ard: particle solve, d=35 k=4 N=512 P=2000", secs, 120.0, "s", note=note),
        Ratio("mean_field_ard: particle-steps per second", res.particle_steps / secs, 1e5, "/s", sense=">="),
    ]


def measure(skip_k4: bool = False, n: int = 1024) -> list[Ratio]:
    warnings.simplefilter("ignore", RuntimeWarning)
    out = bench_sweep(2, 100, 0.02, 0.15)
    if not skip_k4:
        out += bench_sweep(4, 20, 0.012, 0.04)
    out += bench_particles(n)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-k4", action="store_true")
    ap.add_argument("--particles", type=int, default=1024)
    args = ap.parse_args()
    print_table(measure(args.skip_k4, args.particles))


if __name__ == "__main__":
    main()
