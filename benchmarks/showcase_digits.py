"""Showcase: D²(T) of the sampled finite network on digits 3 vs 8 against kernel renormalisation, at two widths.

One hidden erf layer, λ0 = λ1 = 1, on scikit-learn's digits 3 (y = +1) against 8 (y = −1), P = 100 training
images by default (the README's theory example, ``python -m solvers.theories.kernel_renormalization.digits_example``,
has P = 250); the network of ``solvers/theories/kernel_renormalization/experiment.py`` (readout integrated out
exactly, the first-layer weights sampled with NUTS). The sampled class distance is uᵀK̂u with the network's own
feature kernel K̂ at every draw: every term is kept, nothing is expanded in 1/N1. Lines: the theory's D²(T) at each
width (and the NNGP value); points: the experiment with ±2 Monte-Carlo standard errors. Prints a markdown table,
writes the figure and the raw results.

    python -m benchmarks.showcase_digits           # N1 = 10 and 40, P = 100 (15-20 min, 2 shared cores)
    python -m benchmarks.showcase_digits --P 250 --widths 50 200 --chains 4 --warmup 1000 --draws 1000
                                                   # the README's theory example's sizes
    python -m benchmarks.showcase_digits --replot  # the figure again from docs/data/experiment_digits.json
                                                   # (the theory's lines computed again: seconds)
"""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks.showcase_common import add_run_arguments, estimate, fmt, load, points, run, save, theory_value

TEMPERATURES = [0.01, 0.1, 0.3, 1.0, 10.0]
WIDTHS = [10, 40]
DATA, FIGURE = "docs/data/experiment_digits.json", "docs/img/experiment_digits.png"
OBSERVABLES = ("class_distance.D2", "Qbar", "generalization_error")


def model(N1: int, P: int) -> dict[str, Any]:
    return {"theory": "kernel_renormalization", "activation": "erf", "N1": N1, "T": 0.1, "lambda0": 1.0,
            "lambda1": 1.0, "data": {"kind": "digits", "classes": [3, 8], "P": P, "P_test": 100, "seed": 0}}


def request(args: argparse.Namespace, N1: int) -> dict[str, Any]:
    return {
        "model": model(N1, args.P), "sizes": {"test_points": 10}, "parameter": "T", "values": args.temperatures,
        "sampler": {"method": "nuts", "chains": args.chains, "warmup": args.warmup, "draws": args.draws,
                    "seed": args.seed},
    }


def theory_sweep(N1: int, P: int) -> dict[str, Any]:
    """The theory's T sweep at width N1 on a dense log grid (the lines of the figure), as ``/v1/sweeps`` returns it."""
    import numpy as np

    from service.jobs.in_process import run_job

    grid = [float(t) for t in np.geomspace(3e-3, 30.0, 41)]
    return run_job({"model": model(N1, P), "parameter": "T", "values": grid, "method": "grid"})


def table(results: dict[str, dict[str, Any]]) -> str:
    rows = ["| N1 | T | D² experiment (R-hat, ESS) | D² theory | z | Q̄ experiment | Q̄ theory | ε_g experiment | "
            "ε_g theory | converged (worst R-hat, ESS) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for width, result in results.items():
        for pt in points(result):
            cells = []
            for name in OBSERVABLES:
                mean, se, rhat, ess = estimate(pt, name)
                th = theory_value(pt, "equilibrium", name)
                if th is None:
                    th = next((theory_value(pt, b, name) for b in pt["theory"]["comparison"]), None)
                cells.append((mean, se, th, rhat, ess))
            (d2, d2se, d2th, d2rhat, d2ess), (q, qse, qth, _, _), (e, ese, eth, _, _) = cells
            z = (d2 - d2th) / d2se if d2th is not None and d2se > 0 else float("nan")
            s = pt["sampler"]
            rows.append(f"| {width} | {pt['parameter']:g} | {fmt(d2, d2se)} ({d2rhat:.3f}, {d2ess:.0f}) | {d2th:.4f} | "
                        f"{z:+.1f} | {fmt(q, qse, 3)} | {qth:.3f} | {fmt(e, ese)} | {eth:.4f} | {pt['converged']} "
                        f"({s['max_rhat']:.3f}, {s['min_ess_bulk']:.0f}) |")
    return "\n".join(rows)


def figure(results: dict[str, dict[str, Any]], sweeps: dict[str, dict[str, Any]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")

    from clients import plot, series
    from solvers.theories import get

    symbols = {q.name: q.to_json() for q in get("kernel_renormalization").quantities}  # as GET /v1/theories serves
    fig, ax = plot.figure(6.5, aspect=0.68)
    for k, (width, result) in enumerate(results.items()):
        plot.theory_vs_experiment({f"sampled network, N1 = {width}": result}, "class_distance.D2", ax,
                                  sweep=sweeps[width], sigmas=2, logx=True, symbols=symbols, transitions=False,
                                  equilibrium=False, color=f"C{k}", theory_label=f"theory, N1 = {width}",
                                  caption=["N1"] if k == 0 else False)
    T, nngp = series(next(iter(sweeps.values())), "class_distance.D2_nngp")
    ax.plot(T, nngp, color="0.5", linestyle=":", label="NNGP (N1 → ∞)")
    ax.legend(fontsize="small")
    plot.save(fig, path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--widths", type=int, nargs="+", default=WIDTHS)
    parser.add_argument("--temperatures", type=float, nargs="+", default=TEMPERATURES)
    parser.add_argument("--P", type=int, default=100)
    add_run_arguments(parser, warmup=250, draws=400, data=DATA, figure=FIGURE)
    args = parser.parse_args()
    if args.replot:
        stored = load(args.data)
    else:
        results = {str(w): run(request(args, w), f"N1={w}") for w in args.widths}
        stored = {"results": results, "command": vars(args)}
        save(args.data, stored)
    print(table(stored["results"]))
    print(f"\ndevice: {points(next(iter(stored['results'].values())))[0]['device']}")
    # the theory's lines as served now (seconds; stored results of earlier versions kept them as "curves")
    sweeps = {w: theory_sweep(int(w), stored["command"]["P"]) for w in stored["results"]}
    figure(stored["results"], sweeps, args.figure)


if __name__ == "__main__":
    main()
