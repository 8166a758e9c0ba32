"""The blog's sample-complexity claim (its Fig. 7.1): the adaptive network learns the cubic part at P = O(D), a
fixed kernel needs P = O(D³). Theory for each treatment over a range of D, the sampled network at three D.

The proportional regime of the blog: N = ν D, a total readout variance σ_a² = N s_a2 = g and T of order one.
Two families: the paper's (ν = 14/3, g = 8/700, T = 0.18, which is the paper's setting at D = 150) and a
cheaper one for the network (ν = 2, g = 0.0269, T = 0.212: the same interaction u and η at P = 10 D, so the
onset sits near P = 10 D). For each treatment (mean field, standard cavity, tree level) a P sweep of the
population theory at each D gives

* P_c: the first-order onset of the aligned population (D → ∞ saddle point at that D),
* P_1/10: where the cubic learned fraction 1 − c/ε of the finite-D solution reaches 1/10,

and the fixed NNGP kernel needs P_fixed = T/λ3 for half of the cubic part. Exponents are least-squares slopes of
log P against log D with their standard errors. The network (NUTS, readout integrated out) is sampled at
P = 20 D for D = 12, 18, 27 in the second family; its learned cubic fraction on fresh inputs, 1 − c_test/ε, is
set beside each treatment's finite-D value and the NNGP kernel's (P/T) λ3/(1 + (P/T) λ3). The network's onset
against P at several D, with its fitted exponent, is :mod:`benchmarks.bench_rubin_cavity_onset`.

    python -m benchmarks.bench_rubin_cavity_sample_complexity            # about 15 min on 2 idle cores
    python -m benchmarks.bench_rubin_cavity_sample_complexity --network-only   # the theory kept, the network again
    python -m benchmarks.bench_rubin_cavity_sample_complexity --replot   # table and figure from docs/data
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from benchmarks.bench_rubin_cavity_network import TREATMENTS, gradient_seconds, run_chains, scalar_estimates
from benchmarks.rubin_cavity_network_figure import COLOURS, NAMES
from benchmarks.showcase_common import load, save

DATA, FIGURE = "docs/data/rubin_cavity_sample_complexity.json", "docs/img/rubin_cavity_sample_complexity.png"
FAMILIES = {
    "paper": {"nu": 14.0 / 3.0, "g": 8.0 / 700.0, "T": 0.18},
    "network": {"nu": 2.0, "g": 0.0269, "T": 0.212},
}
THEORY_D = [12, 18, 27, 50, 100, 200, 400, 800, 1600]
NETWORK_D = [12, 18, 27]
P_PER_D = 20.0
EPSILON = -0.3


def spec(family: dict[str, float], D: float, P: float, mode: str = "self_consistent", **fields: Any) -> Any:
    from pydantic import TypeAdapter

    from solvers.theories import get

    N = family["nu"] * D
    body = {"theory": "rubin_cavity", "mode": mode, "D": D, "N": N, "s_a2": family["g"] / N, "T": family["T"],
            "P": P, "sigma_w2": 0.5, "epsilon": EPSILON, **fields}
    return TypeAdapter(get("rubin_cavity").spec_model).validate_python(body)


def onsets(family: dict[str, float], D: int) -> dict[str, Any]:
    """P_c and P_1/10 of each treatment at D (a P sweep from 2 D to 60 D), and the NNGP's P_fixed."""
    import numpy as np

    from solvers.core.options import SolverOptions
    from solvers.theories import get

    theory = get("rubin_cavity")
    out: dict[str, Any] = {}
    for name, fields in TREATMENTS.items():
        grid = [float(p) for p in np.linspace(2.0 * D, 60.0 * D, 59)]
        sweep = theory.sweep(spec(family, float(D), grid[0], **fields), "P", grid, "continuation", SolverOptions())
        sc = sweep.notes.fields["sample_complexity"]
        out[name] = {"P_c": sc["adaptive"]["P_transition"], "P_tenth": sc["adaptive"]["P_cubic_tenth_finite_D"]}
        out["nngp"] = {"P_fixed": sc["nngp"]["P_cubic_learnable"]}
    return out


