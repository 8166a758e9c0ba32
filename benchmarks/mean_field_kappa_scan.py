"""The κ scan of a sparse parity, theory beside network: plain MF and MF-ARD (both ARD readings) against Langevin.

Network: ``mean_field_ard``'s finite network (f(x) = N^{-1/2} Σ_i a_i relu(w_i·x), w_i ~ N(0, I_d/d), a_i ~ N(0, 1),
likelihood exp[−mean_μ (y_μ − f(x_μ))²/(2κ²)]) on the k-sparse parity of x uniform on {±1}^d, one generated data
set per P (seed 0, 1000 test points) shared by every curve. It is sampled by the papers' Langevin update
p ← p − η((T/σ_p²) p + ∇L) + √(2Tη) ξ at T = 2κ² (step h = ηT), 4 chains from the prior and 4 from the aligned
start, burn-in of simulated time ``--burn-in-time`` (h × steps), until every judged observable (m_S, both weight
second moments and their ratio) has R-hat ≤ 1.01 and bulk ESS ≥ 400 on all 8 chains together, or the step budget
is spent (``benchmarks.mean_field_network_runs``; such a point is reported as not converged, with its figures).

Theory: SaddleLab's reduced solver at the same finite P (equivalent-kernel closure) on the same network, no
parameter fitted to the network: plain MF, MF-ARD with shared precisions and MF-ARD with per-unit precisions (the
spec's hyperprior α₀ = 4, β₀ = α₀σ_w²/d); every branch found, the equilibrium marked. Compared: m_S and the ratio
⟨w_rel²⟩/⟨w_irr²⟩ of the relevant to the irrelevant input weights' second moments (MF-ARD's mechanism).

    python -m benchmarks.mean_field_kappa_scan [--P 400 800] [--kappa 0.02 0.035 0.05 0.07] [--store DIR]
        [--json docs/img/mean_field_kappa_scan.json] [--figure docs/img/mean_field_kappa_scan.png]
        [--network-only | --theory-only] [--replot JSON]

The network runs are stored per point under ``--store`` (resumable; a larger ``--max-steps`` extends them).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.mean_field_network_runs import converge
from clients.result import branch_of
from service.serialize import sweep_json
from solvers.core.options import SolverOptions
from solvers.experiments import SamplerOptions
from solvers.theories import get
from solvers.theories.mean_field_ard.experiment import build_target

THEORY = get("mean_field_ard")
#: The theory curves: label -> (model, ARD settings, legend). "mf_ard_unit_point" is the per-unit model with each
#: unit's precisions point-estimated (variational) instead of integrated out, which is the shared fixed point with
#: the hyperprior counted once per unit: α₀ → Nα₀, β₀ → Nβ₀ (docs: "The two ARD readings").
MODELS: dict[str, tuple[str, dict[str, Any] | None, str]] = {
    "mf": ("mf", None, "plain MF"),
    "mf_ard_shared": ("mf_ard", {"precisions": "shared"}, "MF-ARD, shared precisions"),
    "mf_ard_per_unit": ("mf_ard", {"precisions": "per_unit"}, "MF-ARD, per-unit precisions"),
    "mf_ard_unit_point": ("mf_ard", {"precisions": "shared", "scale": True},
                          "MF-ARD, per-unit point estimate (shared, α₀, β₀ × N)"),
}
#: The theory's κ grid (contains every scanned κ): the curves of the figure.
KAPPA_GRID = [round(0.015 + 0.0025 * i, 6) for i in range(27)]


def spec(model: str, P: int, kappa: float, args: argparse.Namespace, ard: dict[str, Any] | None = None) -> Any:
    extra: dict[str, Any] = {}
    if ard:
        a = {k: v for k, v in ard.items() if k != "scale"}
        if ard.get("scale"):
            a |= {"alpha0": args.N * args.alpha0, "beta0": args.N * args.alpha0 / args.d}
        else:
            a |= {"alpha0": args.alpha0}
        extra = {"ard": a}
    return THEORY.spec_model.model_validate({
        "theory": "mean_field_ard", "model": model, "d": args.d, "N": args.N, "kappa": kappa, "P": P,
        "target": {"kind": "parity", "k": args.k}, "data": {"seed": 0, "P_test": args.P_test}, **extra})


def theory_curve(label: str, P: int, args: argparse.Namespace) -> dict[str, Any]:
    """Every branch of the reduced solver along the κ grid (the engine's continuation), and its transitions."""
    model, ard, _ = MODELS[label]
    t0 = time.perf_counter()
    sw = THEORY.sweep(spec(model, P, KAPPA_GRID[0], args, ard), "kappa", KAPPA_GRID, "continuation",
                      SolverOptions())
    out = sweep_json(THEORY.name, "kappa", sw)
    points = []
    for p in out["points"]:
        branches = {}
        for compact in p["branches"]:
            if not compact["converged"]:
                continue
            b = branch_of(p, compact["name"])  # a sweep point's branches list only what differs from its tables
            assert b is not None
            op, ob = b["order_parameters"], b["observables"]
            branches[b["name"]] = {
                "m_S": op["m_S"], "rho_relevant": op["rho_relevant"], "rho_irrelevant": op["rho_irrelevant"],
                "second_moment_relevant": ob["second_moment_relevant"],
                "second_moment_irrelevant": ob["second_moment_irrelevant"],
                "second_moment_ratio": ob["second_moment_relevant"] / ob["second_moment_irrelevant"],
                "test_mse": ob["test_mse"], "free_entropy": b["free_entropy"], "stable": b["stable"]}
        points.append({"kappa": p["parameter"], "equilibrium": p["equilibrium"], "branches": branches})
    return {"P": P, "points": points, "transitions": out["transitions"], "seconds": time.perf_counter() - t0}


def at(curve: dict[str, Any], kappa: float) -> dict[str, Any]:
    return next(p for p in curve["points"] if abs(p["kappa"] - kappa) < 1e-9)


def network_point(P: int, kappa: float, args: argparse.Namespace) -> dict[str, Any]:
    T = 2.0 * kappa**2
    h = args.eta * T
    burn = math.ceil(args.burn_in_time / h)
    opts = SamplerOptions(method="langevin", chains=args.chains, warmup=burn, draws=1, thin=args.thin,
                          learning_rate=args.eta, temperature=T, seed=11, block_size=args.block)
    store = Path(args.store) / f"P{P}_kappa{kappa:g}" if args.store else None
    print(f"network P={P} κ={kappa}: h = {h:.3g}, burn-in {burn} steps", file=sys.stderr, flush=True)
    out = converge(build_target(spec("mf", P, kappa, args)), opts, max_steps=args.max_steps,
                   min_steps=math.ceil(args.min_time / h), store=store,
                   log=lambda m: print(m, file=sys.stderr, flush=True))
    return {"P": P, "kappa": kappa, "eta": args.eta, "h": h, **out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--P", type=int, nargs="+", default=[400, 800])
    ap.add_argument("--kappa", type=float, nargs="+", default=[0.02, 0.035, 0.05, 0.07])
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--N", type=int, default=256)
    ap.add_argument("--P-test", dest="P_test", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=4, help="chains per start (prior, aligned)")
    ap.add_argument("--eta", type=float, default=0.5, help="learning rate η (step h = η T)")
    ap.add_argument("--burn-in-time", dest="burn_in_time", type=float, default=10.0,
                    help="burn-in in simulated time h × steps")
    ap.add_argument("--thin", type=int, default=50)
    ap.add_argument("--block", type=int, default=100, help="draws per block between convergence checks")
    ap.add_argument("--max-steps", dest="max_steps", type=int, default=300_000, help="steps per chain after burn-in")
    ap.add_argument("--min-time", dest="min_time", type=float, default=25.0,
                    help="least simulated time h × steps after the burn-in before convergence is accepted")
    ap.add_argument("--store", type=str, default="/tmp/saddlelab_kappa_scan")
    ap.add_argument("--network-only", action="store_true")
    ap.add_argument("--theory-only", action="store_true")
    ap.add_argument("--json", type=str, default=None)
    ap.add_argument("--figure", type=str, default=None)
    ap.add_argument("--replot", type=str, default=None, help="table and figure from a --json file")
    ap.add_argument("--network-json", dest="network_json", type=str, default=None,
                    help="with --theory-only: the network points of an earlier --network-only run")
    ap.add_argument("--alpha0", type=float, default=4.0, help="the ARD hyperprior's shape (β₀ = α₀σ_w²/d)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", RuntimeWarning)
    res: dict[str, Any] = {"args": vars(args)}
    if args.replot:
        res = json.loads(Path(args.replot).read_text())
    else:
        if not args.network_only:
            res["theory"] = {}
            for label in MODELS:
                res["theory"][label] = [theory_curve(label, P, args) for P in args.P]
                print(f"theory {label}: {sum(c['seconds'] for c in res['theory'][label]):.0f} s", file=sys.stderr,
                      flush=True)
        if not args.theory_only:
            t0 = time.perf_counter()
            res["network"] = [network_point(P, kappa, args) for P in args.P for kappa in args.kappa]
            res["network_seconds"] = time.perf_counter() - t0
        elif args.network_json:
            res["network"] = json.loads(Path(args.network_json).read_text())["network"]
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=1))
    if "theory" in res and "network" in res:
        table(res)
        if args.figure:
            figure(res, args.figure)
    return 0


