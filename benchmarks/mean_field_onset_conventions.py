"""Plain MF's alignment onset under three finite-d conventions, against d (docs/theories/mean_field_ard.md, §4).

Plain MF has one solution at every κ, so its finite-d onset is a convention for a crossover that sharpens into a
transition as d → ∞. All three conventions compare the wells of the unaligned state's single-neuron potential
(the law restricted to the central basin, at its own residual t_c); they differ in what is compared:

* ``depth``: the deepest aligned well as deep as the central one (SaddleLab's alignment onset);
* ``laplace``: the aligned wells' Laplace masses e^{−Ũ*} (2π)^{n/2} det(Ũ'')^{−½} × orbit size, summed, equal to
  the central well's;
* ``law``: half the mass of the law at that residual in the aligned wells (the law's own quadrature rules).

Each is read as SaddleLab reads the depth (``PopulationParity.onset_indicator`` with the convention's gap), and
κ_c is the root in κ of that indicator. Run:

    python -m benchmarks.mean_field_onset_conventions [--k 2 4] [--d 16 32 64 128] [--N 512] [--json out.json]

(About 3 s per d at k = 2 and 6 s at k = 4 on the shared two-core machine: 43 s for the default table.)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np

from solvers.core.roots import bracketed_root
from solvers.theories import get
from solvers.theories.mean_field_ard.events import bracketable
from solvers.theories.mean_field_ard.population import PopulationParity
from solvers.theories.mean_field_ard.reduced_law import find_wells
from solvers.theories.mean_field_ard.theory import reduced_model
from solvers.theories.mean_field_ard.wells import Well

THEORY = get("mean_field_ard")
CONVENTIONS = ("depth", "laplace", "law")
#: κ grid scanned for the onset's sign change (plain MF, ReLU, N = 512: onsets between 0.003 and 0.05 for k ≤ 4).
KAPPA_SCAN = np.geomspace(0.002, 0.06, 30)


def population(d: int, k: int, kappa: float, N: int) -> PopulationParity:
    spec = THEORY.spec_model.model_validate({"theory": "mean_field_ard", "model": "mf", "d": d, "N": N,
                                             "kappa": kappa, "target": {"kind": "parity", "k": k}})
    return reduced_model(spec, None).pop(None)


def log_laplace_mass(w: Well) -> float:
    _, logdet = np.linalg.slogdet(w.H)
    return -w.U - 0.5 * logdet + 0.5 * len(w.y) * math.log(2.0 * math.pi) + math.log(w.multiplicity)


def gap(pop: PopulationParity, convention: str) -> Callable[[float], float] | None:
    """The convention's gap as a function of the residual t (falls with t; +inf without an aligned well)."""
    if convention == "depth":
        return None  # the indicator's own

    def laplace(t: float) -> float:
        wells = find_wells(pop.potential(np.array([t])), math.sqrt(pop.sigma_w2), lone_center=False)
        center = [log_laplace_mass(w) for w in wells if w.kind == "center"]
        aligned = [log_laplace_mass(w) for w in wells if w.kind == "aligned"]
        if not (center and aligned):
            return math.inf
        top = max(aligned)
        return center[0] - (top + math.log(sum(math.exp(a - top) for a in aligned)))

    def law(t: float) -> float:
        L = pop.state(np.array([t]))
        return 0.5 - L.aligned_mass if any(w.kind == "aligned" for w in L.wells) else math.inf

    return laplace if convention == "laplace" else law


def onset(d: int, k: int, N: int, convention: str) -> float | None:
    def indicator(kappa: float) -> float:
        pop = population(d, k, kappa, N)
        return bracketable(pop.onset_indicator(gap(pop, convention)))

    values = [indicator(float(x)) for x in KAPPA_SCAN]
    for a, b, fa, fb in zip(KAPPA_SCAN[:-1], KAPPA_SCAN[1:], values[:-1], values[1:], strict=True):
        if fa < 0.0 < fb:
            return bracketed_root(indicator, float(a), float(b), xtol=1e-7, rtol=1e-9, probe=False).x
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--d", type=int, nargs="+", default=[16, 32, 64, 128])
    ap.add_argument("--N", type=int, default=512)
    ap.add_argument("--json", type=str, default=None)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", RuntimeWarning)
    rows = []
    for k in args.k:
        for d in args.d:
            t0 = time.perf_counter()
            row = {"k": k, "d": d, **{c: onset(d, k, args.N, c) for c in CONVENTIONS}}
            row["seconds"] = time.perf_counter() - t0
            rows.append(row)
            print(f"k={k} d={d}: {row} ", file=sys.stderr, flush=True)
    print("| k | d | " + " | ".join(CONVENTIONS) + " |")
    print("|---|---|" + "---|" * len(CONVENTIONS))
    for r in rows:
        cells = ["—" if r[c] is None else f"{r[c]:.5f}" for c in CONVENTIONS]
        print(f"| {r['k']} | {r['d']} | " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "N": args.N}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
