"""Benchmarks of the ``matrix_denoising`` tables; every figure is measured in this run.

1. Building the overlap table for a new (γ, readout) (109 λ values, one vectorised quadrature of
   ρ_Y³ each) against the 10 s goal: wall clock, and CPU time (the figure that does not depend on
   what else the machine runs). Worst readout at each γ.
2. One table lookup against one direct quadrature of the spectral density (what the table saves the
   HCIZ solver, which asks for m_S thousands of times per sweep).
3. The table's worst error against direct quadrature at off-grid λ: speed not bought with accuracy.

    python -m benchmarks.bench_matrix_denoising [--gamma 0.37 1.7]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.common import Ratio, best_of, print_table
from solvers.theories.matrix_denoising.point import mmse_point, mmse_points
from solvers.theories.matrix_denoising.readouts import READOUTS
from solvers.theories.matrix_denoising.table import build_table

GOAL_SECONDS = 10.0


def bench_gamma(gamma: float) -> list[Ratio]:
    walls, cpus, lookups, errors = {}, {}, {}, {}
    for readout in READOUTS:
        w0, c0 = time.perf_counter(), time.process_time()
        table = build_table(gamma, readout)
        walls[readout], cpus[readout] = time.perf_counter() - w0, time.process_time() - c0
        lookup = best_of(lambda t=table: [t.overlap(3.7) for _ in range(200)], repeat=3) / 200
        direct = best_of(lambda r=readout: mmse_point(gamma, r, 3.7), repeat=3)
        lookups[readout] = lookup / direct
        g = table.lam_grid
        mids = np.sqrt(g[:-1] * g[1:])[::6]
        exact = np.array([p.mmse for p in mmse_points(gamma, readout, mids)])
        errors[readout] = float(np.max(np.abs(table.mmse(mids) - exact)))
    slow = max(walls, key=walls.get)
    slow_cpu = max(cpus, key=cpus.get)
    detail = ", ".join(f"{r} {walls[r]:.1f}s" for r in READOUTS)
    return [
        Ratio(f"matrix_denoising: new table, γ = {gamma:g}, wall / goal (worst: {slow})",
              walls[slow] / GOAL_SECONDS, 1.0, "×", note=detail),
        Ratio(f"matrix_denoising: new table, γ = {gamma:g}, CPU / goal (worst: {slow_cpu})",
              cpus[slow_cpu] / GOAL_SECONDS, 1.0, "×", note=", ".join(f"{r} {cpus[r]:.1f}s" for r in READOUTS)),
        Ratio(f"matrix_denoising: table lookup / direct quadrature, γ = {gamma:g} (worst readout)",
              max(lookups.values()), 0.01, "×"),
        Ratio(f"matrix_denoising: max abs(mmse_table − mmse_direct), γ = {gamma:g}",
              max(errors.values()), 1e-6, "", note="off-grid λ in [1e-2, 1e4]"),
    ]


def measure(gammas: tuple[float, ...] = (0.37, 1.7)) -> list[Ratio]:
    ratios: list[Ratio] = []
    for gamma in gammas:
        ratios.extend(bench_gamma(gamma))
    return ratios


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--gamma", type=float, nargs="*", default=[0.37, 1.7])
    print_table(measure(tuple(parser.parse_args().gamma)))
