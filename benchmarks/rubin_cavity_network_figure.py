"""Tables and the figure of :mod:`benchmarks.bench_rubin_cavity_network` from its stored results."""

from __future__ import annotations

from typing import Any

NAMES = {"mean_field": "mean field", "standard_cavity": "standard cavity", "tree_level": "tree level"}
COLOURS = {"mean_field": "C0", "standard_cavity": "C3", "tree_level": "C2"}
#: Tree level on top of mean field (they differ by O(κ) and would hide each other): dashed, thinner.
STYLE = {"mean_field": {"lw": 2.5}, "standard_cavity": {"lw": 1.5}, "tree_level": {"lw": 1.2, "ls": "--"}}
EPSILON = -0.3


def _est(point: dict[str, Any], name: str) -> tuple[float, float]:
    e = point["network"]["estimates"][name]
    return e["mean"], e["stderr"]


def _theory(point: dict[str, Any], block: str, name: str) -> dict[str, float]:
    return {t: v[block][name] for t, v in point["theory"].items()}


def closest(point: dict[str, Any], name: str, block: str, theory_name: str | None = None) -> str:
    """The treatment nearest the network's estimate, and the gaps to every treatment in standard errors."""
    mean, se = _est(point, name)
    gaps = {t: (mean - v) / se for t, v in _theory(point, block, theory_name or name).items()}
    best = min(gaps, key=lambda t: abs(gaps[t]))
    return f"{NAMES[best]} ({', '.join(f'{g:+.0f}' for g in gaps.values())})"


def _join(values: Any, digits: int = 4) -> str:
    return " / ".join(f"{v:.{digits}f}" for v in values)


def table(stored: dict[str, Any]) -> str:
    size = stored["sizes"]
    head = (f"N = {size['N']}, P = {size['P']}, D = {size['D']}, s_a2 = {size['s_a2']:.4g} (α = β = "
            f"{size['scale']:g}); treatments in the order mean field / standard cavity / tree level; gaps in "
            "Monte-Carlo standard errors\n")
    rows = [head, "Training set (network vs finite_sample on the same data):\n",
            "| T | b network | b MF / std / TL | c network | c MF / std / TL | R network | R MF / std / TL | "
            "closest in R (gaps) |", "|---|---|---|---|---|---|---|---|"]
    for pt in stored["points"]:
        cells = [f"{pt['T']:g}"]
        for name in ("b", "c", "R"):
            mean, se = _est(pt, name)
            th = _theory(pt, "finite_sample", name)
            digits = 5 if name == "R" else 4
            cells += [f"{mean:.{digits}f} ± {se:.{digits}f}", " / ".join(f"{v:.{digits}f}" for v in th.values())]
        cells.append(closest(pt, "R", "finite_sample"))
        rows.append("| " + " | ".join(cells) + " |")
    rows += ["\nFresh inputs: the network's test-set projection against finite_sample's on the same test inputs "
             "(closest: gaps) and against the population theory at the network's D:\n",
             "| T | b_test network | finite_sample MF / std / TL | closest (gaps) | population MF / std / TL | "
             "1 − c_test/ε network | finite_sample MF / std / TL | closest (gaps) | population MF / std / TL |",
             "|---|---|---|---|---|---|---|---|---|"]
    for pt in stored["points"]:
        b, bse = _est(pt, "b_test")
        c, cse = _est(pt, "c_test")
        fb, fc = _theory(pt, "finite_sample", "b_test"), _theory(pt, "finite_sample", "c_test")
        pb, pc = _theory(pt, "population", "b"), _theory(pt, "population", "c")
        cubic = f"{1 - c / EPSILON:.4f} ± {cse / abs(EPSILON):.4f}"
        rows.append(f"| {pt['T']:g} | {b:.4f} ± {bse:.4f} | {_join(fb.values())} | "
                    f"{closest(pt, 'b_test', 'finite_sample')} | {_join(pb.values())} | {cubic} | "
                    f"{_join(1 - v / EPSILON for v in fc.values())} | {closest(pt, 'c_test', 'finite_sample')} | "
                    f"{_join(1 - v / EPSILON for v in pc.values())} |")
    rows += ["\nSampler (NUTS, float64):\n",
             "| T | converged | max R-hat | min bulk ESS | divergences | gradients | seconds | ms per gradient |",
             "|---|---|---|---|---|---|---|---|"]
    for pt in stored["points"]:
        n = pt["network"]
        rows.append(f"| {pt['T']:g} | {n['converged']} | {n['max_rhat']:.4f} | {n['min_ess_bulk']:.0f} | "
                    f"{n['divergences']} | {n['gradient_evaluations']} | {n['seconds']:.0f} | "
                    f"{n['seconds'] / n['gradient_evaluations'] * 1e3:.1f} |")
    return "\n".join(rows)


