"""The paper's own parity setting, theory beside network: d = 35, k = 4, N = 512, ReLU, α₀ = 4, P from 10 to 20 000.

One command runs the whole learning curve: at every P the network (``mean_field_ard``'s finite network on its
generated data, Langevin at T = 2κ² from the prior and from the aligned start until R-hat ≤ 1.01 and bulk
ESS ≥ 400 on m_S, both weight second moments and their ratio: ``benchmarks.mean_field_network_runs``) and the
reduced solver's plain MF, MF-ARD with shared precisions and MF-ARD with per-unit precisions at the same finite P
(a P sweep by continuation). It is sized for a GPU (a CUDA jaxlib: the network's Target is pure JAX); on a CPU
``--measure`` times a short run of the network at every P and prints the projected cost of the full run:

    python -m benchmarks.mean_field_paper_setting --measure              # CPU: cost per chain-step, projection
    python -m benchmarks.mean_field_paper_setting --json paper.json --figure paper.png   # the full run (GPU)

The projection takes the steps a converged point needs from the d = 20 κ scan (``--steps-per-point``, steps per
chain after the burn-in) — the paper's network is larger and may mix more slowly, so it is a lower bound.
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

from benchmarks.mean_field_network_runs import converge
from clients.result import branch_of
from service.serialize import sweep_json
from solvers.core.options import SolverOptions
from solvers.experiments import SamplerOptions, sample
from solvers.theories import get
from solvers.theories.mean_field_ard.experiment import build_target

THEORY = get("mean_field_ard")
P_VALUES = [10, 30, 100, 300, 1000, 3000, 10_000, 20_000]
MODELS: dict[str, tuple[str, dict[str, Any] | None]] = {
    "mf": ("mf", None),
    "mf_ard_shared": ("mf_ard", {"precisions": "shared"}),
    # k = 4: 20 bulk nodes per coordinate (2.7·10⁵ nodes; 40 would be 3.7·10⁶)
    "mf_ard_per_unit": ("mf_ard", {"precisions": "per_unit"}),
}


def spec(model: str, P: int, args: argparse.Namespace, ard: dict[str, Any] | None = None) -> Any:
    extra: dict[str, Any] = {}
    if ard:
        extra = {"ard": {**ard, "alpha0": args.alpha0}, "quadrature": {"bulk_per_unit": 20}}
    return THEORY.spec_model.model_validate({
        "theory": "mean_field_ard", "model": model, "d": args.d, "N": args.N, "kappa": args.kappa, "P": P,
        "target": {"kind": "parity", "k": args.k}, "data": {"seed": 0, "P_test": args.P_test}, **extra})


def options(args: argparse.Namespace, **kw: Any) -> SamplerOptions:
    T = 2.0 * args.kappa**2
    base = {"method": "langevin", "chains": args.chains, "warmup": math.ceil(args.burn_in_time / (args.eta * T)),
            "draws": 1, "thin": args.thin, "learning_rate": args.eta, "temperature": T, "seed": 11,
            "block_size": args.block}
    return SamplerOptions(**(base | kw))


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Seconds per chain-step of the network at every P (a short run after one compiled warm-up)."""
    rows = []
    h = args.eta * 2.0 * args.kappa**2
    for P in args.P:
        target = build_target(spec("mf", P, args))
        n = args.measure_steps // args.thin
        opts = options(args, warmup=0, draws=n, block_size=n, step_size=h, learning_rate=None, temperature=None,
                       chains=args.measure_chains)
        sample(target, opts.model_copy(update={"draws": 1, "block_size": 1}))  # compile
        t0 = time.perf_counter()
        sample(target, opts)
        per = (time.perf_counter() - t0) / (args.measure_steps * opts.chains)
        steps = 2 * args.chains * (math.ceil(args.burn_in_time / h) + args.steps_per_point)
        rows.append({"P": P, "ms_per_chain_step": 1e3 * per, "chain_steps": steps,
                     "projected_hours": per * steps / 3600})
        print(f"P = {P}: {1e3 * per:.3f} ms per chain-step; {steps:.3g} chain-steps → {per * steps / 3600:.2f} h",
              file=sys.stderr, flush=True)
    return rows


