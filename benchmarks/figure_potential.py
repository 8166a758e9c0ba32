"""The README's figure of the Quickstart's model: the branch diagram of its u sweep, drawn from the curves the
continuation traced, beside the potential U(ρ) itself at the equal-depth point u = 75π/8, both as served.

    python -m benchmarks.figure_potential docs/img/potential_branches.png          # seconds
"""

from __future__ import annotations

import argparse
import math

MODEL = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": 0.5, "b": 0.3, "c": -0.3, "u": 20.0}


def figure(path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")

    from clients import plot
    from service.jobs.in_process import run_job
    from service.schemas import SolveRequest
    from service.settings import Settings
    from service.solving import answer, stamped
    from solvers.core.options import SolverOptions
    from solvers.theories import get

    symbols = {q.name: q.to_json() for q in get("rubin_cavity").quantities}  # the table GET /v1/theories serves
    sweep = run_job({"model": MODEL, "parameter": "u", "values": {"start": 20, "stop": 40, "num": 41}})
    spec = SolveRequest.model_validate({"model": {**MODEL, "u": 75 * math.pi / 8, "potential_samples": 201}}).model
    body, _ = answer(spec, SolverOptions(), Settings(redis_url=None))
    solve = stamped(body, "", spec)
    fig, axes = plot.figure(11.0, aspect=0.72, ncols=2)
    plot.branch_diagram(sweep, "rho", axes[0], symbols=symbols)
    plot.potential(solve, axes[1], symbols=symbols)
    plot.panel_letters(axes)
    plot.save(fig, path, dpi=120)
    print(f"[figure] written to {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default="docs/img/potential_branches.png")
    figure(parser.parse_args().path)