def histogram(ax: Any, pt: dict[str, Any], N: int) -> None:
    """Neurons per ρ bin: the network's mean histogram against each treatment's law p(ρ) on the same bins."""
    import numpy as np

    h = np.array(pt["network"]["rho_histogram"]) * N
    edges = np.linspace(-1.5, 1.5, len(h) + 1)
    centres = 0.5 * (edges[1:] + edges[:-1])
    ax.bar(centres, h, width=edges[1] - edges[0], color="0.75", label="network (posterior mean)")
    for t in NAMES:
        law = pt["theory"][t]["finite_sample"].get("rho_histogram")
        if law is not None:
            ax.step(centres, np.array(law) * N, where="mid", color=COLOURS[t], label=NAMES[t], **STYLE[t])
    ax.set_yscale("log")
    ax.set_ylim(1e-3, 2 * float(h.max()))
    ax.set_xlabel("ρ = w·e")
    ax.set_ylabel("neurons per bin")
    ax.set_title(f"T = {pt['T']:g}: the overlap law (finite_sample on the same data)", fontsize=9)
    ax.legend(fontsize=7, loc="lower center")


def figure(stored: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    pts = stored["points"]
    Ts = np.array([p["T"] for p in pts])
    pop = stored["population"]
    fig, grid = plt.subplots(2, 3, figsize=(16, 8))
    axes = grid[:, :2]
    panels = [(axes[0, 0], "b_test", "b"), (axes[0, 1], "c_test", "c")]
    for ax, name, key in panels:
        for t, curve in pop.items():
            ax.plot(curve["T"], curve[key], color=COLOURS[t], label=f"{NAMES[t]}, D = {stored['sizes']['D']}",
                    **STYLE[t])
            ax.plot(curve["T"], curve[f"{key}_inf"], color=COLOURS[t], ls=":", lw=1)
            for tr in curve["transitions"]:
                if tr["type"] == "first_order" and "GFL" in tr["branches"]:
                    ax.axvline(tr["T"], color=COLOURS[t], ls=(0, (1, 4)), lw=1)
        for t in NAMES:  # finite_sample projected on the network's own test inputs (like for like)
            ax.plot(Ts, [p["theory"][t]["finite_sample"][name] for p in pts], "s", color=COLOURS[t], ms=5,
                    mfc="none", label=f"{NAMES[t]}, finite_sample, same test inputs" if key == "b" else None)
        mean = np.array([_est(p, name)[0] for p in pts])
        se = np.array([_est(p, name)[1] for p in pts])
        ax.errorbar(Ts, mean, yerr=2 * se, fmt="ko", ms=4, capsize=3, label="network (±2 s.e.)")
        ax.set_xlabel("T = σ²")
        ax.set_ylabel(f"{key}_test (projection of the discrepancy on fresh inputs)")
    axes[0, 0].legend(fontsize=7)
    axes[0, 0].set_title("fresh inputs", fontsize=9)
    axes[0, 1].set_title("fresh inputs", fontsize=9)
    for ax, name in ((axes[1, 0], "b"), (axes[1, 1], "R")):
        for t in NAMES:
            ax.plot(Ts, [p["theory"][t]["finite_sample"][name] for p in pts], marker="s", color=COLOURS[t], ms=4,
                    label=NAMES[t], **STYLE[t])
        mean = np.array([_est(p, name)[0] for p in pts])
        se = np.array([_est(p, name)[1] for p in pts])
        ax.errorbar(Ts, mean, yerr=2 * se, fmt="ko", ms=4, capsize=3, label="network (±2 s.e.)")
        ax.set_xlabel("T = σ²")
    axes[1, 0].set_ylabel("b (training-set projection)")
    axes[1, 1].set_ylabel("R = E[ρ²]")
    axes[1, 0].set_title("finite_sample on the network's training set", fontsize=9)
    axes[1, 1].legend(fontsize=8)
    for ax, pt in zip(grid[:, 2], sorted(pts, key=lambda p: p["T"])[:2], strict=False):
        histogram(ax, pt, stored["sizes"]["N"])
    s = stored["sizes"]
    fig.suptitle(f"rubin_cavity: NUTS on the erf network (N = {s['N']}, P = {s['P']}, D = {s['D']}; u, η as in the "
                 "paper) against three treatments\nlines: population theory at the network's D (tree level dashed, on "
                 "mean field), dotted: D → ∞, vertical: its T_c; squares: finite_sample on the network's data",
                 fontsize=9)
    from clients.plot import panel_letters

    panel_letters(grid)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
