"""The network at standard scaling (s_a2 = 1/N, T = O(1)) beside every treatment of ``rubin_cavity``, along T.

At D = 30, N = 60, P = 200, s_a2 = 1/N, σ_w² = ½, ε = −0.3 (training inputs seed 0) the tree level's variance
term is not small: κ = s_a2 P/(T D) runs from 0.06 (T = 2) to 1.1 (T = 0.1). The posterior of the N × D hidden
weights (readout integrated out exactly) is sampled with NUTS at each T and set beside, on the same training
and test inputs, ``finite_sample`` of mean field, the standard cavity, the reduced tree level and the
unreduced tree level: R = E[ρ²], the training-set and fresh-input projections (b, c), the cubic fraction
1 − c/ε, with the gaps in Monte-Carlo standard errors.

    python -m benchmarks.bench_rubin_cavity_standard_scaling            # network, then theories (hours on 2 cores)
    python -m benchmarks.bench_rubin_cavity_standard_scaling --network-only   # the NUTS runs alone
    python -m benchmarks.bench_rubin_cavity_standard_scaling --retheory       # keep the draws, solve the theories
    python -m benchmarks.bench_rubin_cavity_standard_scaling --replot         # table and figure from docs/data
    python -m benchmarks.bench_rubin_cavity_standard_scaling --curves         # each treatment swept in T, traced
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from benchmarks.bench_rubin_cavity_network import sample_network
from benchmarks.rubin_cavity_standard_scaling_figure import figure, table
from benchmarks.showcase_common import load, save

DATA, FIGURE = "docs/data/rubin_cavity_standard_scaling.json", "docs/img/rubin_cavity_standard_scaling.png"
THEORY = "docs/data/rubin_cavity_standard_scaling_theory.json"
CURVES = "docs/data/rubin_cavity_standard_scaling_curves.json"
SIZE = {"N": 60, "P": 200, "D": 30, "s_a2": 1.0 / 60, "P_test": 500, "seed": 0, "scale": None}
#: The decisive low temperatures first, so that a run cut short keeps them.
TEMPERATURES = [0.2, 0.1, 0.5, 2.0, 0.15, 0.3, 1.0]
#: The unreduced tree level's continuation in T from the NNGP kernel (every network temperature is on it).
TRACE = [2.0, 1.5, 1.0, 0.7, 0.5, 0.4, 0.3, 0.25, 0.2, 0.175, 0.15, 0.125, 0.1, 0.075, 0.05]
#: Independent particle sets (sampler seeds) of the unreduced tree level: their spread is its Monte-Carlo error.
REPLICAS = 4
REDUCED = {
    "mean_field": {"treatment": "cavity", "scaling": "mean_field"},
    "standard_cavity": {"treatment": "cavity", "scaling": "standard"},
    "tree_level_reduced": {"treatment": "tree_level", "scaling": "mean_field"},
}
KEYS = ("R", "b", "c", "b_test", "c_test")
#: Every finite_sample treatment, swept in T by continuation as a user would ("method": "continuation").
TREATMENTS = {**REDUCED, "tree_level_unreduced": {"treatment": "tree_level_unreduced", "scaling": "mean_field"}}


def network_points(stored: dict[str, Any], args: argparse.Namespace) -> None:
    done = {pt["T"] for pt in stored["points"]}
    for T in args.temperatures:
        if T in done:
            continue
        print(f"T = {T}: sampling ...", file=sys.stderr, flush=True)
        stored["points"].append({"T": T, "network": sample_network(SIZE, T, args), "theory": {}})
        save(args.data, stored)  # every finished point is kept
        net = stored["points"][-1]["network"]
        print(f"T = {T}: {net['seconds']:.0f} s, converged {net['converged']} ({net['message']})",
              file=sys.stderr, flush=True)


def reduced_treatments(temperatures: list[float]) -> dict[str, Any]:
    """finite_sample of each reduced treatment at each T on the network's data (converged or not, as returned)."""
    from benchmarks.bench_rubin_cavity_network import spec
    from solvers.core.options import SolverOptions
    from solvers.theories import get

    theory = get("rubin_cavity")
    out: dict[str, Any] = {}
    for name, fields in REDUCED.items():
        rows = []
        for T in temperatures:
            cat = theory.solve(spec(SIZE, T, "finite_sample", **fields), SolverOptions())
            eq = cat.equilibrium_branch
            row: dict[str, Any] = {"T": T, "converged": bool(eq is not None and eq.converged)}
            if eq is not None and eq.report is not None:
                row.update({k: eq.report.order_parameters[k] for k in ("b", "c", "R")})
                notes = cat.notes.observables if cat.notes is not None else {}
                row.update({k: notes.get(k) for k in ("b_test", "c_test")})
            else:
                row["status"] = [a.status.value for a in cat.attempts]
            rows.append(row)
            print(f"{name} T = {T}: {row}", file=sys.stderr, flush=True)
        out[name] = rows
    return out


