"""Which prefactors does a finite two-hidden-layer network follow? HMC against the three forms of the theory.

The two-hidden-layer equations of the deep-MLP paper exist in three forms (``hciz_mlp`` field ``prefactors``):
``derived`` (μ₁² in Q̂₂:₁, α/γ₁ in Q̂₁, from differentiating f⁽²⁾_RS), ``ones_notebook`` (ν₁² in Q̂₂:₁) and
``gauss_notebook`` (α/γ₂ in Q̂₁). They coincide for identical layers and equal widths, so the comparison uses
two different activations and unequal widths, where the specialised branch differs by factors 1.4–3.6:

    σ₁ = tanh(2x)/√E tanh²(2z) (μ₁ = 0.915),  σ₂ = 0.4x + c He₃(x)/6 with c² = 6·0.84 (ν₁ = 0.4, E σ₂² = 1),
    γ₁ = 1/2, γ₂ = 1, readout v = 1, Gaussian weights, Δ = 0.1.

The teacher–student network (``solvers/theories/hciz_mlp/experiment.py``) is sampled by the experiment engine
(``solvers.experiments``: BlackJAX NUTS with window adaptation, two chains per run, vectorised) from the teacher and
from a random draw of the prior; the measured ε* = ½·(Gibbs test error) carries its MCSE and bulk ESS (ArviZ) and
R-hat, and the per-neuron overlaps are aligned to the teacher draw by draw before they are summarised. Each theory
value is the stable fully specialised branch's ε* (the one HMC from the teacher tracks) and the equilibrium's.

    python -m benchmarks.hciz_prefactors [--quick] [--out docs/data/hciz_prefactors.json]
    python -m benchmarks.hciz_prefactors --figure docs/img/hciz_specialisation_map.png \
        --from docs/data/hciz_prefactors.json

``--quick`` runs one small configuration (a smoke test, ~1 min); the full run (~27 min on 2 cores) gives the
numbers of docs/theories/hciz_mlp.md. ``--figure`` draws the per-neuron specialisation map (theory of the
derived form beside the d = 20 teacher-start runs, ``clients.plot.specialisation_map``) from a stored run.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from service.serialize import solution_json, sweep_json
from solvers.core.options import SolverOptions
from solvers.theories import get

THEORY = get("hciz_mlp")
PREFACTORS = ("derived", "ones_notebook", "gauss_notebook")
SIGMA1 = {"name": "tanh2", "unit_variance": True}
SIGMA2 = {"hermite": [0.0, 0.4, 0.0, float(np.sqrt(6.0 * 0.84))]}
CONFIG: dict[str, Any] = {"theory": "hciz_mlp", "depth": 2, "activation": [SIGMA1, SIGMA2], "gamma": [0.5, 1.0],
                          "readout": "ones", "weight_prior": "gaussian", "Delta": 0.1}
#: (d, α, init, seed, chains, warmup, draws)
FULL_RUNS = [
    (20, 3.0, "teacher", 0, 2, 200, 100),
    (20, 4.0, "teacher", 0, 2, 200, 100),
    (20, 6.0, "teacher", 0, 2, 200, 100),
    (20, 4.0, "teacher", 1, 2, 200, 100),
    (20, 4.0, "prior", 0, 2, 200, 100),
    (12, 4.0, "teacher", 0, 2, 200, 100),
    (16, 4.0, "teacher", 0, 2, 200, 100),
    (24, 4.0, "teacher", 0, 2, 200, 100),
]
QUICK_RUNS = [(12, 4.0, "teacher", 0, 2, 150, 80)]


def spec_at(alpha: float, prefactors: str = "derived", **extra: Any) -> Any:
    return THEORY.spec_model.model_validate({**CONFIG, "alpha": alpha, "prefactors": prefactors, **extra})


def theory_at(alphas: list[float]) -> dict[float, dict[str, dict[str, Any]]]:
    """Per α and prefactor form: ε* of the most specialised stable branch and of the equilibrium.

    Branches come from a continuation sweep in α (point solves from the named starts can miss a branch that
    continuation keeps), on a grid that contains every α asked for."""
    grid = sorted({*np.round(np.linspace(2.0, 8.0, 25), 10).tolist(), *alphas})
    out: dict[float, dict[str, dict[str, Any]]] = {a: {} for a in alphas}
    for pf in PREFACTORS:
        res = sweep_json(THEORY.name, "alpha", THEORY.sweep(spec_at(grid[0], pf), "alpha", grid, "continuation",
                                                            SolverOptions()))
        for point in res["points"]:
            alpha = next((a for a in alphas if abs(a - point["parameter"]) < 1e-9), None)
            if alpha is None:
                continue
            stable = [b for b in point["branches"] if b["stable"] and b["converged"]]
            best = max(stable, key=lambda b: b["order_parameters"]["Q"][0] + b["order_parameters"]["Q"][1])
            eq = next(b for b in point["branches"] if b["name"] == point["equilibrium"])
            out[alpha][pf] = {
                "specialised_branch": best["name"],
                "specialised_eps": best["observables"]["generalization_error"],
                "specialised_Q": best["order_parameters"]["Q"],
                "specialised_Q21": best["order_parameters"]["Q21"],
                "equilibrium": point["equilibrium"],
                "equilibrium_eps": eq["observables"]["generalization_error"],
                "map": {"v2": best["order_parameters"]["v2"], "Q1": best["order_parameters"]["Q1"],
                        "Q2": best["order_parameters"]["Q2"][0]},
            }
    return out


def _figures(est: Any) -> dict[str, float]:
    return {"mean": float(est.mean), "stderr": float(est.stderr), "ess": float(est.ess_bulk), "rhat": float(est.rhat)}


def run_experiment(d: int, alpha: float, init: str, seed: int, chains: int, warmup: int, draws: int) -> dict[str, Any]:
    import jax

    from solvers.experiments import SamplerOptions, run_block, summarize
    from solvers.theories.hciz_mlp.experiment import ExperimentSizes, aligned_draws, build_target

    jax.config.update("jax_enable_x64", True)
    spec = spec_at(alpha)
    target = build_target(spec, ExperimentSizes(d=d, n_test=4000), seed=seed)
    options = SamplerOptions(method="nuts", chains=chains, warmup=warmup, draws=draws, seed=1000 + seed, init=init,
                             block_size=draws)
    checkpoint, block = run_block(target, options, None, draws)
    result = summarize(target, options, checkpoint, aligned_draws(target, spec, block))
    est, sampler = result.estimates, result.sampler
    k1, k2 = target.info["widths"]
    return {
        "d": d, "alpha": alpha, "init": init, "seed": seed, "chains": chains, "warmup": warmup, "draws": draws,
        "k1": k1, "k2": k2, "n": target.n_data,
        "eps": _figures(est["generalization_error"]),
        "train_mse": float(est["train_mse"].mean),
        "acceptance": sampler.acceptance,
        "divergences": sampler.divergences,
        "mean_leapfrog_steps": float(np.mean(block.gradient_evaluations)),
        "gradient_evaluations": result.gradient_evaluations,
        "seconds": result.seconds,
        "converged": result.converged,
        "status": result.status.value,
        "Q1_mean": _figures(est["Q1_mean"]), "Q2_mean": _figures(est["Q2_mean"]), "Q21_mean": _figures(est["Q21_mean"]),
        "neurons": {"v2": [abs(x) for x in target.info["v2"]], "Q1": [float(x) for x in est["Q1"].mean],
                    "Q2": [float(x) for x in est["Q2"].mean]},
    }


def verdict(run: dict[str, Any], theory: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """z = (measured − predicted)/MCSE per form (the branch HMC tracks: specialised from the teacher start)."""
    eps, se = run["eps"]["mean"], run["eps"]["stderr"]
    key = "specialised_eps" if run["init"] == "teacher" else "equilibrium_eps"
    z = {pf: (eps - theory[pf][key]) / se for pf in PREFACTORS}
    rel = {pf: eps / theory[pf][key] - 1.0 for pf in PREFACTORS}
    return {"z": z, "relative_deviation": rel, "closest": min(PREFACTORS, key=lambda pf: abs(rel[pf]))}


def figure(path: str, stored: str) -> None:
    """Theory (derived form; equilibrium below α = 3, the specialised branch HMC tracks from 3 on) beside the
    d = 20 teacher-start runs of a stored comparison."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from clients.plot import panel_letters, specialisation_map

    with open(stored) as fh:
        data = json.load(fh)
    theory_points = []
    for alpha in (1.5, 2.5):
        res = solution_json(THEORY.name, THEORY.solve(spec_at(alpha), SolverOptions()))
        theory_points.append({"parameter": alpha, "order_parameters": res["order_parameters"]})
    for alpha, th in data["theory"].items():
        m = th["derived"]["map"]
        theory_points.append({"parameter": float(alpha), "order_parameters": {"v2": m["v2"], "Q1": m["Q1"],
                                                                             "v": [1.0], "Q2": [m["Q2"]]}})
    experiment = [{"alpha": r["alpha"], **r["neurons"]} for r in data["runs"]
                  if r["d"] == 20 and r["init"] == "teacher" and r["seed"] == 0]
    fig, axes = plt.subplots(len(theory_points), 4, figsize=(12, 2.1 * len(theory_points)), sharex=True, sharey=True,
                             squeeze=False)
    symbols = {q.name: q.to_json() for q in THEORY.quantities}  # the table GET /v1/theories serves
    specialisation_map(theory_points, experiment, layer=1, axes=axes[:, :2], symbols=symbols)
    specialisation_map(theory_points, experiment, layer=2, axes=axes[:, 2:], symbols=symbols)
    axes[0][0].set_title("layer 1: theory")
    axes[0][1].set_title("layer 1: HMC, d = 20")
    axes[0][2].set_title("layer 2: theory")
    axes[0][3].set_title("layer 2: HMC, d = 20")
    panel_letters(axes)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"[figure] {path}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="one small run (smoke test)")
    parser.add_argument("--out", default=None, help="write all numbers to this JSON file")
    parser.add_argument("--figure", default=None, help="draw the specialisation map to this PNG (needs --from)")
    parser.add_argument("--from", dest="stored", default=None, help="a JSON file written by --out")
    args = parser.parse_args()
    if args.figure:
        if not args.stored:
            parser.error("--figure needs --from (a stored comparison)")
        figure(args.figure, args.stored)
        return
    runs = QUICK_RUNS if args.quick else FULL_RUNS
    t0 = time.perf_counter()
    theory = theory_at(sorted({r[1] for r in runs}))
    for alpha, th in theory.items():
        cells = ", ".join(f"{pf}: {th[pf]['specialised_eps']:.5f} ({th[pf]['specialised_branch']})"
                          for pf in PREFACTORS)
        print(f"[theory] α={alpha:g}: specialised ε* — {cells}")
    results = []
    print("| d | α | init | seed | ε* measured ± MCSE | ESS | R-hat | ε* derived | ones_notebook | gauss_notebook "
          "| z derived / ones / gauss | closest | grads | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for run_args in runs:
        run = run_experiment(*run_args)
        th = theory[run["alpha"]]
        run["verdict"] = verdict(run, th)
        key = "specialised_eps" if run["init"] == "teacher" else "equilibrium_eps"
        z = run["verdict"]["z"]
        print(f"| {run['d']} | {run['alpha']:g} | {run['init']} | {run['seed']} | {run['eps']['mean']:.5f} ± "
              f"{run['eps']['stderr']:.5f} | {run['eps']['ess']:.0f} | {run['eps']['rhat']:.3f} | "
              f"{th['derived'][key]:.5f} | {th['ones_notebook'][key]:.5f} | {th['gauss_notebook'][key]:.5f} | "
              f"{z['derived']:+.1f} / {z['ones_notebook']:+.1f} / {z['gauss_notebook']:+.1f} | "
              f"{run['verdict']['closest']} | {run['gradient_evaluations']} | {run['seconds']:.0f} |", flush=True)
        results.append(run)
    print(f"[total] {time.perf_counter() - t0:.0f} s")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"config": CONFIG, "theory": {str(a): t for a, t in theory.items()}, "runs": results}, fh,
                      indent=1)
        print(f"[out] {args.out}")


if __name__ == "__main__":
    main()
