"""``python -m benchmarks``: every performance ratio of SaddleLab, measured in one run, with its goal."""

from __future__ import annotations

import importlib
import sys
import traceback

from benchmarks.common import Ratio, print_table

MODULES = [
    "benchmarks.bench_kernel_renormalization",
    "benchmarks.bench_sweep_cost",
    "benchmarks.bench_continuation_cost",
    "benchmarks.bench_hciz_mlp",
    "benchmarks.bench_matrix_denoising",
    "benchmarks.bench_rubin_cavity",
    "benchmarks.bench_service",
    "benchmarks.bench_phase_diagram",
    "benchmarks.bench_job_load",
    "benchmarks.bench_mean_field_ard",
    "benchmarks.bench_phase_lines",
    "benchmarks.bench_experiments",
    "benchmarks.bench_experiment_theories",
    "benchmarks.bench_deflation",
]


def main() -> int:
    ratios: list[Ratio] = []
    failed = []
    for name in MODULES:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        try:
            ratios.extend(importlib.import_module(name).measure())
        except Exception:
            traceback.print_exc()
            failed.append(name)
    print_table(ratios)
    if failed:
        print(f"\nfailed: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