def theory_curve(label: str, args: argparse.Namespace) -> dict[str, Any]:
    model, ard = MODELS[label]
    t0 = time.perf_counter()
    sw = THEORY.sweep(spec(model, args.P[0], args, ard), "P", [float(p) for p in args.P], "continuation",
                      SolverOptions())
    out = sweep_json(THEORY.name, "P", sw)
    points = [{"P": p["parameter"], "equilibrium": p["equilibrium"],
               "branches": {b["name"]: {"m_S": b["order_parameters"]["m_S"],
                                        "second_moment_ratio": b["observables"]["second_moment_relevant"]
                                        / b["observables"]["second_moment_irrelevant"],
                                        "test_mse": b["observables"]["test_mse"], "stable": b["stable"]}
                            for b in (branch_of(p, c["name"]) or c for c in p["branches"]) if b["converged"]}}
              for p in out["points"]]
    return {"points": points, "transitions": out["transitions"], "seconds": time.perf_counter() - t0}


def network_point(P: int, args: argparse.Namespace) -> dict[str, Any]:
    h = args.eta * 2.0 * args.kappa**2
    store = Path(args.store) / f"P{P}" if args.store else None
    out = converge(build_target(spec("mf", P, args)), options(args), max_steps=args.max_steps,
                   min_steps=math.ceil(args.min_time / h), store=store,
                   log=lambda m: print(m, file=sys.stderr, flush=True))
    return {"P": P, **out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--P", type=int, nargs="+", default=P_VALUES)
    ap.add_argument("--d", type=int, default=35)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--N", type=int, default=512)
    ap.add_argument("--kappa", type=float, default=0.05)
    ap.add_argument("--alpha0", type=float, default=4.0)
    ap.add_argument("--P-test", dest="P_test", type=int, default=2000)
    ap.add_argument("--chains", type=int, default=4, help="chains per start (prior, aligned)")
    ap.add_argument("--eta", type=float, default=0.5)
    ap.add_argument("--burn-in-time", dest="burn_in_time", type=float, default=10.0)
    ap.add_argument("--min-time", dest="min_time", type=float, default=25.0)
    ap.add_argument("--thin", type=int, default=50)
    ap.add_argument("--block", type=int, default=100)
    ap.add_argument("--max-steps", dest="max_steps", type=int, default=400_000)
    ap.add_argument("--store", type=str, default="/tmp/saddlelab_paper_setting")
    ap.add_argument("--measure", action="store_true", help="time the network per chain-step and project the run")
    ap.add_argument("--measure-steps", dest="measure_steps", type=int, default=200)
    ap.add_argument("--measure-chains", dest="measure_chains", type=int, default=2,
                    help="vmapped chains of the timing run (the cost per chain-step is the same for more)")
    ap.add_argument("--steps-per-point", dest="steps_per_point", type=int, default=50_000,
                    help="steps per chain after the burn-in assumed by the projection")
    ap.add_argument("--json", type=str, default=None)
    ap.add_argument("--figure", type=str, default=None)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", RuntimeWarning)
    res: dict[str, Any] = {"args": vars(args)}
    if args.measure:
        res["measure"] = measure(args)
        total = sum(r["projected_hours"] for r in res["measure"])
        print(f"projected network time for the whole curve on this machine: {total:.1f} h", file=sys.stderr)
    else:
        res["theory"] = {label: theory_curve(label, args) for label in MODELS}
        res["network"] = [network_point(P, args) for P in args.P]
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    if args.figure and "network" in res:
        figure(res, args.figure)
    return 0


def figure(res: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.9))
    names = {"mf": ("C0", "plain MF"), "mf_ard_shared": ("C3", "MF-ARD, shared precisions"),
             "mf_ard_per_unit": ("C1", "MF-ARD, per-unit precisions")}
    for ax, key, ylabel in zip(axes, ("m_S", "second_moment_ratio"),
                               ("target overlap $m_S$", r"$\langle w_{rel}^2\rangle / \langle w_{irr}^2\rangle$"),
                               strict=True):
        for label, curve in res["theory"].items():
            eq = [(p["P"], p["branches"][p["equilibrium"]][key]) for p in curve["points"]
                  if p["equilibrium"] in p["branches"]]
            if eq:
                colour, name = names[label]
                ax.plot(*zip(*eq, strict=True), "-", color=colour, marker="o", ms=3, label=name)
        for conv in (True, False):
            net = [r for r in res["network"] if r["converged"] == conv]
            if net:
                ax.errorbar([r["P"] for r in net], [r[key]["mean"] for r in net],
                            yerr=[2 * r[key]["stderr"] for r in net], fmt="D", color="k", ms=5, capsize=3,
                            mfc="k" if conv else "none",
                            label="network, Langevin (±2 s.e.)" + ("" if conv else ", not converged"))
        ax.set_xscale("log")
        ax.set_xlabel("training-set size P")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    from clients.plot import panel_letters, tidy_log_ticks

    for ax in axes:
        tidy_log_ticks(ax)
    panel_letters(axes)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    raise SystemExit(main())
