"""Showcase: the hciz_mlp learning curve of the sampled finite network beside the theory's two branches.

One hidden tanh layer, γ = 1/2, Δ = 0.1, readout v = 1, Gaussian weights, Bayes-optimal posterior (the network of
``solvers/theories/hciz_mlp/experiment.py``) at input dimension d, sampled with NUTS from the prior and from the
teacher at each α of the learning curve; the theory's universal and specialised branches (all branches of the
continuation in α) as lines. Prints a markdown table (estimates with Monte-Carlo error, R-hat, ESS, the gap to
the branch the network sits on), writes the figure and the raw results.

    python -m benchmarks.showcase_hciz                       # d = 20 (about 10 min on 2 shared cores)
    python -m benchmarks.showcase_hciz --d 100 --chains 4 --warmup 1000 --draws 1000    # the paper-like size
    python -m benchmarks.showcase_hciz --replot              # the figure again from docs/data/experiment_hciz.json
                                                             # (the theory's lines computed again: seconds)
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from benchmarks.showcase_common import add_run_arguments, estimate, fmt, load, points, run, save, theory_value

MODEL = {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "Delta": 0.1, "alpha": 1.0, "readout": "ones"}
ALPHAS = [1.0, 2.0, 3.0, 3.5, 4.0, 5.0, 6.0]
INITS = ("prior", "teacher")
BRANCHES = ("universal", "specialized")
DATA, FIGURE = "docs/data/experiment_hciz.json", "docs/img/experiment_hciz.png"


def request(args: argparse.Namespace, init: str) -> dict[str, Any]:
    return {
        "model": MODEL, "sizes": {"d": args.d, "n_test": args.n_test}, "network_seed": args.network_seed,
        "parameter": "alpha", "values": args.alphas,
        "sampler": {"method": "nuts", "chains": args.chains, "warmup": args.warmup, "draws": args.draws,
                    "seed": args.seed, "init": init},
    }


def theory_sweep(alphas: list[float]) -> dict[str, Any]:
    """Every branch of the theory along a dense α grid (the lines of the figure), as ``/v1/sweeps`` returns it (its
    traced curves included)."""
    import numpy as np

    from service.jobs.in_process import run_job

    grid = [float(a) for a in np.linspace(0.25, max(alphas) + 0.5, 80)]
    return run_job({"model": MODEL, "parameter": "alpha", "values": grid})


def nearest_branch(point: dict[str, Any]) -> str:
    """The branch whose R2 is closest to the sampled one (R2 is invariant under relabelling the hidden units)."""
    r2 = estimate(point, "R2")[0]
    known = [(abs(r2 - v), b) for b in BRANCHES if (v := theory_value(point, b, "R2")) is not None]
    return min(known)[1]


def table(results: dict[str, dict[str, Any]]) -> str:
    """One row per α and initialisation: each figure with its Monte-Carlo error, R-hat and bulk ESS."""
    rows = ["| α | init | ε experiment (R-hat, ESS) | ε universal | ε specialised | gap to nearest branch | "
            "R2 experiment (R-hat, ESS) | R2 univ. / spec. | Q matched | converged (worst observable) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for init, result in results.items():
        for pt in points(result):
            eps, eps_se, eps_rhat, eps_ess = estimate(pt, "generalization_error")
            r2, r2_se, r2_rhat, r2_ess = estimate(pt, "R2")
            qm, qm_se, _, _ = estimate(pt, "Q_matched")
            near = nearest_branch(pt)
            gap = eps - (theory_value(pt, near, "generalization_error") or math.nan)
            th = {b: theory_value(pt, b, "generalization_error") for b in BRANCHES}
            r2th = "/".join("—" if (v := theory_value(pt, b, "R2")) is None else f"{v:.3f}" for b in BRANCHES)
            s = pt["sampler"]
            rows.append(
                f"| {pt['parameter']:g} | {init} | {fmt(eps, eps_se, 5)} ({eps_rhat:.3f}, {eps_ess:.0f}) | "
                + " | ".join("—" if th[b] is None else f"{th[b]:.5f}" for b in BRANCHES)
                + f" | {gap:+.5f} ({near}, {gap / eps_se:+.0f} s.e.) | {fmt(r2, r2_se, 3)} ({r2_rhat:.3f}, "
                f"{r2_ess:.0f}) | {r2th} | {fmt(qm, qm_se, 3)} | {pt['converged']} (R-hat {s['max_rhat']:.2f}, "
                f"ESS {s['min_ess_bulk']:.0f}) |")
    return "\n".join(rows)


def figure(results: dict[str, dict[str, Any]], sweep: dict[str, Any], path: str, d: int) -> None:
    import matplotlib

    matplotlib.use("Agg")

    from clients import plot
    from solvers.theories import get

    symbols = {q.name: q.to_json() for q in get("hciz_mlp").quantities}  # the table GET /v1/theories serves
    fig, axes = plot.figure(12.0, aspect=0.8, ncols=2)
    labelled = {f"network at d = {d}, from the {k}": v for k, v in results.items()}
    plot.theory_vs_experiment(labelled, "generalization_error", axes[0], sweep=sweep, branches=list(BRANCHES),
                              sigmas=2, symbols=symbols)
    plot.theory_vs_experiment(labelled, "R2", axes[1], sweep=sweep, branches=list(BRANCHES), sigmas=2,
                              symbols=symbols, caption=False)
    axes[0].get_legend().remove()  # one legend, under the right panel
    plot.panel_letters(axes)
    plot.save(fig, path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--alphas", type=float, nargs="+", default=ALPHAS)
    parser.add_argument("--n-test", type=int, default=1000)
    parser.add_argument("--network-seed", type=int, default=0)
    add_run_arguments(parser, warmup=300, draws=500, data=DATA, figure=FIGURE)
    args = parser.parse_args()
    if args.replot:
        stored = load(args.data)
        stored["sweep"] = theory_sweep(stored["command"]["alphas"])  # the theory's lines as served now (seconds)
    else:
        results = {init: run(request(args, init), f"init={init}") for init in INITS}
        stored = {"d": args.d, "results": results, "sweep": theory_sweep(args.alphas), "command": vars(args)}
        save(args.data, stored)
    print(table(stored["results"]))
    print(f"\ndevice: {points(stored['results']['prior'])[0]['device']}")
    figure(stored["results"], stored["sweep"], args.figure, stored["d"])


if __name__ == "__main__":
    main()