def exponent(Ds: list[float], Ps: list[float | None]) -> dict[str, float] | None:
    """Slope of log P against log D and its least-squares standard error (None with fewer than 3 points)."""
    import numpy as np

    pairs = [(d, p) for d, p in zip(Ds, Ps, strict=True) if p is not None and p > 0]
    if len(pairs) < 3:
        return None
    x, y = np.log([d for d, _ in pairs]), np.log([p for _, p in pairs])
    A = np.column_stack([x, np.ones_like(x)])
    coef = np.linalg.lstsq(A, y, rcond=None)[0]
    resid = y - A @ coef
    sigma2 = float(resid @ resid) / max(len(x) - 2, 1)
    cov = sigma2 * np.linalg.inv(A.T @ A)
    return {"exponent": float(coef[0]), "stderr": float(math.sqrt(cov[0, 0])), "points": len(pairs)}


P_TEST = 500


def network_point(family: dict[str, float], D: int, args: argparse.Namespace) -> dict[str, Any]:
    """NUTS at P = P_PER_D · D: the learned fractions with their errors, and each treatment's prediction."""
    from solvers.experiments import SamplerOptions
    from solvers.theories.rubin_cavity.experiment import ExperimentSizes, build_target

    P = int(P_PER_D * D)
    target = build_target(spec(family, D, P, "finite_sample", P_test=P_TEST, seed=0), ExperimentSizes())
    grad = gradient_seconds(target)
    options = SamplerOptions(method="nuts", chains=args.chains, warmup=args.warmup, draws=args.draws,
                             seed=args.seed, block_size=100)
    result = run_chains(target, options, args.apart)
    est = scalar_estimates(result, ("b", "c", "b_test", "c_test", "R"))
    s = result.sampler
    return {"D": D, "N": family["nu"] * D, "P": P, "estimates": est, "theory": predictions(family, D, P),
            "converged": result.converged, "message": result.message, "max_rhat": s.max_rhat,
            "min_ess_bulk": s.min_ess_bulk,
            "seconds": result.seconds, "gradient_evaluations": result.gradient_evaluations, "gradient_seconds": grad}


def predictions(family: dict[str, float], D: int, P: int) -> dict[str, Any]:
    """Each treatment's learned fractions: finite_sample on the network's data, projected on the same test inputs
    as the network's (like for like), and the population theory at D; the NNGP kernel's cubic learnability."""
    from solvers.core.options import SolverOptions
    from solvers.theories import get

    theory = get("rubin_cavity")
    out: dict[str, Any] = {}
    for name, fields in TREATMENTS.items():
        fs = theory.solve(spec(family, D, P, "finite_sample", P_test=P_TEST, seed=0, **fields), SolverOptions())
        pop = theory.solve(spec(family, float(D), float(P), **fields), SolverOptions())
        fd, notes = pop.notes.observables["finite_D"], fs.notes.observables
        out[name] = {"cubic": 1.0 - notes["c_test"] / EPSILON, "linear": 1.0 - notes["b_test"],
                     "cubic_population": fd["learned_fraction_cubic"],
                     "linear_population": fd["learned_fraction_linear"]}
        out["nngp"] = {"cubic": pop.equilibrium_branch.report.observables["nngp"]["learned_fraction_cubic"]}
    return out


