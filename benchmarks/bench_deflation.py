"""What deflation costs: a deflated search and a deflated sweep as multiples of a starts-only solve and sweep.

All in process, CPU time, best of interleaved repetitions, measured in one run (no cache: the theory is called
directly). Each pair uses the same starts (``uninformative`` alone), so the ratio is what the deflated search adds:

1. hciz_mlp (tanh, γ = ½, α = 4, Δ = 0.1) and rubin_cavity's potential (u = 30): one solve with
   ``search.method = deflation`` (budget 8, the default) against the starts-only solve; the branches each finds.
2. hciz_mlp in α ∈ [2, 6], 41 values: a deflated sweep (budget 8, and budget 3) against the starts-only
   continuation sweep, and the deflated sweep against a continuation from every start (what a user would
   otherwise run); the curves each traces.
3. rubin_cavity's potential in u ∈ [20, 40], 41 values: the diagram at depth 2 against continuation.

These are figures to report, not goals: a deflated search costs about budget + found deflated solves, each
capped at 50 Newton iterations, and a deflated sweep runs one such search per requested value.

    python -m benchmarks.bench_deflation [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import TypeAdapter

from benchmarks.common import Ratio, print_table
from solvers.core.options import SolverOptions
from solvers.theories import get

HCIZ = {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 4.0, "Delta": 0.1}
POTENTIAL = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 30.0}


def options(**search: Any) -> SolverOptions:
    return SolverOptions.model_validate({"search": {"starts": ["uninformative"], **search}})


def spec(model: dict[str, Any]) -> Any:
    return TypeAdapter(get(model["theory"]).spec_model).validate_python(model)


def cpu_best(fns: dict[str, Callable[[], Any]], repeats: int) -> tuple[dict[str, float], dict[str, Any]]:
    """Best CPU seconds of each function over ``repeats`` interleaved rounds, and each one's last result."""
    best = {k: float("inf") for k in fns}
    out: dict[str, Any] = {}
    for _ in range(repeats):
        for k, fn in fns.items():
            c0 = time.process_time()
            out[k] = fn()
            best[k] = min(best[k], time.process_time() - c0)
    return best, out


def solves(repeats: int) -> list[Ratio]:
    ratios = []
    for model in (HCIZ, POTENTIAL):
        theory, s = get(model["theory"]), spec(model)
        t, cats = cpu_best({"starts": lambda th=theory, sp=s: th.solve(sp, options()),
                            "deflation": lambda th=theory, sp=s: th.solve(sp, options(method="deflation"))}, repeats)
        d = cats["deflation"].search
        ratios.append(Ratio(
            f"deflated solve / starts-only solve, {model['theory']}", t["deflation"] / t["starts"], 0, sense="report",
            note=f"{t['starts'] * 1e3:.1f} ms vs {t['deflation'] * 1e3:.1f} ms CPU; branches "
                 f"{len(cats['starts'].branches)} vs {len(cats['deflation'].branches)}; "
                 f"{d.deflated_solves} deflated solves, {d.fruitless} fruitless (budget {d.budget})"))
    return ratios


def sweeps(repeats: int) -> list[Ratio]:
    theory, s = get("hciz_mlp"), spec(HCIZ)
    alphas = list(np.linspace(2.0, 6.0, 41))
    t, sw = cpu_best({
        "starts": lambda: theory.sweep(s, "alpha", alphas, "continuation", options()),
        "all": lambda: theory.sweep(s, "alpha", alphas, "continuation", SolverOptions()),
        "deflated": lambda: theory.sweep(s, "alpha", alphas, "deflated", options()),
        "deflated3": lambda: theory.sweep(s, "alpha", alphas, "deflated", options(budget=3)),
    }, repeats)
    curves = {k: len(v.curves) for k, v in sw.items()}
    out = [
        Ratio("deflated sweep / starts-only continuation, hciz_mlp 41 α", t["deflated"] / t["starts"], 0,
              sense="report", note=f"{t['starts']:.2f} s vs {t['deflated']:.2f} s CPU; curves {curves['starts']} vs "
                                   f"{curves['deflated']} (budget 8)"),
        Ratio("deflated sweep (budget 3) / starts-only continuation, hciz_mlp 41 α", t["deflated3"] / t["starts"], 0,
              sense="report", note=f"{t['deflated3']:.2f} s CPU; curves {curves['deflated3']}"),
        Ratio("deflated sweep / continuation from every start, hciz_mlp 41 α", t["deflated"] / t["all"], 0,
              sense="report", note=f"{t['all']:.2f} s CPU; curves {curves['all']}"),
    ]
    rubin, p = get("rubin_cavity"), spec(POTENTIAL)
    us = list(np.linspace(20.0, 40.0, 41))
    t, sw = cpu_best({
        "continuation": lambda: rubin.sweep(p, "u", us, "continuation", options()),
        "diagram": lambda: rubin.sweep(p, "u", us, "diagram", options(depth=2)),
    }, repeats)
    out.append(Ratio("diagram (depth 2) / continuation, rubin_cavity potential 41 u", t["diagram"] / t["continuation"],
                     0, sense="report", note=f"{t['continuation']:.2f} s vs {t['diagram']:.2f} s CPU; curves "
                                              f"{len(sw['continuation'].curves)} vs {len(sw['diagram'].curves)}"))
    return out


def measure(repeats: int = 3) -> list[Ratio]:
    return [*solves(repeats), *sweeps(repeats)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    print_table(measure(parser.parse_args().repeats))