def zscore(theory: float, net: dict[str, float]) -> float:
    return (theory - net["mean"]) / net["stderr"] if net["stderr"] > 0 else math.inf


def table(res: dict[str, Any]) -> None:
    """Markdown: per (P, κ) the network (mean ± s.e., R-hat, ESS) and each theory's equilibrium (others in brackets)."""
    print("| P | κ | network m_S | network ratio ⟨w_rel²⟩/⟨w_irr²⟩ | R-hat, ESS (worst judged) | steps/chain "
          + "| " + " | ".join(f"{MODELS[m][2]}: m_S; ratio" for m in res["theory"]) + " |")
    print("|---|---|---|---|---|---|" + "---|" * len(res["theory"]))
    for net in sorted(res["network"], key=lambda r: (r["P"], r["kappa"])):
        P, kappa = net["P"], net["kappa"]
        judged = [net[k] for k in ("m_S", "second_moment_relevant", "second_moment_irrelevant", "second_moment_ratio")]
        worst = f"{max(j['rhat'] for j in judged):.3f}, {min(j['ess_bulk'] for j in judged):.0f}"
        mark = "" if net["converged"] else " (not converged)"
        cells = []
        for curves in res["theory"].values():
            pt = at(next(c for c in curves if c["P"] == P), kappa)
            eq = pt["equilibrium"]
            parts = []
            for name, b in sorted(pt["branches"].items(), key=lambda nb: nb[0] != eq):
                text = f"{b['m_S']:.3f}; {b['second_moment_ratio']:.2f}"
                parts.append(text if name == eq else f"[{name} {text}]")
            cells.append(" ".join(parts))
        print(f"| {P} | {kappa:g} | {net['m_S']['mean']:.4f} ± {net['m_S']['stderr']:.4f} | "
              f"{net['second_moment_ratio']['mean']:.4f} ± {net['second_moment_ratio']['stderr']:.4f} | {worst}{mark} "
              f"| {net['steps_per_chain']} | " + " | ".join(cells) + " |")
    print()
    for label, curves in res["theory"].items():
        for c in curves:
            tr = ", ".join(f"{t['kind']} {t['parameter']:.4f}" + (f" ({t['detail']})" if t.get("detail") else "")
                           for t in c["transitions"]) or "none"
            print(f"{MODELS[label][2]}, P = {c['P']}: transitions in κ ∈ [{KAPPA_GRID[0]}, {KAPPA_GRID[-1]}]: {tr}")
    print()
    for net in sorted(res["network"], key=lambda r: (r["P"], r["kappa"])):
        zs = []
        for label, curves in res["theory"].items():
            pt = at(next(c for c in curves if c["P"] == net["P"]), net["kappa"])
            b = pt["branches"].get(pt["equilibrium"]) if pt["equilibrium"] else None
            if b is not None:
                zs.append(f"{label} z(m_S) {zscore(b['m_S'], net['m_S']):+.0f}, "
                          f"z(ratio) {zscore(b['second_moment_ratio'], net['second_moment_ratio']):+.0f}")
        print(f"P = {net['P']}, κ = {net['kappa']}: " + "; ".join(zs))


