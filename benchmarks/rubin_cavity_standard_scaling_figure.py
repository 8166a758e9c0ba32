"""Table and figure of :mod:`benchmarks.bench_rubin_cavity_standard_scaling` from its stored results."""

from __future__ import annotations

import math
from typing import Any

EPSILON = -0.3
REDUCED_NAMES = {"mean_field": "mean field", "standard_cavity": "standard cavity",
                 "tree_level_reduced": "tree level (reduced)"}
COLOURS = {"mean_field": "C0", "standard_cavity": "C3", "tree_level_reduced": "C2", "unreduced": "C1"}


def _reduced_at(theory: dict[str, Any], name: str, T: float) -> dict[str, Any] | None:
    return next((r for r in theory.get("reduced", {}).get(name, []) if r["T"] == T), None)


def _unreduced_at(theory: dict[str, Any], T: float) -> dict[str, Any] | None:
    return next((r for r in theory["unreduced"]["rows"] if r["T"] == T and r.get("converged_replicas")), None)


def _value(name: str, row: dict[str, Any] | None) -> float | None:
    if row is None or row.get(name) is None:
        return None
    if name.startswith("cubic"):
        return row[name]
    return float(row[name])


def _derived(row: dict[str, Any] | None, name: str) -> float | None:
    """The observable ``name`` of a theory row, with the cubic fractions from c, c_test."""
    if row is None:
        return None
    if name == "cubic_fraction_test":
        return None if row.get("c_test") is None else 1.0 - row["c_test"] / EPSILON
    if name == "cubic_fraction":
        return None if row.get("c") is None else 1.0 - row["c"] / EPSILON
    return _value(name, row)


def _network(point: dict[str, Any], name: str) -> tuple[float, float]:
    est = point["network"]["estimates"]
    if name.startswith("cubic_fraction"):
        e = est["c_test" if name.endswith("test") else "c"]
        return 1.0 - e["mean"] / EPSILON, e["stderr"] / abs(EPSILON)
    return est[name]["mean"], est[name]["stderr"]


def _cell(value: float | None, reference: float, se: float, digits: int, converged: bool = True) -> str:
    if value is None:
        return "—"
    mark = "" if converged else "†"
    return f"{value:.{digits}f}{mark} ({(reference - value) / se:+.0f})"


def table(stored: dict[str, Any], theory: dict[str, Any]) -> str:
    """One row per T: the network with its error and diagnostics, each treatment with its gap in standard errors."""
    size = stored["sizes"]
    out = [f"D = {size['D']}, N = {size['N']}, P = {size['P']}, s_a2 = 1/N, σ_w² = ½, ε = −0.3, training inputs seed "
           f"{size['seed']}, {size['P_test']} fresh inputs. Network: NUTS, readout integrated out; mean ± standard "
           "error and the R-hat of that observable. Theories: value (gap = (network − theory)/error; for the "
           "unreduced tree level the error combines the network's and the theory's); † = not converged.\n"]
    for name, label, digits in (("R", "R = E[ρ²]", 4), ("b", "b (training)", 4), ("c", "c (training)", 4),
                                ("b_test", "b_test (fresh inputs)", 4),
                                ("cubic_fraction_test", "cubic fraction 1 − c_test/ε (fresh inputs)", 3)):
        out += [f"\n{label}:\n", "| T | network | R-hat | mean field | standard cavity | tree level (reduced) | "
                "tree level (unreduced) |", "|---|---|---|---|---|---|---|"]
        for pt in sorted(stored["points"], key=lambda p: -p["T"]):
            T = pt["T"]
            mean, se = _network(pt, name)
            key = "c_test" if name == "cubic_fraction_test" else name
            rhat = pt["network"]["estimates"][key]["rhat"]
            cells = [f"{T:g}", f"{mean:.{digits}f} ± {se:.{digits}f}", f"{rhat:.3f}"]
            for red in REDUCED_NAMES:
                row = _reduced_at(theory, red, T)
                cells.append(_cell(_derived(row, name), mean, se, digits, bool(row and row.get("converged"))))
            un = _unreduced_at(theory, T)
            val = _derived(un, name)
            if un is not None and val is not None:
                se_key = ("c_test" if name == "cubic_fraction_test" else name) + "_stderr"
                se_th = (un.get(se_key) or 0.0) / (abs(EPSILON) if name.startswith("cubic") else 1.0)
                cells.append(f"{val:.{digits}f} ± {se_th:.{digits}f} ({(mean - val) / math.hypot(se, se_th):+.1f})")
            else:
                cells.append("—")
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def figure(stored: dict[str, Any], theory: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in theory["unreduced"]["rows"] if r.get("converged_replicas")]
    panels = (("R", "R = E[ρ²]"), ("b_test", "b_test (linear residual, fresh inputs)"),
              ("cubic_fraction_test", "cubic fraction 1 − c_test/ε (fresh inputs)"))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    for ax, (name, label) in zip(axes, panels, strict=True):
        Ts = [r["T"] for r in rows]
        vals = [_derived(r, name) for r in rows]
        key = "c_test" if name == "cubic_fraction_test" else name
        errs = [(r.get(key + "_stderr") or 0.0) / (abs(EPSILON) if name.startswith("cubic") else 1.0) for r in rows]
        ax.plot(Ts, vals, "-", color=COLOURS["unreduced"], lw=2, label="tree level, unreduced (traced in T)")
        ax.fill_between(Ts, [v - 2 * e for v, e in zip(vals, errs, strict=True)],
                        [v + 2 * e for v, e in zip(vals, errs, strict=True)], color=COLOURS["unreduced"], alpha=0.25)
        for red, lab in REDUCED_NAMES.items():
            pts = [(r["T"], _derived(r, name), r.get("converged")) for r in theory.get("reduced", {}).get(red, [])]
            good = sorted((T, v) for T, v, ok in pts if ok and v is not None)
            bad = [(T, v) for T, v, ok in pts if not ok and v is not None]
            if good:  # mean field drawn as open circles: the reduced tree level lies on top of it
                style = {"marker": "o", "mfc": "none", "ms": 8} if red == "mean_field" else {"marker": "s", "ms": 4}
                ax.plot(*zip(*good, strict=True), ls="--", color=COLOURS[red], lw=1, label=lab, **style)
            if bad:
                ax.plot(*zip(*bad, strict=True), "x", color=COLOURS[red], ms=7, label=f"{lab}, not converged")
        net = sorted((p["T"], *_network(p, name)) for p in stored["points"])
        ax.errorbar([n[0] for n in net], [n[1] for n in net], yerr=[2 * n[2] for n in net], fmt="ko", ms=5,
                    capsize=3, label="network (NUTS, ± 2 s.e.)", zorder=5)
        ax.set_xscale("log")
        ax.set_xlabel("T")
        ax.set_title(label, fontsize=10)
    failed = {lab: sorted(r["T"] for r in theory.get("reduced", {}).get(red, []) if not r.get("converged"))
              for red, lab in REDUCED_NAMES.items()}
    note = "; ".join(f"{lab}: no solution at T = {', '.join(f'{t:g}' for t in ts)}" for lab, ts in failed.items() if ts)
    axes[0].legend(fontsize=7)
    if note:
        fig.text(0.5, 0.01, note, ha="center", fontsize=8)
    fig.suptitle("rubin_cavity at standard scaling: D = 30, N = 60, P = 200, s_a2 = 1/N (training seed 0)")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
