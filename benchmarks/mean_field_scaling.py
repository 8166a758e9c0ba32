"""Theorem 4.1 of Göring et al. (2025): the critical noise κ_c against the input dimension d.

The theorem states κ_c ~ 1/√(dk) for plain MF and κ_c ~ 1/√k (no O(d) penalty) under MF-ARD. This study
measures κ_c with SaddleLab's reduced solver (k-sparse parity, ReLU, population limit, N = 512,
σ_w² = σ_a² = 1, γ = ½) at d ∈ {16, 32, 64, 128} and fits log κ_c = a + b log d:

* plain MF: κ_c is the alignment onset reported by a κ sweep (``transitions`` entry "alignment onset":
  an aligned well of the unaligned state's single-neuron potential as deep as the central one — plain
  MF has one solution at every κ, so there is no fold or crossing to report);
* MF-ARD with shared precisions (``mf_ard``): κ_c is the engine's first-order point (free-entropy crossing of
  the aligned and symmetric branches, found by continuation), reported with both spinodals;
* MF-ARD with per-unit precisions (``mf_ard_per_unit``): one solution at every κ, like plain MF (each unit's
  precisions are integrated out, the problem is convex), so κ_c is again the alignment onset; its bulk rule
  uses 20 nodes per coordinate at k = 4 (``--per-unit-bulk``; 40, the default, would be 3.7·10⁶ nodes).

For the two onset rows the study also reports κ_c at the unlearned residual t = 1 (the equal-depth point if the
unaligned state had learned nothing of the target; well searches only): the unaligned state's own residual t_c
is below 1 where it learns part of the target before the onset, which lowers κ_c at small d, and Theorem 4.1's
d → ∞ scaling is the one of the t = 1 point.

Slopes carry the standard error of the least-squares fit (4 points, 2 parameters). Run:

    python -m benchmarks.mean_field_scaling [--d 16 32 64 128] [--k 4] [--points 8]
        [--models mf mf_ard mf_ard_per_unit] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings

import numpy as np

from service.serialize import special_point_json
from solvers.core.options import SolverOptions
from solvers.core.roots import bracketed_root
from solvers.theories import get
from solvers.theories.mean_field_ard.theory import reduced_model

THEORY = get("mean_field_ard")


#: Per-unit bulk nodes per coordinate (k = 4: 8 855 v-orbits × ≈ 30 u-nodes).
PER_UNIT_BULK = 20


def spec(model: str, d: int, k: int, kappa: float, N: int, per_unit_bulk: int = PER_UNIT_BULK):
    extra: dict = {}
    if model == "mf_ard_per_unit":
        model, extra = "mf_ard", {"ard": {"precisions": "per_unit"}, "quadrature": {"bulk_per_unit": per_unit_bulk}}
    return THEORY.spec_model.model_validate({"theory": "mean_field_ard", "model": model, "d": d, "N": N,
                                             "kappa": kappa, "target": {"kind": "parity", "k": k}, **extra})


def kappa_c(model: str, d: int, k: int, N: int, lo: float, hi: float, points: int,
            per_unit_bulk: int = PER_UNIT_BULK) -> dict:
    t0 = time.perf_counter()
    out = THEORY.sweep(spec(model, d, k, lo, N, per_unit_bulk), "kappa", list(np.linspace(lo, hi, points)),
                       "continuation", SolverOptions())
    tr = [special_point_json(sp) for sp in out.special_points]
    if model in ("mf", "mf_ard_per_unit"):
        onset = [t for t in tr if "alignment onset" in t.get("detail", "")]
        kc = onset[0]["parameter"] if onset else None
        spinodals: list[float] = []
    else:
        first = [t for t in tr if t["kind"] == "first_order"]
        kc = first[0]["parameter"] if first else None
        spinodals = sorted(t["parameter"] for t in tr if t["kind"] == "spinodal")
    return {"model": model, "d": d, "kappa_c": kc, "spinodals": spinodals, "range": [lo, hi],
            "seconds": time.perf_counter() - t0, "transitions": tr}


def unlearned_onset(model: str, d: int, k: int, N: int, lo: float, hi: float,
                    per_unit_bulk: int = PER_UNIT_BULK) -> float | None:
    """κ at which the deepest aligned well of the potential at the unlearned residual t = 1 is as deep as the
    central one (None: no sign change in [lo/2, 2 hi]): the onset if the unaligned state learned nothing.
    Only well searches, no law."""

    def gap(kappa: float) -> float:
        g = reduced_model(spec(model, d, k, kappa, N, per_unit_bulk), None).pop(None).depth_gap_at(1.0)
        return g if math.isfinite(g) else 1.0e3

    grid = np.geomspace(0.5 * lo, 2.0 * hi, 24)
    values = [gap(float(x)) for x in grid]
    for a, b, fa, fb in zip(grid[:-1], grid[1:], values[:-1], values[1:], strict=True):
        if fa <= 0.0 < fb:
            return bracketed_root(gap, float(a), float(b), xtol=1e-8, rtol=1e-10, probe=False).x
    return None


def fit(ds: list[int], kcs: list[float]) -> tuple[float, float]:
    """Slope of log κ_c on log d and its standard error."""
    x, y = np.log(np.array(ds, float)), np.log(np.array(kcs, float))
    A = np.column_stack([np.ones_like(x), x])
    coef = np.linalg.lstsq(A, y, rcond=None)[0]
    dof = max(len(x) - 2, 1)
    s2 = float(np.sum((y - A @ coef) ** 2)) / dof
    cov = s2 * np.linalg.inv(A.T @ A)
    return float(coef[1]), math.sqrt(float(cov[1, 1]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, nargs="+", default=[16, 32, 64, 128])
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--N", type=int, default=512)
    ap.add_argument("--points", type=int, default=8)
    ap.add_argument("--json", type=str, default=None)
    ap.add_argument("--models", nargs="+", default=["mf", "mf_ard", "mf_ard_per_unit"],
                    choices=["mf", "mf_ard", "mf_ard_per_unit"])
    ap.add_argument("--per-unit-bulk", dest="per_unit_bulk", type=int, default=PER_UNIT_BULK)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", RuntimeWarning)
    rows = []
    for d in args.d:
        # plain MF: κ_c √d is expected constant; bracket the onset measured at d = 35 (κ_c ≈ 0.013)
        scale = 0.013 * math.sqrt(35.0 / d)
        ranges = {"mf": (0.6 * scale, 1.6 * scale), "mf_ard": (0.010, 0.045),
                  # per unit: at d = 16 just above plain MF's onset; a weaker d-dependence would leave plain MF's
                  # bracket upwards, so the range reaches to the d = 16 value at every d
                  "mf_ard_per_unit": (0.6 * scale, 0.026)}
        for model in args.models:
            lo, hi = ranges[model]
            points = args.points if model != "mf_ard_per_unit" else max(args.points, round((hi - lo) / 0.0015) + 1)
            rows.append(kappa_c(model, d, args.k, args.N, lo, hi, points, args.per_unit_bulk))
            rows[-1]["kappa_c_unlearned"] = (unlearned_onset(model, d, args.k, args.N, lo, hi, args.per_unit_bulk)
                                             if model != "mf_ard" else None)
            print(f"{model} d={d:4d} κ_c={rows[-1]['kappa_c']} spinodals={rows[-1]['spinodals']} "
                  f"({rows[-1]['seconds']:.0f} s)", file=sys.stderr, flush=True)
    print("| model | d | κ_c | κ_c √d | κ_c at t = 1 | spinodals | seconds |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        kc, d = r["kappa_c"], r["d"]
        kc_s = "—" if kc is None else f"{kc:.5f}"
        scaled = "—" if kc is None else f"{kc * math.sqrt(d):.4f}"
        spin = ", ".join(f"{s:.5f}" for s in r["spinodals"]) or "—"
        bare = "—" if r["kappa_c_unlearned"] is None else f"{r['kappa_c_unlearned']:.5f}"
        print(f"| {r['model']} | {d} | {kc_s} | {scaled} | {bare} | {spin} | {r['seconds']:.0f} |")
    summary = {}
    for model, theorem in (("mf", -0.5), ("mf_ard", 0.0), ("mf_ard_per_unit", 0.0)):
        if model not in args.models:
            continue
        pts = [(r["d"], r["kappa_c"]) for r in rows if r["model"] == model and r["kappa_c"]]
        if len(pts) >= 3:
            slope, se = fit([p[0] for p in pts], [p[1] for p in pts])
            summary[model] = {"slope": slope, "stderr": se, "theorem": theorem}
            print(f"\n{model}: d log κ_c / d log d = {slope:.3f} ± {se:.3f}   (Theorem 4.1: {theorem:+.1f})")
            bare = [(r["d"], r["kappa_c_unlearned"]) for r in rows if r["model"] == model and r["kappa_c_unlearned"]]
            if len(bare) >= 3:
                b_slope, b_se = fit([p[0] for p in bare], [p[1] for p in bare])
                summary[model] |= {"slope_unlearned": b_slope, "stderr_unlearned": b_se}
                print(f"{model}, at the unlearned residual t = 1: {b_slope:.3f} ± {b_se:.3f}")
        else:
            summary[model] = {"slope": None, "note": "fewer than three located transitions"}
            print(f"\n{model}: fewer than three located transitions; no slope")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "fit": summary, "k": args.k, "N": args.N}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
