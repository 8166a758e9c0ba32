"""The network's onset of cubic learning against P at several D, and the exponent of P_onset ∝ D^x with its error.

The network family of :mod:`benchmarks.bench_rubin_cavity_sample_complexity` (N = 2 D, σ_a² = N s_a2 = 0.0269,
T = 0.212, σ_w² = ½, ε = −0.3, 500 fresh test inputs). The onset is P_1/10: the P where the network's learned cubic
fraction on fresh inputs, 1 − c_test/ε, reaches 1/10. For each D and training set (the ``seed`` of the
finite_sample spec: training and test inputs) the network is sampled (NUTS, readout integrated out) on the lattice
P = round(D·2^(k/2)), stepping k up or down from a guess until two neighbouring lattice points bracket 1/10; P*
interpolates log f linearly in log P between them (:mod:`benchmarks.onset_fit`). P_onset(D) is the mean of log P*
over the seeds, its error from their spread and the Monte-Carlo errors; the exponent is the weighted least-squares
slope of log P_onset against log D. The same search with each treatment's ``finite_sample`` (mean field, standard
cavity) on the same data and test inputs gives the theories' P_1/10 like for like.

    python -m benchmarks.bench_rubin_cavity_onset                # about 40 min of one idle core (resumes)
    python -m benchmarks.bench_rubin_cavity_onset --replot       # table and figure from docs/data

Every run is saved to the data file as it ends, and a second start resumes: runs already stored are not repeated.
``--deadline HH:MM`` (UTC) starts no sampling after that time. The lattice's interpolation error is measured on
mean field (``interpolation_check``: the crossing from the lattice against one on a grid eight times finer).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import math
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_rubin_cavity_network import TREATMENTS, run_chains, scalar_estimates
from benchmarks.bench_rubin_cavity_sample_complexity import EPSILON, FAMILIES, spec
from benchmarks.onset_fit import Crossing, Onset, crossing, onset, weighted_slope
from benchmarks.showcase_common import load, save

DATA, FIGURE = "docs/data/rubin_cavity_onset.json", "docs/img/rubin_cavity_onset.png"
FAMILY = FAMILIES["network"]
D_VALUES = [8, 12, 16, 24]
SEEDS = [0, 1, 2]
THRESHOLD = 0.1
P_TEST = 500
K_RANGE = (2, 9)  # P/D from 2 to 22.6
FIRST_K = 5  # P/D = 5.66: measured f = 0.03 at P = 3D and 0.24 at 10D for D = 8
THEORIES = ("mean_field", "standard_cavity")  # the tree level equals mean field to 1e-4 in this family (κ = η/N)
OBSERVABLES = ("b", "c", "b_test", "c_test", "R")


def lattice_P(D: int, k: int) -> int:
    return round(D * 2.0 ** (k / 2))


def cubic(c_test: float) -> float:
    return 1.0 - c_test / EPSILON


def next_k(fractions: dict[int, float], guess: int) -> int | None:
    """The next lattice point to sample, or None when two neighbours bracket the threshold (or the range is spent)."""
    if not fractions:
        return guess
    ks = sorted(fractions)
    for a, b in itertools.pairwise(ks):
        if b == a + 1 and fractions[a] < THRESHOLD <= fractions[b]:
            return None
    below = [k for k in ks if fractions[k] < THRESHOLD]
    above = [k for k in ks if fractions[k] >= THRESHOLD]
    k = max(below) + 1 if not above else min(above) - 1 if not below else None
    if k is None:  # both sides sampled but not as neighbours: fill in above the highest point below
        k = max(k for k in below if k < min(above)) + 1 if any(k < min(above) for k in below) else min(above) - 1
    return k if K_RANGE[0] <= k <= K_RANGE[1] and k not in fractions else None


def guess_k(runs: list[dict[str, Any]], D: int) -> int:
    """Just below the other seeds' mean crossing at this D; at a new D, below the nearest smaller D's crossing
    carried over as P_1/10 ∝ D^1.3; else the first guess."""
    def mean_crossing(d: int) -> float | None:
        logs = [c.log_P for s in {r["seed"] for r in runs if r["D"] == d} if (c := network_crossing(runs, d, s))]
        return math.exp(sum(logs) / len(logs)) if logs else None

    if (P := mean_crossing(D)) is not None:
        return math.floor(2 * math.log2(P / D))
    smaller = {d: P for d in {r["D"] for r in runs} if d < D and (P := mean_crossing(d)) is not None}
    if not smaller:
        return FIRST_K
    d = max(smaller)
    return math.floor(2 * math.log2(smaller[d] / d * (D / d) ** 0.3))


def network_crossing(runs: list[dict[str, Any]], D: int, seed: int) -> Crossing | None:
    mine = [r for r in runs if r["D"] == D and r["seed"] == seed]
    return crossing([r["P"] for r in mine], [r["cubic"] for r in mine], [r["cubic_stderr"] for r in mine], THRESHOLD)


def sample(D: int, P: int, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """NUTS on the network at (D, P, seed): the cubic fraction with its error, and the run's diagnostics."""
    from solvers.experiments import SamplerOptions
    from solvers.theories.rubin_cavity.experiment import ExperimentSizes, build_target

    target = build_target(spec(FAMILY, D, P, "finite_sample", P_test=P_TEST, seed=seed), ExperimentSizes())
    options = SamplerOptions(method="nuts", chains=args.chains, warmup=args.warmup, draws=args.draws,
                             seed=args.sampler_seed, block_size=100)
    t0 = time.perf_counter()
    result = run_chains(target, options, args.apart)
    est = scalar_estimates(result, OBSERVABLES)
    s = result.sampler
    return {"D": D, "N": FAMILY["nu"] * D, "P": P, "seed": seed, "cubic": cubic(est["c_test"]["mean"]),
            "cubic_stderr": est["c_test"]["stderr"] / abs(EPSILON), "estimates": est, "converged": result.converged,
            "message": result.message, "max_rhat": s.max_rhat, "min_ess_bulk": s.min_ess_bulk,
            "divergences": s.divergences, "gradient_evaluations": result.gradient_evaluations,
            "seconds": time.perf_counter() - t0}