def figure(res: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    Ps = sorted({c["P"] for c in next(iter(res["theory"].values()))})
    fig, axes = plt.subplots(len(Ps), 2, figsize=(11, 3.9 * len(Ps)), squeeze=False)
    styles = {"mf": ("C0", "-"), "mf_ard_shared": ("C3", "-"), "mf_ard_per_unit": ("C1", "-"),
              "mf_ard_unit_point": ("C4", ":")}
    for row, P in enumerate(Ps):
        for col, key in enumerate(("m_S", "second_moment_ratio")):
            ax = axes[row, col]
            for label, curves in res["theory"].items():
                colour, ls = styles[label]
                c = next(x for x in curves if x["P"] == P)
                eq = [(p["kappa"], p["branches"][p["equilibrium"]][key]) for p in c["points"]
                      if p["equilibrium"] in p["branches"]]
                if eq:
                    ax.plot(*zip(*eq, strict=True), ls, color=colour, lw=1.6, label=MODELS[label][2])
                other = [(p["kappa"], b[key]) for p in c["points"] for n, b in p["branches"].items()
                         if n != p["equilibrium"] and b["stable"]]
                if other:
                    ax.plot(*zip(*other, strict=True), "x", color=colour, ms=5,
                            label=f"{MODELS[label][2]} (metastable)")
                # transitions on the curve: the alignment onset (one solution) or a first-order point (shared)
                for t in c["transitions"]:
                    if t["kind"] == "first_order" and eq:
                        xs, ys = zip(*eq, strict=True)
                        ax.plot([t["parameter"]], [float(np.interp(t["parameter"], xs, ys))], "v", color=colour,
                                ms=7, mec="k", mew=0.5)
            nets = sorted((r for r in res["network"] if r["P"] == P), key=lambda r: r["kappa"])
            for conv, marker in ((True, "D"), (False, "o")):
                pts = [r for r in nets if r["converged"] == conv]
                if pts:
                    ax.errorbar([r["kappa"] for r in pts], [r[key]["mean"] for r in pts],
                                yerr=[2 * r[key]["stderr"] for r in pts], fmt=marker, color="k", ms=6, capsize=3,
                                mfc="k" if conv else "none",
                                label="network, Langevin (±2 s.e.)" + ("" if conv else ", not converged"))
            ax.set_xlabel("noise κ")
            ax.set_ylabel("target overlap $m_S$" if key == "m_S" else
                          r"$\langle w_{rel}^2\rangle / \langle w_{irr}^2\rangle$")
            if key != "m_S":
                ax.set_yscale("log")
            ax.set_title(f"P = {P}", fontsize=9)
            ax.grid(alpha=0.3)
    a = res["args"]
    fig.suptitle(f"{a['k']}-sparse parity, d = {a['d']}, N = {a['N']}, ReLU; α₀ = {a['alpha0']:g}, "
                 "β₀ = α₀σ_w²/d; network sampled by Langevin at T = 2κ²", fontsize=10)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    seen = dict(zip(labels, handles, strict=True))
    for r in range(1, len(Ps)):
        h, lab = axes[r, 0].get_legend_handles_labels()
        seen.update({k: v for k, v in zip(lab, h, strict=True) if k not in seen})
    marked = any(t["kind"] == "first_order" for curves in res["theory"].values() for c in curves
                 for t in c["transitions"])
    title = ("▼ on a curve: its alignment onset (one solution) or first-order point" if marked else
             f"no curve has an alignment onset or first-order point in κ ∈ [{KAPPA_GRID[0]:g}, {KAPPA_GRID[-1]:g}]")
    fig.legend(list(seen.values()), list(seen.keys()), loc="lower center", ncol=3, fontsize=8, title=title,
               title_fontsize=8)
    from clients.plot import panel_letters

    panel_letters(axes)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    raise SystemExit(main())
