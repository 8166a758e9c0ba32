"""Benchmarks of the ``rubin_cavity`` theory; every figure is measured in this run.

1. self_consistent: a 100-point sweep in T at the paper's setting (continuation, with the finite-D
   solution at every point and the transitions located): its wall time against the 2 s goal, and
   against 100 independent single solves; the same sweep at tree level (treatment tree_level), whose
   potential has no polynomial stationarity condition (a sign scan per state), against the cavity's.
2. finite_sample at P = 3000: one full solve against one ``numpy.linalg.solve`` of a 3000 x 3000
   system measured in the same run, and the share of the solve spent in linear algebra (kernel
   builds, which are matrix products, and Cholesky factorisations/solves).

    python -m benchmarks.bench_rubin_cavity [--P 3000]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np
from pydantic import TypeAdapter

from benchmarks.common import Ratio, best_of, print_table
from service.serialize import solution_json, sweep_json
from solvers.core.options import SolverOptions
from solvers.theories import get

THEORY = get("rubin_cavity")
SPEC = TypeAdapter(THEORY.spec_model)


def bench_sweep() -> list[Ratio]:
    spec = SPEC.validate_python({"theory": "rubin_cavity", "mode": "self_consistent"})
    values = list(np.linspace(0.1, 0.3, 100))
    THEORY.solve(spec, SolverOptions())  # imports and caches
    # Timed up to the JSON a user receives (the sweep's points and transitions as the service returns them).
    sweep = best_of(
        lambda: sweep_json(THEORY.name, "T", THEORY.sweep(spec, "T", values, "continuation", SolverOptions())), repeat=2
    )
    res = THEORY.sweep(spec, "T", values, "continuation", SolverOptions())
    single = (
        best_of(
            lambda: [
                solution_json(THEORY.name, THEORY.solve(spec.model_copy(update={"T": T}), SolverOptions()))
                for T in values[::10]
            ],
            repeat=2,
        )
        / 10
    )
    onset = next(sp for sp in res.special_points if sp.transition == "first_order")
    note = f"first order at T_c = {onset.parameter:.5f}, u_c = {onset.state['u']:.3f}"
    return [
        Ratio("rubin_cavity: 100-point T sweep, self_consistent", sweep, 2.0, "s", note=note),
        Ratio(
            "rubin_cavity: that sweep / 100 single solves",
            sweep / (100 * single),
            1.5,
            "×",
            note=f"single solve {1e3 * single:.1f} ms (saddle point + finite D)",
        ),
    ]


def bench_tree_level_sweep(cavity_seconds: float) -> Ratio:
    spec = SPEC.validate_python({"theory": "rubin_cavity", "mode": "self_consistent", "treatment": "tree_level"})
    values = list(np.linspace(0.1, 0.3, 100))
    THEORY.solve(spec, SolverOptions())
    seconds = best_of(
        lambda: sweep_json(THEORY.name, "T", THEORY.sweep(spec, "T", values, "continuation", SolverOptions())), repeat=1
    )
    res = THEORY.sweep(spec, "T", values, "continuation", SolverOptions())
    onset = next(sp for sp in res.special_points if sp.transition == "first_order")
    return Ratio("rubin_cavity: 100-point T sweep, tree level / cavity", seconds / cavity_seconds, 20.0, "×",
                 note=f"{seconds:.2f} s; first order at T_c = {onset.parameter:.5f}")


def bench_finite_sample(P: int) -> list[Ratio]:
    spec = SPEC.validate_python({"theory": "rubin_cavity", "mode": "finite_sample", "P": P, "P_test": 1000})
    rng = np.random.default_rng(0)
    A = rng.standard_normal((P, P))
    A = A @ A.T / P + np.eye(P)
    rhs = rng.standard_normal(P)
    ref = best_of(lambda: np.linalg.solve(A, rhs), repeat=3)
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    res = THEORY.solve(spec, SolverOptions())
    prof.disable()
    total = time.perf_counter() - t0
    ref = min(ref, best_of(lambda: np.linalg.solve(A, rhs), repeat=2))  # the machine may be busier now
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]

    def cumulative(module: str, names: tuple[str, ...]) -> float:
        return sum(v[3] for k, v in stats.items() if k[0].endswith(module) and k[2] in names)

    kernel = cumulative("finite_sample/kernel.py", ("kernels",))
    chol = cumulative("_decomp_cholesky.py", ("cho_factor", "cho_solve"))
    data = cumulative("finite_sample/data.py", ("draw",)) + cumulative("finite_sample/kernel.py", ("geometry",))
    note = (
        f"D = {spec.D}, {res.iterations} Newton steps, converged {res.converged}; "
        f"solve {total:.1f} s, numpy.linalg.solve {ref:.2f} s"
    )
    return [
        Ratio(f"rubin_cavity: finite_sample P={P} / numpy.linalg.solve({P})", total / ref, 40.0, "×", note=note),
        Ratio(
            "rubin_cavity: finite_sample share in kernel products + Cholesky + data Gram",
            (kernel + chol + data) / total,
            0.9,
            "",
            sense=">=",
            note=f"kernels {kernel / total:.2f}, Cholesky {chol / total:.2f}, data/Gram {data / total:.2f}",
        ),
    ]


def measure(P: int = 3000) -> list[Ratio]:
    sweep = bench_sweep()
    return [*sweep, bench_tree_level_sweep(sweep[0].value), *bench_finite_sample(P)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--P", type=int, default=3000)
    print_table(measure(parser.parse_args().P))