def theory_fraction(stored: dict[str, Any], name: str, D: int, P: int, seed: int, cache_name: str | None = None
                    ) -> float:
    """The treatment's finite_sample cubic fraction on the network's data and test inputs (cached in ``stored``
    under ``cache_name``, default the treatment's name)."""
    from solvers.core.options import SolverOptions
    from solvers.theories import get

    key = f"{D}/{seed}/{P}"
    cache = stored.setdefault("theory", {}).setdefault(cache_name or name, {})
    if key not in cache:
        fs = get("rubin_cavity").solve(spec(FAMILY, D, P, "finite_sample", P_test=P_TEST, seed=seed,
                                            **TREATMENTS[name]), SolverOptions())
        eq = fs.equilibrium_branch
        cache[key] = cubic(fs.notes.observables["c_test"]) if eq is not None and eq.converged else None
    return cache[key]


def theory_search(stored: dict[str, Any], D: int, seed: int, start: int) -> None:
    """Each treatment's bracket of 1/10 on the same lattice, from the network's start."""
    for name in THEORIES:
        fractions: dict[int, float] = {}
        while (k := next_k(fractions, start)) is not None:
            value = theory_fraction(stored, name, D, lattice_P(D, k), seed)
            if value is None:
                break
            fractions[k] = value


def theory_crossing(stored: dict[str, Any], name: str, D: int, seed: int) -> Crossing | None:
    cache = stored.get("theory", {}).get(name, {})
    pts = [(int(key.split("/")[2]), v) for key, v in cache.items()
           if key.startswith(f"{D}/{seed}/") and v is not None]
    return crossing([p for p, _ in pts], [v for _, v in pts], [0.0] * len(pts), THRESHOLD)


def interpolation_check(stored: dict[str, Any]) -> list[dict[str, Any]]:
    """The lattice's interpolation error, measured on mean field: its crossing from the two bracketing lattice
    points against the crossing on a grid eight times finer in log P (2^(1/8) steps) inside that bracket."""
    out = []
    for D in sorted({r["D"] for r in stored["runs"]}):
        for seed in sorted({r["seed"] for r in stored["runs"] if r["D"] == D}):
            coarse = theory_crossing(stored, "mean_field", D, seed)
            if coarse is None:
                continue
            P1, P2 = coarse.bracket
            fine = sorted({round(P1 * 2.0 ** (j / 8)) for j in range(5)} | {int(P2)})
            values = [theory_fraction(stored, "mean_field", D, P, seed, "mean_field_fine") for P in fine]
            c = crossing(fine, values, [0.0] * len(fine), THRESHOLD)
            if c is not None:
                out.append({"D": D, "seed": seed, "lattice": coarse.P_star, "fine": c.P_star,
                            "log_difference": coarse.log_P - c.log_P})
    return out


