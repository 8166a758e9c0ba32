"""The README's figure of kernel renormalisation on digits 3 vs 8 (P = 250), drawn from the served T sweeps: Q̄(T)
and D²(T) at N1 = 50 and 200 beside the NNGP value, and the shuffled-label control, D²/D²_NNGP. The numbers of the
documentation's table: ``python -m solvers.theories.kernel_renormalization.digits_example``.

    python -m benchmarks.figure_digits docs/img/kernel_renormalization_digits.png          # a minute
"""

from __future__ import annotations

import argparse
from typing import Any

WIDTHS = (50, 200)
TEMPERATURES = 61  # log-spaced on [1e-4, 1e2]


def sweep(model: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    from service.jobs.in_process import run_job

    grid = [float(t) for t in np.geomspace(1e-4, 1e2, TEMPERATURES)]
    return run_job({"model": model, "parameter": "T", "values": grid, "method": "grid"})


def figure(path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")

    from clients import plot, series
    from solvers.theories import get
    from solvers.theories.kernel_renormalization.digits_example import digits_spec, shuffled_spec

    symbols = {q.name: q.to_json() for q in get("kernel_renormalization").quantities}  # as GET /v1/theories serves
    symbol = plot.Symbols(symbols)
    results = {N1: sweep(digits_spec(N1).model_dump(mode="json")) for N1 in WIDTHS}
    control = sweep(shuffled_spec(WIDTHS[0]).model_dump(mode="json"))
    fig, (ax_q, ax_d, ax_c) = plot.figure(14.0, aspect=0.85, ncols=3)
    for k, (N1, result) in enumerate(results.items()):
        for ax, name in ((ax_q, "Qbar"), (ax_d, "class_distance.D2")):
            plot.learning_curve(result, name, ax, symbols=symbols, logx=True, transitions=False, color=f"C{k}",
                                label=f"N1 = {N1} (α = {250 / N1:g})",
                                caption=["N1"] if (k, ax) == (0, ax_q) else False)
    T, nngp = series(results[WIDTHS[0]], "class_distance.D2_nngp")
    ax_d.plot(T, nngp, "k--", label="infinite width (NNGP)")
    ax_d.legend(fontsize="small")
    for k, (name, result) in enumerate(((f"true labels, N1 = {WIDTHS[0]}", results[WIDTHS[0]]),
                                        (f"shuffled labels, N1 = {WIDTHS[0]}", control))):
        T, d2 = series(result, "class_distance.D2")
        _, base = series(result, "class_distance.D2_nngp")
        ax_c.plot(T, [a / b for a, b in zip(d2, base, strict=True)], color="C0" if k == 0 else "0.5", label=name)
    ax_c.set_xscale("log")
    plot.tidy_log_ticks(ax_c)
    ax_c.set_xlabel(symbol("T"))
    ax_c.set_ylabel(f"{symbol('class_distance.D2')} / {symbol('class_distance.D2_nngp')}")
    ax_c.legend(fontsize="small")
    for ax in (ax_q, ax_c):
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
    plot.panel_letters((ax_q, ax_d, ax_c))
    plot.save(fig, path, dpi=110)
    print(f"[figure] written to {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default="docs/img/kernel_renormalization_digits.png")
    figure(parser.parse_args().path)
