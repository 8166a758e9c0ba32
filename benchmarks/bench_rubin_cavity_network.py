"""The network that decides: the sampled erf network of ``rubin_cavity`` beside its three treatments, along T.

The paper's Fig. 2 (b, c against σ² = T) at a size two CPU cores afford. The paper's (α, β) scaling
(N → βN, D → √β D, σ_a² → σ_a²/√β, T → (α/β) T, P → αP) with α = β = 0.12 takes N = 700, P = 3000, D = 150
to N = 84, P = 360, D = 52 at the same T: it keeps u = P² s_a2/(T² D) and η = P N s_a2/(T D) exactly (s_a2 is
set from them, since D is rounded), hence the D → ∞ population theory, its u_c and T_c = 0.1787; it changes
D (the finite-D smoothing, ∝ 1/D), λ = s_a2 P/T (the standard cavity's readout factor, 0.27 → 0.79) and the
tree level's κ = η/N (0.0018 → 0.015), so the three treatments differ more here than at the paper's size.

At each T the posterior of the N × D hidden weights (readout integrated out exactly) is sampled with NUTS and
set beside, on the same training set, ``finite_sample`` of each treatment (mean field, standard cavity, tree
level) for the training-residual projection (b, c) and R = E[ρ²], and beside the population theory
(``self_consistent`` at the network's D) for the test-set projection (b_test, c_test) that the paper plots.

    python -m benchmarks.bench_rubin_cavity_network              # the CPU size (about 5 min per T, 2 idle cores)
    python -m benchmarks.bench_rubin_cavity_network --replot     # table and figure from docs/data
    python -m benchmarks.bench_rubin_cavity_network --full --chains 4 --warmup 1000 --draws 1000
                                                                 # N = 700, P = 3000, D = 150: sized for a GPU
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any

from benchmarks.rubin_cavity_network_figure import figure, table
from benchmarks.showcase_common import load, save

DATA, FIGURE = "docs/data/rubin_cavity_network.json", "docs/img/rubin_cavity_network.png"
PAPER = {"N": 700, "P": 3000, "D": 150.0, "s_a2": 8.0 / 700**2}
TEMPERATURES = [0.10, 0.15, 0.20, 0.25, 0.30]
TREATMENTS = {
    "mean_field": {"treatment": "cavity", "scaling": "mean_field"},
    "standard_cavity": {"treatment": "cavity", "scaling": "standard"},
    "tree_level": {"treatment": "tree_level", "scaling": "mean_field"},
}
OBSERVABLES = ("b", "c", "b_test", "c_test", "R", "aligned_fraction", "weight_covariance.perpendicular",
               "test_mse_measured")


def sizes(scale: float) -> dict[str, Any]:
    """N, P, D at α = β = ``scale``, with s_a2 such that u and η are the paper's exactly."""
    N, P, D = round(PAPER["N"] * scale), round(PAPER["P"] * scale), round(PAPER["D"] * math.sqrt(scale))
    u_per_T = PAPER["P"] ** 2 * PAPER["s_a2"] / PAPER["D"]  # u T² of the paper
    return {"N": N, "P": P, "D": D, "s_a2": u_per_T * D / P**2, "scale": scale}


def spec(size: dict[str, Any], T: float, mode: str, **fields: Any) -> Any:
    from pydantic import TypeAdapter

    from solvers.theories import get

    body = {"theory": "rubin_cavity", "mode": mode, "N": float(size["N"]), "P": size["P"], "D": size["D"],
            "s_a2": size["s_a2"], "T": T, "sigma_w2": 0.5, "epsilon": -0.3, **fields}
    if mode == "finite_sample":
        body.update(P_test=size["P_test"], seed=size["seed"])
    else:
        body.update(P=float(size["P"]), D=float(size["D"]))
    return TypeAdapter(get("rubin_cavity").spec_model).validate_python(body)


def gradient_seconds(target: Any, repeat: int = 3) -> float:
    """Wall time of one gradient of the log-posterior (compiled), the cost unit of NUTS."""
    import jax

    grad = jax.jit(jax.grad(lambda th: target.log_prior(th) + target.log_likelihood(th)))
    theta = target.init["prior"](jax.random.PRNGKey(0))
    grad(theta).block_until_ready()
    t0 = time.perf_counter()
    for _ in range(repeat):
        grad(theta).block_until_ready()
    return (time.perf_counter() - t0) / repeat