def fits(stored: dict[str, Any]) -> dict[str, Any]:
    """Per D: each seed's crossing and the onset; the exponent of the network and of each treatment."""
    runs = stored["runs"]
    out: dict[str, Any] = {"per_D": {}, "exponent": {}}
    series: dict[str, list[tuple[int, Onset]]] = {"network": [], **{t: [] for t in THEORIES}}
    for D in sorted({r["D"] for r in runs}):
        seeds = sorted({r["seed"] for r in runs if r["D"] == D})
        row: dict[str, Any] = {"seeds": {}}
        for who in series:
            cs = {s: (network_crossing(runs, D, s) if who == "network" else theory_crossing(stored, who, D, s))
                  for s in seeds}
            row["seeds"][who] = {s: None if c is None else {"P": c.P_star, "log_P_stderr": c.log_P_stderr,
                                                            "bracket": c.bracket} for s, c in cs.items()}
            found = [c for c in cs.values() if c is not None]
            if len(found) >= 2:
                o = onset(found)
                if o.log_P_stderr == 0:  # seeds that agree exactly give no weight to fit with
                    continue
                series[who].append((D, o))
                row[who] = {"P": o.P_onset, "log_P": o.log_P, "log_P_stderr": o.log_P_stderr, "seeds": o.seeds,
                            "spread": o.spread}
        out["per_D"][D] = row
    for who, pts in series.items():
        if len(pts) >= 3:
            s = weighted_slope([math.log(d) for d, _ in pts], [o.log_P for _, o in pts],
                               [o.log_P_stderr for _, o in pts])
            out["exponent"][who] = {"slope": s.slope, "intercept": s.intercept, "stderr": s.stderr,
                                    "stderr_scaled": s.stderr_scaled, "chi2": s.chi2, "dof": s.dof,
                                    "points": len(pts)}
    return out


def deadline_passed(deadline: str | None) -> bool:
    if deadline is None:
        return False
    hh, mm = (int(v) for v in deadline.split(":"))
    now = dt.datetime.now(dt.UTC)
    return (now.hour, now.minute) >= (hh, mm)


def measure(stored: dict[str, Any], args: argparse.Namespace) -> None:
    runs: list[dict[str, Any]] = stored["runs"]
    for seed in args.seeds:
        for D in args.D:
            mine = {r["P"]: r for r in runs if r["D"] == D and r["seed"] == seed}
            by_k = {k: mine[lattice_P(D, k)]["cubic"] for k in range(K_RANGE[0], K_RANGE[1] + 1)
                    if lattice_P(D, k) in mine}
            start = guess_k(runs, D)
            while (k := next_k(by_k, start)) is not None:
                if deadline_passed(args.deadline):
                    print("deadline: no further sampling", file=sys.stderr, flush=True)
                    return
                P = lattice_P(D, k)
                print(f"D = {D}, seed {seed}, P = {P} ...", file=sys.stderr, flush=True)
                run = sample(D, P, seed, args)
                for name in THEORIES:
                    run.setdefault("theory", {})[name] = theory_fraction(stored, name, D, P, seed)
                runs.append(run)
                by_k[k] = run["cubic"]
                print(f"  cubic {run['cubic']:.4f} ± {run['cubic_stderr']:.4f}, converged {run['converged']} "
                      f"({run['max_rhat']:.3f}, {run['min_ess_bulk']:.0f}), {run['seconds']:.0f} s",
                      file=sys.stderr, flush=True)
                save(args.data, stored)
            theory_search(stored, D, seed, start)
            save(args.data, stored)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--D", type=int, nargs="+", default=D_VALUES)
    parser.add_argument("--seeds", type=int, nargs="+", default=SEEDS, help="training-set seeds")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--sampler-seed", type=int, default=1)
    parser.add_argument("--apart", action="store_true", help="run the chains one at a time and join them")
    parser.add_argument("--deadline", help="HH:MM UTC: start no sampling after it")
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--figure", default=FIGURE)
    parser.add_argument("--replot", action="store_true", help="redraw the table and figure from --data")
    args = parser.parse_args()
    if args.replot:
        stored = load(args.data)
    else:
        import jax

        jax.config.update("jax_enable_x64", True)
        stored = load(args.data) if Path(args.data).exists() else {"runs": [], "theory": {}}
        stored["settings"] = {"family": FAMILY, "threshold": THRESHOLD, "P_test": P_TEST, "epsilon": EPSILON,
                              "sigma_w2": 0.5, "lattice": "P = round(D 2^(k/2))", "chains": args.chains,
                              "warmup": args.warmup, "draws": args.draws, "sampler_seed": args.sampler_seed}
        measure(stored, args)
        stored["interpolation_check"] = interpolation_check(stored)
    stored["fits"] = fits(stored)
    if not args.replot:
        save(args.data, stored)
    from benchmarks.rubin_cavity_onset_figure import figure, table

    print(table(stored))
    figure(stored, args.figure)


if __name__ == "__main__":
    main()
