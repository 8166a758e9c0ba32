"""Learning curves of a sparse parity: NNGP, plain MF, MF-ARD and the finite network trained by Langevin dynamics.

The network of ``mean_field_ard`` (f(x) = N^{-1/2} Σ_i a_i relu(w_i·x), w_i ~ N(0, I_d/d), a_i ~ N(0, 1)) on the
k-sparse parity y = x_1 ⋯ x_k of x uniform on {±1}^d, likelihood exp[−mean_μ (y_μ − f(x_μ))²/(2κ²)]. At every
training-set size P (generated data, seed 0, the same data set for every curve):

* NNGP: kernel ridge regression with the network's infinite-width kernel (arc-cosine, ridge κ²P) on the data set
  itself — the N → ∞ limit, computed exactly and independently of the theory code;
* plain MF and MF-ARD: SaddleLab's reduced solver at finite P (equivalent-kernel closure), a P sweep by the
  engine's continuation; the equilibrium branch (largest free entropy) and every other branch found;
* Langevin: the papers' noisy gradient descent p ← p − η((T/σ_p²) p + ∇L) + √(2Tη) ξ with T = 2κ² and L the mean
  squared error, run by the experiments engine (``method="langevin"``, ``learning_rate``, ``temperature``) on the
  same network and data from the prior: 4 chains, their draws after a burn-in. m_S and the Gibbs 0-1 error carry
  their Monte-Carlo errors (ArviZ), the test MSE of the posterior-mean predictor its delta-method error, and the
  sampler's R-hat and bulk ESS are printed beside them. The O(η) bias of the unadjusted update is measured by
  repeating the smallest P at half the step (the same simulated time).

The theories' m_S is the overlap of f̄ with the target on the input law; the network's is its posterior-mean
overlap on the P_test held-out points (a Gibbs average of a linear functional: the same quantity).

    python -m benchmarks.mean_field_learning_curves [--P 50 100 200 400 800] [--kappa 0.05] [--json out.json]
        [--figure docs/img/mean_field_learning_curves.png] [--replot out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from typing import Any

import numpy as np

from clients.result import branch_of
from service.serialize import sweep_json
from solvers.core.options import SolverOptions
from solvers.experiments import SamplerOptions, sample
from solvers.experiments.diagnostics import estimate
from solvers.theories import get
from solvers.theories.mean_field_ard.data import dataset
from solvers.theories.mean_field_ard.experiment import build_target
from solvers.theories.mean_field_ard.experiment_sizes import ExperimentSizes

THEORY = get("mean_field_ard")


def spec(model: str, P: int, args: argparse.Namespace, **kw: Any) -> Any:
    return THEORY.spec_model.model_validate({
        "theory": "mean_field_ard", "model": model, "d": args.d, "N": args.N, "kappa": args.kappa, "P": P,
        "target": {"kind": "parity", "k": args.k}, "data": {"seed": 0, "P_test": args.P_test}, **kw})


def arccos_kernel(X: np.ndarray, Y: np.ndarray, d: int) -> np.ndarray:
    """E_w[relu(w·x) relu(w·y)], w ~ N(0, I/d) (Cho & Saul, order 1)."""
    nx, ny = np.linalg.norm(X, axis=1), np.linalg.norm(Y, axis=1)
    th = np.arccos(np.clip(X @ Y.T / np.outer(nx, ny), -1.0, 1.0))
    return np.outer(nx, ny) / (2.0 * math.pi * d) * (np.sin(th) + (math.pi - th) * np.cos(th))


def nngp(P: int, args: argparse.Namespace) -> dict[str, float]:
    data = dataset(spec("mf", P, args))
    K = arccos_kernel(data.X, data.X, args.d)
    alpha = np.linalg.solve(K + args.kappa**2 * P * np.eye(P), data.y)
    ft = arccos_kernel(data.X_test, data.X, args.d) @ alpha
    yt = data.y_test
    return {"m_S": float(np.mean(ft * yt) / np.mean(yt * yt)), "test_mse": float(np.mean((yt - ft) ** 2)),
            "test_error01": float(np.mean(np.sign(ft) != np.sign(yt)))}


def theory_curve(model: str, Ps: list[int], args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    out = sweep_json(THEORY.name, "P", THEORY.sweep(spec(model, Ps[0], args), "P", [float(p) for p in Ps],
                                                     "continuation", SolverOptions()))
    points = []
    for p in out["points"]:
        full = [branch_of(p, b["name"]) or b for b in p["branches"]]  # a sweep point's branches are compact
        branches = {b["name"]: {"m_S": b["order_parameters"]["m_S"], "test_mse": b["observables"]["test_mse"],
                                "test_error01": b["observables"]["test_error01"], "free_entropy": b["free_entropy"],
                                "stable": b["stable"]} for b in full if b["converged"]}
        points.append({"P": p["parameter"], "equilibrium": p["equilibrium"], "branches": branches})
    return {"points": points, "transitions": out["transitions"], "seconds": time.perf_counter() - t0}


def langevin(P: int, args: argparse.Namespace, eta: float) -> dict[str, Any]:
    s = spec("mf", P, args)
    # every prediction kept: the mean predictor's test error on the whole test set (a run here, not a stored job)
    target = build_target(s, ExperimentSizes(prediction_points=max(P, args.P_test)))
    data = dataset(s)
    steps = args.steps
    opts = SamplerOptions(method="langevin", chains=args.chains, warmup=args.burn_in, draws=steps // args.thin,
                          thin=args.thin, learning_rate=eta, temperature=2.0 * args.kappa**2, seed=1,
                          block_size=steps // args.thin)
    run = sample(target, opts)
    r = run.result
    est = {k: r.estimates[k] for k in ("m_S", "test_error01", "test_mse")}
    # the posterior-mean predictor f̄ = E f: its test MSE with the delta-method error of the linearised series
    f = run.draws.estimates["f_test"].astype(np.float64)  # (chains, draws, P_test)
    yt = data.y_test
    m = f.mean(axis=(0, 1))
    g = float(np.mean((yt - m) ** 2))
    series = g - 2.0 * np.tensordot(f - m, yt - m, axes=([2], [0])) / yt.size
    mse, _ = estimate(series)
    per_chain = [float(np.mean(np.sign(f[c].mean(axis=0)) != np.sign(yt))) for c in range(f.shape[0])]

    def fig(e: Any) -> dict[str, float]:
        return {"mean": float(e.mean), "stderr": float(e.stderr), "ess_bulk": float(e.ess_bulk),
                "rhat": float(e.rhat)}

    return {
        "P": P, "eta": eta, "step": eta * 2.0 * args.kappa**2, "status": r.status.value, "message": r.message,
        "m_S": fig(est["m_S"]), "gibbs_test_error01": fig(est["test_error01"]), "gibbs_test_mse": fig(est["test_mse"]),
        "mean_predictor_test_mse": {"mean": g, "stderr": float(mse.stderr), "ess_bulk": float(mse.ess_bulk),
                                    "rhat": float(mse.rhat)},
        "mean_predictor_test_error01": float(np.mean(np.sign(m) != np.sign(yt))),
        "mean_predictor_test_error01_chain_spread": float(np.std(per_chain, ddof=1)),
        "gradient_evaluations": r.gradient_evaluations, "seconds": r.seconds,
    }


def figure(res: dict[str, Any], path: str) -> None:
    """Both theories' equilibrium along P as served (their P sweeps computed again: seconds), the NNGP and the
    trained network from the stored run."""
    import matplotlib

    matplotlib.use("Agg")

    from clients import plot
    from service.jobs.in_process import run_job

    a = res["args"]
    symbols = {q.name: q.to_json() for q in THEORY.quantities}  # the table GET /v1/theories serves
    Ps = [p["P"] for p in res["nngp"]]
    fig, axes = plot.figure(11.0, aspect=0.72, ncols=2)
    for model, colour, name in (("mf", "C0", "plain MF"), ("mf_ard", "C3", "MF-ARD")):
        model_spec = spec(model, Ps[0], argparse.Namespace(**a)).model_dump(mode="json")
        served = run_job({"model": model_spec, "parameter": "P", "values": [float(p) for p in Ps]})
        for k, (ax, key) in enumerate(((axes[0], "m_S"), (axes[1], "test_error01"))):
            plot.learning_curve(served, key, ax, symbols=symbols, logx=True, label=f"{name} (equilibrium)",
                                color=colour, caption=["model"] if (model, k) == ("mf", 0) else False)
    for ax, key in ((axes[0], "m_S"), (axes[1], "test_error01")):
        ax.plot(Ps, [p[key] for p in res["nngp"]], "k:", marker="s", ms=4, label="NNGP (KRR on the data)")
        lg = res["langevin"]
        if key == "m_S":
            ax.errorbar([r["P"] for r in lg], [r["m_S"]["mean"] for r in lg],
                        yerr=[2 * r["m_S"]["stderr"] for r in lg], fmt="D", color="C2", ms=5, capsize=3,
                        label="Langevin, finite network (±2 s.e.)")
        else:
            ax.plot([r["P"] for r in lg], [r["mean_predictor_test_error01"] for r in lg], "D", color="C2", ms=5,
                    label="Langevin (sign of the mean predictor)")
        ax.set_xticks(Ps, [str(int(p)) for p in Ps])
        ax.minorticks_off()
        # Panel (b)'s points fill its upper left, where matplotlib's "best" put the legend over them.
        ax.legend(fontsize="small", loc="center left" if key == "m_S" else "upper right")
    plot.panel_letters(axes)
    plot.save(fig, path, dpi=120)


def table(res: dict[str, Any]) -> None:
    print("| P | NNGP m_S | plain MF m_S | MF-ARD m_S (equilibrium; other branch) | Langevin m_S | Langevin R-hat, "
          "ESS | test 0-1 error NNGP / MF / MF-ARD / Langevin | test MSE of f̄ MF-ARD / Langevin |")
    print("|---|---|---|---|---|---|---|---|")
    for i, nn in enumerate(res["nngp"]):
        mf, ard, lg = res["theory"]["mf"]["points"][i], res["theory"]["mf_ard"]["points"][i], res["langevin"][i]
        mfe, ae = mf["branches"][mf["equilibrium"]], ard["branches"].get(ard["equilibrium"], {})
        others = "; ".join(f"{n} {b['m_S']:.3f}" for n, b in ard["branches"].items() if n != ard["equilibrium"])
        print(f"| {lg['P']} | {nn['m_S']:.3f} | {mfe['m_S']:.3f} | {ard['equilibrium']} {ae.get('m_S', math.nan):.3f}"
              f"{'; ' + others if others else ''} | {lg['m_S']['mean']:.3f} ± {lg['m_S']['stderr']:.3f} | "
              f"{lg['m_S']['rhat']:.3f}, {lg['m_S']['ess_bulk']:.0f} | {nn['test_error01']:.3f} / "
              f"{mfe['test_error01']:.3f} / {ae.get('test_error01', math.nan):.3f} / "
              f"{lg['mean_predictor_test_error01']:.3f} | {ae.get('test_mse', math.nan):.3f} / "
              f"{lg['mean_predictor_test_mse']['mean']:.3f} ± {lg['mean_predictor_test_mse']['stderr']:.3f} |")
    b = res["bias_check"]
    print(f"\nstep bias at P = {b['P']}: m_S {b['eta']['m_S']['mean']:.4f} ± {b['eta']['m_S']['stderr']:.4f} (η = "
          f"{b['eta']['eta']}) vs {b['half']['m_S']['mean']:.4f} ± {b['half']['m_S']['stderr']:.4f} (η = "
          f"{b['half']['eta']})")
    for model in ("mf", "mf_ard"):
        tr = res["theory"][model]["transitions"]
        print(f"{model} P sweep transitions: " + (", ".join(f"{t['type']} {t['parameter']:.1f} {t['branches']}"
                                                            for t in tr) or "none"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--P", type=int, nargs="+", default=[50, 100, 200, 400, 800])
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--N", type=int, default=256)
    ap.add_argument("--kappa", type=float, default=0.05)
    ap.add_argument("--P-test", dest="P_test", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--burn-in", dest="burn_in", type=int, default=4000)
    ap.add_argument("--steps", type=int, default=8000, help="Langevin steps per chain after the burn-in")
    ap.add_argument("--thin", type=int, default=20)
    ap.add_argument("--eta", type=float, default=0.5, help="learning rate η (step h = η T)")
    ap.add_argument("--json", type=str, default=None)
    ap.add_argument("--figure", type=str, default=None)
    ap.add_argument("--replot", type=str, default=None, help="redraw the figure and table from a --json file")
    args = ap.parse_args(argv)
    if args.replot:
        with open(args.replot) as fh:
            res = json.load(fh)
        table(res)
        if args.figure:
            figure(res, args.figure)
        return 0
    warnings.simplefilter("ignore", RuntimeWarning)
    res: dict[str, Any] = {"args": vars(args)}
    res["nngp"] = [{"P": P, **nngp(P, args)} for P in args.P]
    res["theory"] = {}
    for model in ("mf", "mf_ard"):
        res["theory"][model] = theory_curve(model, args.P, args)
        print(f"{model}: {res['theory'][model]['seconds']:.0f} s", file=sys.stderr, flush=True)
    res["langevin"] = []
    for P in args.P:
        res["langevin"].append(langevin(P, args, args.eta))
        print(f"langevin P={P}: {res['langevin'][-1]['seconds']:.0f} s", file=sys.stderr, flush=True)
    half = argparse.Namespace(**{**vars(args), "burn_in": 2 * args.burn_in, "steps": 2 * args.steps,
                                 "thin": 2 * args.thin})
    res["bias_check"] = {"P": args.P[0], "eta": res["langevin"][0], "half": langevin(args.P[0], half, args.eta / 2)}
    table(res)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1)
    if args.figure:
        figure(res, args.figure)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
