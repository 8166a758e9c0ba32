"""The network at standard scaling (s_a2 = 1/N, T = O(1)) beside every treatment of ``rubin_cavity``, along T.

At D = 30, N = 60, P = 200, s_a2 = 1/N, σ_w² = ½, ε = −0.3 (training inputs seed 0) the tree level's variance
term is not small: κ = s_a2 P/(T D) runs from 0.06 (T = 2) to 1.1 (T = 0.1). The posterior of the N × D hidden
weights (readout integrated out exactly) is sampled with NUTS at each T and set beside, on the same training
and test inputs, ``finite_sample`` of mean field, the standard cavity, the reduced tree level and the
unreduced tree level: R = E[ρ²], the training-set and fresh-input projections (b, c), the cubic fraction
1 − c/ε, with the gaps in Monte-Carlo standard errors.

    python -m benchmarks.bench_rubin_cavity_standard_scaling            # network, then theories (hours on 2 cores)
    python -m benchmarks.bench_rubin_cavity_standard_scaling --network-only   # the NUTS runs alone
    python -m benchmarks.bench_rubin_cavity_standard_scaling --retheory       # keep the draws, solve the theories
    python -m benchmarks.bench_rubin_cavity_standard_scaling --replot         # table and figure from docs/data
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from benchmarks.bench_rubin_cavity_network import sample_network
from benchmarks.showcase_common import load, save

DATA, FIGURE = "docs/data/rubin_cavity_standard_scaling.json", "docs/img/rubin_cavity_standard_scaling.png"
SIZE = {"N": 60, "P": 200, "D": 30, "s_a2": 1.0 / 60, "P_test": 500, "seed": 0, "scale": None}
#: The decisive low temperatures first, so that a run cut short keeps them.
TEMPERATURES = [0.2, 0.1, 0.5, 2.0, 0.15, 0.3, 1.0]


def network_points(stored: dict[str, Any], args: argparse.Namespace) -> None:
    done = {pt["T"] for pt in stored["points"]}
    for T in args.temperatures:
        if T in done:
            continue
        print(f"T = {T}: sampling ...", file=sys.stderr, flush=True)
        stored["points"].append({"T": T, "network": sample_network(SIZE, T, args), "theory": {}})
        save(args.data, stored)  # every finished point is kept
        net = stored["points"][-1]["network"]
        print(f"T = {T}: {net['seconds']:.0f} s, converged {net['converged']} ({net['message']})",
              file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--temperatures", type=float, nargs="+", default=TEMPERATURES)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=250)
    parser.add_argument("--draws", type=int, default=350)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--apart", action="store_true", help="run the chains one at a time and join them")
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--figure", default=FIGURE)
    parser.add_argument("--network-only", action="store_true", help="sample the network and stop")
    args = parser.parse_args()
    import jax

    jax.config.update("jax_enable_x64", True)
    try:
        stored = load(args.data)
    except FileNotFoundError:
        stored = {"sizes": SIZE, "command": vars(args), "points": []}
    network_points(stored, args)


if __name__ == "__main__":
    main()
