"""What a continuation sweep costs against a grid of the same values, in process.

The mean_field_ard sweeps behind Theorem 4.1's κ_c ∝ d^(−1/2): plain MF, parity k = 4, N = 512, population limit,
κ over 60 log-spaced values in [1e-3, 1], at d = 16, 32 and 64. Each sweep runs on a fresh theory object (nothing
memoised between the two methods), one after the other in one process; the figure is the ratio of the CPU time of
the continuation sweep (traced curve, curve tables, special points) to the grid's (warm-started solves at every
value), CPU time of the whole process (JAX's threads included), which a loaded machine changes much less than wall
time. The number of single-neuron laws each computed (the theory's unit of work) is in the note.
Goal: at most 3× at every d.

    python -m benchmarks.bench_continuation_cost [--d 16 32 64] [--values 60]
"""

from __future__ import annotations

import argparse
import time
from typing import Any
from unittest import mock

import numpy as np

from benchmarks.common import Ratio, print_table
from solvers.core.options import SolverOptions
from solvers.theories import get
from solvers.theories.mean_field_ard import population


def _spec(d: int) -> Any:
    return get("mean_field_ard").spec_model.model_validate({
        "theory": "mean_field_ard", "model": "mf", "d": d, "N": 512, "kappa": 1e-3,
        "target": {"kind": "parity", "k": 4}})


def _sweep(d: int, method: str, values: list[float]) -> tuple[float, int]:
    """(CPU seconds, laws computed) of one sweep from a fresh theory."""
    laws = [0]
    law = population.PopulationParity._law

    def counted(self: Any, x: Any, central_basin: bool) -> Any:
        laws[0] += 1
        return law(self, x, central_basin)

    theory = get("mean_field_ard")
    spec = _spec(d)
    with mock.patch.object(population.PopulationParity, "_law", counted):
        c0 = time.process_time()
        theory.sweep(spec, "kappa", values, method, SolverOptions())
        return time.process_time() - c0, laws[0]


def measure(dims: tuple[int, ...] = (16, 32, 64), points: int = 60) -> list[Ratio]:
    values = [float(v) for v in np.logspace(-3, 0, points)]
    out = []
    for d in dims:
        _sweep(d, "grid", values[:2])  # compile and warm what every sweep at this d shares (JAX, the fixed grids)
        grid, grid_laws = _sweep(d, "grid", values)
        cont, cont_laws = _sweep(d, "continuation", values)
        out.append(Ratio(
            f"mean_field_ard k = 4 κ sweep, d = {d}: continuation / grid ({points} values)", cont / grid, 3.0,
            note=f"CPU {cont:.1f} s against {grid:.1f} s; {cont_laws} laws against {grid_laws}"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--d", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--values", type=int, default=60)
    args = parser.parse_args()
    print_table(measure(tuple(args.d), args.values))


if __name__ == "__main__":
    main()
