"""Tables and the figure of :mod:`benchmarks.bench_rubin_cavity_onset` from its stored results."""

from __future__ import annotations

import math
from typing import Any

from benchmarks.rubin_cavity_network_figure import COLOURS, NAMES

THEORIES = ("mean_field", "standard_cavity")


def _per_D(stored: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {int(D): row for D, row in stored["fits"]["per_D"].items()}


def _onset(row: dict[str, Any], who: str) -> str:
    o = row.get(who)
    if o is None:
        return "—"
    return f"{o['P']:.1f} ± {o['P'] * o['log_P_stderr']:.1f}"


def _seed_crossings(row: dict[str, Any], who: str) -> str:
    cells = []
    for seed, c in sorted(row["seeds"][who].items(), key=lambda kv: int(kv[0])):
        cells.append(f"{seed}: —" if c is None else f"{seed}: {c['P']:.1f}")
    return ", ".join(cells)


def _exponent(stored: dict[str, Any], who: str) -> str:
    e = stored["fits"]["exponent"].get(who)
    if e is None:
        return "—"
    return (f"{e['slope']:.2f} ± {max(e['stderr'], e['stderr_scaled']):.2f} (χ²/dof = {e['chi2']:.1f}/{e['dof']}, "
            f"{e['points']} D)")


def table(stored: dict[str, Any]) -> str:
    runs = sorted(stored["runs"], key=lambda r: (r["D"], r["seed"], r["P"]))
    rows = ["Runs (network family; cubic fraction 1 − c_test/ε on 500 fresh inputs, mean ± Monte-Carlo standard "
            "error):\n",
            "| D | seed | P | P/D | network | mean field | standard cavity | converged (max R-hat, min bulk ESS) "
            "| s |", "|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        th = [r.get("theory", {}).get(t) for t in THEORIES]
        cells = ["—" if v is None else f"{v:.4f}" for v in th]
        rows.append(f"| {r['D']} | {r['seed']} | {r['P']} | {r['P'] / r['D']:.2f} | {r['cubic']:.4f} ± "
                    f"{r['cubic_stderr']:.4f} | {cells[0]} | {cells[1]} | {r['converged']} ({r['max_rhat']:.3f}, "
                    f"{r['min_ess_bulk']:.0f}) | {r['seconds']:.0f} |")
    rows += ["\nOnset P_1/10 (per seed; mean of log P over the seeds ± its standard error, as P ± error):\n",
             "| D | network, per seed | network P_1/10 | P_1/10 / D | mean field, per seed | mean field P_1/10 "
             "| standard cavity P_1/10 |", "|---|---|---|---|---|---|---|"]
    for D, row in sorted(_per_D(stored).items()):
        net = row.get("network")
        per_D = "—" if net is None else f"{net['P'] / D:.2f} ± {net['P'] * net['log_P_stderr'] / D:.2f}"
        rows.append(f"| {D} | {_seed_crossings(row, 'network')} | {_onset(row, 'network')} | {per_D} | "
                    f"{_seed_crossings(row, 'mean_field')} | {_onset(row, 'mean_field')} | "
                    f"{_onset(row, 'standard_cavity')} |")
    rows.append(f"| exponent x of P_1/10 ∝ D^x | | {_exponent(stored, 'network')} | | | "
                f"{_exponent(stored, 'mean_field')} | {_exponent(stored, 'standard_cavity')} |")
    check = stored.get("interpolation_check")
    if check:
        diffs = [c["log_difference"] for c in check]
        rows.append(f"\nInterpolation across one lattice step, measured on mean field ({len(check)} brackets): the "
                    f"lattice crossing minus the crossing on a 2^(1/8) grid, in log P: {min(diffs):+.4f} … "
                    f"{max(diffs):+.4f} (mean {sum(diffs) / len(diffs):+.4f}).")
    return "\n".join(rows)


def figure(stored: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from clients.plot import panel_letters

    threshold = stored["settings"]["threshold"]
    runs = stored["runs"]
    Ds = sorted({r["D"] for r in runs})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    ax = axes[0]
    markers = "osd^v"
    for i, D in enumerate(Ds):
        colour = plt.get_cmap("viridis")(0.9 * i / max(len(Ds) - 1, 1))
        for j, seed in enumerate(sorted({r["seed"] for r in runs if r["D"] == D})):
            mine = sorted((r for r in runs if r["D"] == D and r["seed"] == seed), key=lambda r: r["P"])
            x = [r["P"] / D for r in mine]
            ax.plot(x, [r["cubic"] for r in mine], "-", color=colour, lw=1, label=f"D = {D}" if j == 0 else None)
            for r in mine:  # open marker: the run is not converged by the project's criteria
                ax.errorbar([r["P"] / D], [r["cubic"]], yerr=[2 * r["cubic_stderr"]], fmt=markers[j % len(markers)],
                            color=colour, ms=5, capsize=2, mfc=colour if r["converged"] else "white")
    ax.axhline(threshold, color="k", ls=":", lw=1)
    ax.text(0.02, threshold * 1.04, f"threshold {threshold:g}", fontsize=7, transform=ax.get_yaxis_transform())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ks = sorted({round(2 * math.log2(r["P"] / r["D"])) for r in runs})
    lattice = [2.0 ** (k / 2) for k in range(ks[0], ks[-1] + 1)]
    ax.set_xticks(lattice, [f"{v:.3g}" for v in lattice])
    ax.set_xticks([], minor=True)
    ticks = [v for v in (0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3) if
             min(r["cubic"] for r in runs) * 0.8 <= v <= max(r["cubic"] for r in runs) * 1.2]
    ax.set_yticks(ticks, [f"{v:g}" for v in ticks])
    ax.set_yticks([], minor=True)
    ax.set_xlabel("P / D (lattice P = D·2^(k/2), log scale)")
    ax.set_ylabel("network's learned cubic fraction 1 − c_test/ε")
    ax.set_title("network, N = 2D: one line per (D, training-set seed);\nmarker = seed, ±2 s.e., "
                 "open = not converged", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")

    ax = axes[1]
    per_D = _per_D(stored)
    exps = stored["fits"]["exponent"]
    styles = {"network": ("o", "k"), "mean_field": ("s", COLOURS["mean_field"]),
              "standard_cavity": ("^", COLOURS["standard_cavity"])}
    shift = {"network": 1.0, "mean_field": 1.025, "standard_cavity": 1.05}  # side by side, not on top
    for who, (fmt, colour) in styles.items():
        seeds = [(D, c["P"]) for D, row in sorted(per_D.items()) for c in row["seeds"][who].values() if c]
        ax.plot([D * shift[who] * 1.012 for D, _ in seeds], [P for _, P in seeds], ".", color=colour, ms=3,
                alpha=0.6)
        pts = [(D, row[who]) for D, row in sorted(per_D.items()) if who in row]
        if not pts:
            continue
        xs = [D * shift[who] for D, _ in pts]
        ys = [o["P"] for _, o in pts]
        lo = [o["P"] * (1 - math.exp(-2 * o["log_P_stderr"])) for _, o in pts]
        hi = [o["P"] * (math.exp(2 * o["log_P_stderr"]) - 1) for _, o in pts]
        e = exps.get(who)
        name = "network" if who == "network" else f"{NAMES[who]}, finite_sample on the same data"
        label = name if e is None else f"{name}: x = {e['slope']:.2f} ± {max(e['stderr'], e['stderr_scaled']):.2f}"
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt=fmt, color=colour, ms=5, capsize=3,
                    mfc=colour if who == "network" else "none", label=label)
        if e is not None:
            fit_D = [D for D, _ in pts]
            ax.plot(fit_D, [math.exp(e["intercept"]) * d ** e["slope"] for d in fit_D], "-", color=colour, lw=1)
    net = [(D, row["network"]["P"]) for D, row in sorted(per_D.items()) if "network" in row]
    if net:
        D0, P0 = net[0]
        xs = [D0, Ds[-1]]
        ax.plot(xs, [P0 * (d / D0) for d in xs], "k--", lw=0.8, label="∝ D (adaptive theories' exponent)")
        ax.plot(xs, [P0 * (d / D0) ** 3 for d in xs], "k:", lw=0.8, label="∝ D³ (fixed kernel's exponent)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(Ds, [str(d) for d in Ds])
    ax.set_xticks([], minor=True)
    low, high = ax.get_ylim()
    ticks = [v for v in (20, 30, 40, 50, 70, 100, 150, 200, 300, 500, 700, 1000) if low <= v <= high]
    ax.set_yticks(ticks, [str(v) for v in ticks])
    ax.set_yticks([], minor=True)
    ax.set_xlabel("D (log scale)")
    ax.set_ylabel("P_1/10 (mean of log P over seeds, ±2 s.e.;\ndots: each seed)")
    ax.set_title("onset of cubic learning: where 1 − c_test/ε reaches 1/10", fontsize=9)
    ax.legend(fontsize=7)
    panel_letters(axes)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