def treatment_curves(temperatures: list[float]) -> dict[str, Any]:
    """Each treatment's T sweep by continuation over ``temperatures``, as served (points, curves with their ends)."""
    import time

    from benchmarks.bench_rubin_cavity_network import spec
    from service.serialize import sweep_json
    from solvers.core.options import SolverOptions
    from solvers.theories import get

    theory = get("rubin_cavity")
    values = sorted(temperatures, reverse=True)
    out: dict[str, Any] = {"values": values}
    for name, fields in TREATMENTS.items():
        t0 = time.perf_counter()
        sweep = theory.sweep(spec(SIZE, values[0], "finite_sample", **fields), "T", values, "continuation",
                             SolverOptions())
        body = sweep_json("rubin_cavity", "T", sweep)
        points = [{k: pt[k] for k in ("parameter", "converged", "order_parameters", "observables")}
                  for pt in body["points"]]  # the equilibrium's values (its branches again are left out)
        out[name] = {"seconds": time.perf_counter() - t0, "curves": body["curves"], "points": points}
        ends = [(c["parameter"][0], c["parameter"][-1], c["message"], c["ends"]) for c in body["curves"] or []]
        print(f"{name}: {out[name]['seconds']:.0f} s, curves {ends}", file=sys.stderr, flush=True)
    return out


def unreduced(replicas: int) -> dict[str, Any]:
    """The unreduced tree level traced in T, ``replicas`` times with independent particles; mean and standard error."""
    import numpy as np

    from solvers.theories.rubin_cavity.finite_sample.unreduced.sampler import SamplerSettings
    from solvers.theories.rubin_cavity.finite_sample.unreduced.solve import Setting, trace

    setting = Setting(P=SIZE["P"], D=SIZE["D"], N=float(SIZE["N"]), s_a2=SIZE["s_a2"], sigma_w2=0.5,
                      epsilon=-0.3, P_test=SIZE["P_test"], seed=SIZE["seed"])
    runs = []
    for r in range(replicas):
        points = trace(setting, TRACE, SamplerSettings(seed=1000 * r))
        runs.append([{"T": p.T, "converged": p.converged, **p.observables, "diagnostics": p.diagnostics}
                     for p in points])
        print(f"unreduced replica {r}: {len(points)} points, last T = {points[-1].T}", file=sys.stderr, flush=True)
    rows = []
    for T in TRACE:
        found = [next((p for p in run if p["T"] == T and p["converged"]), None) for run in runs]
        good = [p for p in found if p is not None]
        row: dict[str, Any] = {"T": T, "converged_replicas": len(good)}
        for k in (*KEYS, "cubic_fraction", "cubic_fraction_test", "aligned_fraction", "perpendicular"):
            vals = np.array([p[k] for p in good])
            if len(vals):
                row[k] = float(vals.mean())
                row[k + "_stderr"] = float(vals.std(ddof=1) / np.sqrt(len(vals))) if len(vals) > 1 else None
        rows.append(row)
    return {"rows": rows, "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--temperatures", type=float, nargs="+", default=TEMPERATURES)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=250)
    parser.add_argument("--draws", type=int, default=350)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--apart", action="store_true", help="run the chains one at a time and join them")
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--figure", default=FIGURE)
    parser.add_argument("--network-only", action="store_true", help="sample the network and stop")
    parser.add_argument("--theory-only", action="store_true", help="solve the theories and stop")
    parser.add_argument("--theory-data", default=THEORY)
    parser.add_argument("--replicas", type=int, default=REPLICAS)
    parser.add_argument("--replot", action="store_true", help="table and figure from the stored results")
    parser.add_argument("--curves", action="store_true",
                        help="sweep every treatment in T by continuation into " + CURVES)
    parser.add_argument("--reduced-only", action="store_true",
                        help="solve the reduced treatments again into the stored theory results")
    args = parser.parse_args()
    if args.replot:
        print(table(load(args.data), load(args.theory_data)))
        figure(load(args.data), load(args.theory_data), args.figure)
        return
    if args.curves:
        save(CURVES, {"sizes": SIZE, **treatment_curves(TEMPERATURES)})
        return
    if args.reduced_only:
        stored_theory = load(args.theory_data)
        stored_theory["reduced"] = reduced_treatments(TEMPERATURES)
        save(args.theory_data, stored_theory)
        return
    if args.theory_only:
        stored_theory = {"sizes": SIZE, "unreduced": unreduced(args.replicas)}
        save(args.theory_data, stored_theory)
        stored_theory["reduced"] = reduced_treatments(TEMPERATURES)
        save(args.theory_data, stored_theory)
        return
    import jax

    jax.config.update("jax_enable_x64", True)
    try:
        stored = load(args.data)
    except FileNotFoundError:
        stored = {"sizes": SIZE, "command": vars(args), "points": []}
    network_points(stored, args)
    if args.network_only:
        return
    theory = {"sizes": SIZE, "unreduced": unreduced(args.replicas), "reduced": reduced_treatments(TEMPERATURES)}
    save(args.theory_data, theory)
    print(table(stored, theory))
    figure(stored, theory, args.figure)


if __name__ == "__main__":
    main()