def table(stored: dict[str, Any]) -> str:
    rows = []
    for fam, block in stored["theory"].items():
        f = FAMILIES[fam]
        rows += [f"\nFamily {fam}: N = {f['nu']:.4g} D, σ_a² = {f['g']:.4g}, T = {f['T']:g}\n",
                 "| quantity | " + " | ".join(f"D = {d}" for d in block["D"]) + " | exponent (all D) | exponent "
                 "(D ≥ 100) |", "|---|" + "---|" * (len(block["D"]) + 2)]
        for key, label in (("P_c", "P_c"), ("P_tenth", "P_1/10 (finite D)")):
            for t in TREATMENTS:
                vals = block[t][key]
                fit, fit_big = block["fits"][t][key], block["fits"][t][key + "_large"]
                cells = ["—" if v is None else f"{v:.4g}" for v in vals]
                rows.append(f"| {label}, {NAMES[t]} | " + " | ".join(cells) + f" | {_fit(fit)} | {_fit(fit_big)} |")
        cells = [f"{v:.3g}" for v in block["nngp"]["P_fixed"]]
        rows.append("| P_fixed = T/λ3, NNGP | " + " | ".join(cells) + f" | {_fit(block['fits']['nngp'])} | "
                    f"{_fit(block['fits']['nngp_large'])} |")
    rows += ["\nNetwork at P = 20 D (family network): learned cubic fraction on fresh inputs\n",
             "| D | N | P | network 1 − c_test/ε | MF / std / TL (finite_sample, same test inputs) | MF / std / TL "
             "(population, finite D) | NNGP | network 1 − b_test | MF / std / TL (same test inputs) | "
             "converged (R-hat, ESS) | seconds |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for pt in stored["network"]:
        c, cse = pt["estimates"]["c_test"]["mean"], pt["estimates"]["c_test"]["stderr"]
        b, bse = pt["estimates"]["b_test"]["mean"], pt["estimates"]["b_test"]["stderr"]
        th = " / ".join(f"{pt['theory'][t]['cubic']:.4f}" for t in TREATMENTS)
        pop = " / ".join(f"{pt['theory'][t]['cubic_population']:.4f}" for t in TREATMENTS)
        lin = " / ".join(f"{pt['theory'][t]['linear']:.4f}" for t in TREATMENTS)
        cubic = f"{1 - c / EPSILON:.4f} ± {cse / abs(EPSILON):.4f}"
        rows.append(f"| {pt['D']} | {pt['N']:g} | {pt['P']} | {cubic} | {th} | {pop} | "
                    f"{pt['theory']['nngp']['cubic']:.2e} | {1 - b:.4f} ± {bse:.4f} | {lin} | {pt['converged']} "
                    f"({pt['max_rhat']:.3f}, {pt['min_ess_bulk']:.0f}) | {pt['seconds']:.0f} |")
    return "\n".join(rows)


def _fit(fit: dict[str, float] | None) -> str:
    return "—" if fit is None else f"{fit['exponent']:.4f} ± {fit['stderr']:.4f}"


def figure(stored: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.3))
    ax = axes[0]
    block = stored["theory"]["paper"]
    Ds = block["D"]
    for t in TREATMENTS:
        thin = t == "tree_level"  # on top of mean field: thinner, crosses
        fit = block["fits"][t]["P_c"]
        ax.loglog(Ds, block[t]["P_c"], "x-" if thin else "o-", color=COLOURS[t], ms=4, lw=1 if thin else 2,
                  label=f"P_c, {NAMES[t]} (slope {fit['exponent']:.3f})")
        fit, big = block["fits"][t]["P_tenth"], block["fits"][t]["P_tenth_large"]
        ax.loglog(Ds, block[t]["P_tenth"], "x:" if thin else "s:", color=COLOURS[t], ms=4, lw=1,
                  label=f"P_1/10 finite D, {NAMES[t]} ({fit['exponent']:.2f} ± {fit['stderr']:.2f}; "
                  f"D ≥ 100: {big['exponent']:.3f})")
    ax.loglog(Ds, block["nngp"]["P_fixed"], "k^-", ms=3,
              label=f"NNGP P_fixed = T/λ3 (slope {block['fits']['nngp']['exponent']:.3f})")
    ax.set_xlabel("D")
    ax.set_ylabel("P")
    ax.set_title("paper family (N = 14D/3, σ_a² = 8/700, T = 0.18)", fontsize=9)
    ax.legend(fontsize=6.5)
    ax = axes[1]
    net = stored["network"]
    Dn = [p["D"] for p in net]
    for t in TREATMENTS:
        ax.plot(Dn, [p["theory"][t]["cubic"] for p in net], "x" if t == "tree_level" else "s", color=COLOURS[t],
                mfc="none", ms=7, label=f"{NAMES[t]}, finite_sample (same test inputs)")
        ax.plot(Dn, [p["theory"][t]["cubic_population"] for p in net], ":", color=COLOURS[t],
                label=f"{NAMES[t]}, population at D")
    ax.plot(Dn, [p["theory"]["nngp"]["cubic"] for p in net], "k^-", label="fixed NNGP kernel")
    ax.errorbar(Dn, [1 - p["estimates"]["c_test"]["mean"] / EPSILON for p in net],
                yerr=[2 * p["estimates"]["c_test"]["stderr"] / abs(EPSILON) for p in net], fmt="ko", capsize=3,
                label="network (±2 s.e.)")
    ax.set_xlabel("D (P = 20 D, N = 2 D)")
    ax.set_ylabel("learned cubic fraction 1 − c/ε (fresh inputs)")
    ax.set_title("network family: at P ∝ D the adaptive\nnetwork keeps learning H3", fontsize=9)
    ax.legend(fontsize=7)
    from clients.plot import panel_letters

    panel_letters(axes)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def theory_block(family: dict[str, float], Ds: list[int]) -> dict[str, Any]:
    rows = [onsets(family, D) for D in Ds]
    block: dict[str, Any] = {"D": Ds, "nngp": {"P_fixed": [r["nngp"]["P_fixed"] for r in rows]}, "fits": {}}
    large = [i for i, d in enumerate(Ds) if d >= 100]
    for t in TREATMENTS:
        block[t] = {k: [r[t][k] for r in rows] for k in ("P_c", "P_tenth")}
        block["fits"][t] = {}
        for k in ("P_c", "P_tenth"):
            block["fits"][t][k] = exponent(Ds, block[t][k])
            block["fits"][t][k + "_large"] = exponent([Ds[i] for i in large], [block[t][k][i] for i in large])
    block["fits"]["nngp"] = exponent(Ds, block["nngp"]["P_fixed"])
    block["fits"]["nngp_large"] = exponent([Ds[i] for i in large], [block["nngp"]["P_fixed"][i] for i in large])
    return block


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--draws", type=int, default=800)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--apart", action="store_true", help="run the chains one at a time and join them")
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--figure", default=FIGURE)
    parser.add_argument("--replot", action="store_true", help="redraw the figure and table from --data")
    parser.add_argument("--network-only", action="store_true", help="keep the stored theory, sample the network again")
    parser.add_argument("--retheory", action="store_true", help="keep the stored draws, solve the predictions again")
    args = parser.parse_args()
    if args.replot or args.retheory:
        stored = load(args.data)
        if args.retheory:
            for pt in stored["network"]:
                pt["theory"] = predictions(FAMILIES["network"], pt["D"], pt["P"])
            save(args.data, stored)
    else:
        import jax

        jax.config.update("jax_enable_x64", True)
        if args.network_only:
            stored = {**load(args.data), "command": vars(args), "network": []}
        else:
            stored = {"command": vars(args), "theory": {}, "network": []}
            for name, family in FAMILIES.items():
                print(f"theory, family {name} ...", file=sys.stderr, flush=True)
                stored["theory"][name] = theory_block(family, THEORY_D)
                save(args.data, stored)
        for D in NETWORK_D:
            print(f"network D = {D} ...", file=sys.stderr, flush=True)
            stored["network"].append(network_point(FAMILIES["network"], D, args))
            save(args.data, stored)
    print(table(stored))
    figure(stored, args.figure)


if __name__ == "__main__":
    main()
