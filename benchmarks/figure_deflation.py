"""The docs' figures of deflated continuation and of the automatic branch diagram, each drawn from the curves the
sweep served, as any continuation's.

    python -m benchmarks.figure_deflation docs/img          # seconds

- ``deflated_continuation.png``: hciz_mlp (tanh, γ = ½, Δ = 0.1) in α from the uninformative start alone. Plain
  continuation traces the universal branch only; deflated continuation finds the specialised pair (disconnected
  from it) and with it the spinodal and the first-order point.
- ``branch_diagram.png``: rubin_cavity's potential in u from the uninformative start alone, depth 0 beside
  depth 1: the diagram switches at the centre branch's subcritical pitchfork onto the aligned branch.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

HCIZ = {"theory": "hciz_mlp", "activation": "tanh", "gamma": 0.5, "alpha": 4.0, "Delta": 0.1}
POTENTIAL = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 20.0}
ALONE = {"search": {"starts": ["uninformative"], "budget": 4}}


def figures(folder: str) -> None:
    import matplotlib

    matplotlib.use("Agg")

    from clients import plot
    from service.jobs.in_process import run_job
    from solvers.theories import get

    def sweep(model: dict[str, Any], parameter: str, lo: float, hi: float, method: str, **extra: Any) -> dict:
        return run_job({"model": model, "parameter": parameter, "values": {"start": lo, "stop": hi, "num": 41},
                        "method": method, "solver": ALONE, **extra})

    hciz = {q.name: q.to_json() for q in get("hciz_mlp").quantities}
    fig, axes = plot.figure(11.0, aspect=0.72, ncols=2)
    plot.branch_diagram(sweep(HCIZ, "alpha", 2.0, 6.0, "continuation"), "Q", axes[0], symbols=hciz)
    axes[0].set_title("continuation from the uninformative start", fontsize="medium")
    plot.branch_diagram(sweep(HCIZ, "alpha", 2.0, 6.0, "deflated"), "Q", axes[1], symbols=hciz)
    axes[1].set_title("deflated continuation from the same start", fontsize="medium")
    plot.panel_letters(axes)
    plot.save(fig, os.path.join(folder, "deflated_continuation.png"), dpi=120)

    rubin = {q.name: q.to_json() for q in get("rubin_cavity").quantities}
    fig, axes = plot.figure(11.0, aspect=0.72, ncols=2)
    for ax, depth in zip(axes, (0, 1), strict=True):
        plot.branch_diagram(sweep(POTENTIAL, "u", 20.0, 40.0, "diagram", depth=depth), "rho", ax, symbols=rubin)
        ax.set_title(f"branch diagram, depth {depth}", fontsize="medium")
    plot.panel_letters(axes)
    plot.save(fig, os.path.join(folder, "branch_diagram.png"), dpi=120)
    print(f"[figure] written to {folder}/deflated_continuation.png and {folder}/branch_diagram.png")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default="docs/img")
    figures(parser.parse_args().folder)