def run_chains(target: Any, options: Any, apart: bool) -> Any:
    """The run's result: every chain vectorised in one loop, or (``apart``) each chain its own one-chain run, joined.

    Apart is the service's way (one chain per job): it avoids the batched Cholesky factor of vectorised chains,
    which can deadlock jaxlib's two-thread CPU pool (``docs/experiments.md``).
    """
    from solvers.experiments import chain_options, join_chains, sample, summarize

    if not apart:
        return sample(target, options).result
    runs = [sample(target, chain_options(options, c)) for c in range(options.chains)]
    checkpoint, draws = join_chains([r.checkpoint for r in runs], [[r.draws] for r in runs])
    return summarize(target, options, checkpoint, draws)


def scalar_estimates(result: Any, names: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """Each named scalar estimate of a run: its mean, Monte-Carlo standard error, R-hat and bulk ESS."""
    return {k: {"mean": float(e.mean), "stderr": float(e.stderr), "rhat": float(e.rhat), "ess": float(e.ess_bulk)}
            for k, e in result.estimates.items() if k in names}


def sample_network(size: dict[str, Any], T: float, args: argparse.Namespace) -> dict[str, Any]:
    """NUTS on the network at T (float64): every scalar estimate with its error, R-hat, bulk ESS, and the run."""
    import numpy as np

    from solvers.experiments import SamplerOptions
    from solvers.theories.rubin_cavity.experiment import ExperimentSizes, build_target

    target = build_target(spec(size, T, "finite_sample"), ExperimentSizes())
    grad = gradient_seconds(target)
    options = SamplerOptions(method="nuts", chains=args.chains, warmup=args.warmup, draws=args.draws,
                             seed=args.seed, block_size=100)
    t0 = time.perf_counter()
    result = run_chains(target, options, args.apart)
    est = scalar_estimates(result, OBSERVABLES)
    s = result.sampler
    return {
        "estimates": est,
        "rho_histogram": np.asarray(result.estimates["rho_histogram"].mean).tolist(),
        "converged": result.converged, "message": result.message, "max_rhat": s.max_rhat,
        "min_ess_bulk": s.min_ess_bulk, "divergences": s.divergences, "acceptance": s.acceptance,
        "gradient_evaluations": result.gradient_evaluations, "seconds": time.perf_counter() - t0,
        "gradient_seconds": grad, "device": result.device,
    }


def rho_histogram(finite_spec: Any, x: Any) -> list[float]:
    """The theory's law p(ρ) ∝ exp(−D f(ρ)) of a finite_sample solution x, as the network's histogram bins it:
    the mass of each of ``rho_bins`` equal bins of [−rho_range, rho_range] (16-point Gauss–Legendre per bin)."""
    import numpy as np

    from solvers.theories.rubin_cavity.common.network import network_of
    from solvers.theories.rubin_cavity.experiment import ExperimentSizes
    from solvers.theories.rubin_cavity.finite_sample.problem import CAVITY, TREE_LEVEL

    form = TREE_LEVEL if finite_spec.treatment == "tree_level" else CAVITY
    net = network_of(finite_spec)
    pot = form.potential(net, x)
    sizes = ExperimentSizes()
    edges = np.linspace(-sizes.rho_range, sizes.rho_range, sizes.rho_bins + 1)
    nodes, weights = np.polynomial.legendre.leggauss(16)
    half, mid = 0.5 * np.diff(edges), 0.5 * (edges[1:] + edges[:-1])
    rho = mid[:, None] + half[:, None] * nodes
    logp = -net.D * np.asarray(pot.value(np.abs(rho)))
    mass = (half[:, None] * weights * np.exp(logp - logp.max())).sum(axis=1)
    return (mass / mass.sum()).tolist()  # the tails beyond rho_range are below e^(-40) of the peak


def theory_at(size: dict[str, Any], T: float) -> dict[str, Any]:
    """Each treatment's finite_sample solve on the network's data, and its population solve at the network's D."""
    from solvers.core.options import SolverOptions
    from solvers.theories import get

    theory = get("rubin_cavity")
    out: dict[str, Any] = {}
    for name, fields in TREATMENTS.items():
        cat = theory.solve(spec(size, T, "finite_sample", **fields), SolverOptions())
        eq = cat.equilibrium_branch
        pop = theory.solve(spec(size, T, "self_consistent", **fields), SolverOptions())
        fd, dinf = pop.notes.observables["finite_D"], pop.equilibrium_branch
        out[name] = {
            "finite_sample": {**{k: eq.report.order_parameters[k] for k in ("b", "c", "R")},
                              "converged": eq.converged, "phase": eq.report.observables["phase"],
                              "wells": [{k: w[k] for k in ("kind", "rho", "weight")}
                                        for w in eq.report.observables["potential_wells"]],
                              "rho_histogram": rho_histogram(spec(size, T, "finite_sample", **fields), eq.x),
                              **{k: cat.notes.observables.get(k) for k in ("test_mse_measured", "b_test", "c_test")}},
            "population": {"b": fd["b"], "c": fd["c"], "R": fd.get("R"), "converged": fd["converged"],
                           "b_inf": dinf.report.order_parameters["b"], "c_inf": dinf.report.order_parameters["c"],
                           "phase_inf": dinf.report.observables["phase"]},
        }
    return out


def population_curves(size: dict[str, Any], temperatures: list[float]) -> dict[str, Any]:
    """Dense T sweeps of the population theory of each treatment: finite D (the network's) and D → ∞."""
    from solvers.core.options import SolverOptions
    from solvers.theories import get

    theory = get("rubin_cavity")
    out: dict[str, Any] = {}
    for name, fields in TREATMENTS.items():
        sweep = theory.sweep(spec(size, 0.2, "self_consistent", **fields), "T", temperatures, "continuation",
                             SolverOptions())
        cats = sweep.catalogues
        out[name] = {
            "T": list(sweep.values),
            "b": [c.notes.observables["finite_D"]["b"] for c in cats],
            "c": [c.notes.observables["finite_D"]["c"] for c in cats],
            "b_inf": [c.equilibrium_branch.report.order_parameters["b"] for c in cats],
            "c_inf": [c.equilibrium_branch.report.order_parameters["c"] for c in cats],
            "transitions": [{"type": sp.transition, "branches": list(sp.branches), "T": sp.parameter}
                            for sp in sweep.special_points],
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=0.12, help="α = β of the paper's scaling")
    parser.add_argument("--full", action="store_true", help="the paper's size (α = β = 1)")
    parser.add_argument("--temperatures", type=float, nargs="+", default=TEMPERATURES)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--apart", action="store_true", help="run the chains one at a time and join them")
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--figure", default=FIGURE)
    parser.add_argument("--replot", action="store_true", help="redraw the figure and table from --data")
    parser.add_argument("--retheory", action="store_true",
                        help="keep the stored network draws, solve the theories again (then table and figure)")
    args = parser.parse_args()
    if args.replot or args.retheory:
        stored = load(args.data)
        if args.retheory:
            size = stored["sizes"]
            stored["population"] = population_curves(size, stored["population"]["mean_field"]["T"])
            for point in stored["points"]:
                point["theory"] = theory_at(size, point["T"])
            save(args.data, stored)
    else:
        import jax
        import numpy as np

        jax.config.update("jax_enable_x64", True)
        size = {**sizes(1.0 if args.full else args.scale), "P_test": 500, "seed": 0}
        stored = {"sizes": size, "command": vars(args), "points": [],
                  "population": population_curves(size, [float(t) for t in np.linspace(0.08, 0.32, 49)])}
        for T in args.temperatures:
            print(f"T = {T}: sampling ...", file=sys.stderr, flush=True)
            point = {"T": T, "network": sample_network(size, T, args), "theory": theory_at(size, T)}
            stored["points"].append(point)
            save(args.data, stored)  # every finished point is kept
            print(f"T = {T}: {point['network']['seconds']:.0f} s, converged {point['network']['converged']}",
                  file=sys.stderr, flush=True)
    print(table(stored))
    figure(stored, args.figure)


if __name__ == "__main__":
    main()
