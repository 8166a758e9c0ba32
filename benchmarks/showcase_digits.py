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


def theory_curve(N1: int, P: int) -> dict[str, list[float]]:
    """D²(T) and its NNGP value on a dense T grid at width N1 (the equilibrium branch of a grid sweep)."""
    import numpy as np

    from solvers.core.options import SolverOptions
    from solvers.theories import get
    from solvers.theories.kernel_renormalization.spec import KernelRenormalizationSpec

    grid = [float(t) for t in np.geomspace(3e-3, 30.0, 41)]
    spec = KernelRenormalizationSpec.model_validate(model(N1, P), strict=False)
    out = get("kernel_renormalization").sweep(spec, "T", grid, "grid", SolverOptions())
    curve: dict[str, list[float]] = {"T": [], "D2": [], "D2_nngp": []}
    for t, cat in zip(out.values, out.catalogues, strict=True):
        eq = cat.equilibrium_branch
        if eq is None or eq.report is None:
            continue
        cd = eq.report.observables["class_distance"]
        curve["T"].append(float(t))
        curve["D2"].append(float(cd["D2"]))
        curve["D2_nngp"].append(float(cd["D2_nngp"]))
    return curve


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


def figure(results: dict[str, dict[str, Any]], curves: dict[str, dict[str, list[float]]], path: str, P: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.4))
    for k, (width, result) in enumerate(results.items()):
        color = f"C{k}"
        curve = curves[width]
        ax.plot(curve["T"], curve["D2"], color=color, linewidth=1.3, label=f"theory, N1 = {width}")
        pts = points(result)
        xs = [p["parameter"] for p in pts]
        ms = [estimate(p, "class_distance.D2") for p in pts]
        ax.errorbar(xs, [m[0] for m in ms], yerr=[2 * m[1] for m in ms], fmt="o", color=color, capsize=3,
                    label=f"sampled network, N1 = {width} (±2 s.e.)")
    first = next(iter(curves.values()))
    ax.plot(first["T"], first["D2_nngp"], color="gray", linestyle=":", label="NNGP (N1 → ∞)")
    ax.set_xscale("log")
    ax.set_xlabel("temperature T")
    ax.set_ylabel("class distance D² = uᵀK̂u")
    ax.set_title(f"digits 3 vs 8, one hidden erf layer, P = {P}", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


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
        curves = {str(w): theory_curve(w, args.P) for w in args.widths}
        stored = {"results": results, "curves": curves, "command": vars(args)}
        save(args.data, stored)
    print(table(stored["results"]))
    print(f"\ndevice: {points(next(iter(stored['results'].values())))[0]['device']}")
    figure(stored["results"], stored["curves"], args.figure, stored["command"]["P"])


if __name__ == "__main__":
    main()
