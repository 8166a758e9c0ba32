"""Phase lines traced by two-parameter continuation against a grid phase diagram, in one run.

The ``rubin_cavity`` overlap potential at σ_w² = 0.5, c = −0.3 in (b, u) ∈ [0.25, 0.4] × [10, 60]
has three lines: the fold of the aligned well, the first-order (equal-depth) line between the
centre and the aligned well, and the centre's spinodal (a pitchfork of ρ = 0). Both methods see
the same problem — x = [ρ], residual f'(ρ), no analytic Jacobian (every derivative is a finite
difference of the counted residual), margin f''(ρ), free entropy −(f(ρ) − f(0)) — and every
residual evaluation is counted.

* traced: ``trace_boundaries`` on the box (its 1-D seed scans included), at the default
  tolerance; its accuracy is measured against independent computations (closed-form centre
  spinodal, equal-depth brentq on the exact quartic's well depths, an fsolve of F'(s) = F''(s) = 0)
  and must be within 1e-6.
* grid: rows at Δb = 2e-3 (76 rows), each a scan over u at Δu = 2e-3 (25 001 points) with a
  damped Newton solve from the centre and from the aligned well (warm-started from the previous
  point, or from ρ = 1); the fold, the equal-depth point and the centre's margin change are
  bracketed to ±1e-3 in both parameters. All rows cost the same to within a few per cent, so
  by default ``--rows 6`` of them (ends included) are run and their cost is scaled to 76 rows;
  ``--full`` runs every row.

    python -m benchmarks.bench_phase_lines [--rows 6 | --full] [--figure docs/img/phase_lines.png]
    python -m benchmarks.bench_phase_lines --figure-only --figure docs/img/phase_lines.png   # seconds

``--figure`` also draws the README's phase diagram: the lines a boundary job traces through the
theory (``Theory.two_parameter_problem``, the job's JSON drawn by ``clients.plot.phase_diagram``)
over a coarse grid phase diagram of the same spec run as a job (the equilibrium at every grid point, its
phases named, its transitions located row by row).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))

from scipy.optimize import brentq, fsolve  # noqa: E402

from benchmarks.common import Ratio, print_table  # noqa: E402
from solvers.core.lines import LineOptions, trace_boundaries  # noqa: E402
from solvers.core.newton import ROUND_OFF, newton  # noqa: E402
from solvers.core.problem import Problem  # noqa: E402
from solvers.theories.rubin_cavity.common.potential import OverlapPotential  # noqa: E402

SIGMA_W2, C = 0.5, -0.3
B_RANGE, U_RANGE = (0.25, 0.4), (10.0, 60.0)
GRID_STEP = 2e-3  # bracket half-width 1e-3 in b and in u
ACCURACY = 1e-6


class Counter:
    def __init__(self) -> None:
        self.calls = 0


def potential(lam: np.ndarray) -> OverlapPotential:
    return OverlapPotential(SIGMA_W2, float(lam[0]), C, float(lam[1]))


def problem(counter: Counter) -> Problem:
    def F(x: np.ndarray, lam: np.ndarray) -> np.ndarray:
        counter.calls += 1
        return np.array([potential(lam).grad(float(x[0]))])

    def label(x: np.ndarray, lam: np.ndarray, start: str) -> str:
        if abs(float(x[0])) < 1e-7:
            return "center"
        return "aligned" if potential(lam).hess(float(x[0])) > 0 else "barrier"

    return Problem(
        residual=F,
        dim=1,
        free_entropy=lambda x, lam: -(float(potential(lam).value(float(x[0]))) - float(potential(lam).value(0.0))),
        stability=lambda x, lam: float(potential(lam).hess(float(x[0]))),
        starts=lambda lam: {"center": np.array([0.0]), "aligned": np.array([1.0])},
        label=label,
        canonical=np.abs,
        parameters=("b", "u"),
    )


# ---- independent references ----------------------------------------------------------------
def centre_spinodal(b: float) -> float:
    return math.pi * (1 + 2 * SIGMA_W2) / (4 * SIGMA_W2 * b * b)


def equal_depth_u(b: float, u_lo: float, u_hi: float) -> float:
    def depth(u: float) -> float:
        return min(p.depth for p in OverlapPotential(SIGMA_W2, b, C, u).stationary_points() if p.kind == "aligned")

    return brentq(depth, u_lo, u_hi, xtol=1e-13, rtol=1e-15)


def fold_u(b: float, s0: float, u0: float) -> float:
    def eqs(y: np.ndarray) -> list[float]:
        pot = OverlapPotential(SIGMA_W2, b, C, float(y[1]))
        return [float(pot.dF(float(y[0]))), float(pot.d2F(float(y[0])))]

    return float(fsolve(eqs, [s0, u0], xtol=1e-13)[1])


def traced_errors(lines) -> dict[str, float]:
    errors: dict[str, float] = {}
    by_kind = {line.kind: line for line in lines}
    fold = by_kind["fold"]
    fa = fold.array()[np.argsort(fold.array()[:, 0])]
    err = []
    for (b, u), st in list(zip(fold.coordinates, fold.states, strict=True))[::3]:
        err.append(abs(u - fold_u(b, float(st[0, 0]) ** 2, u)))
    errors["fold"] = max(err)
    fo = by_kind["first_order"]
    err = []
    for b, u in fo.array()[::3]:
        u_fold = float(np.interp(b, fa[:, 0], fa[:, 1]))
        err.append(abs(u - equal_depth_u(b, u_fold + 1e-3, centre_spinodal(b))))
    errors["first_order"] = max(err)
    sl = by_kind["stability_loss"].array()
    errors["stability_loss"] = float(np.max(np.abs(sl[:, 1] - [centre_spinodal(b) for b in sl[:, 0]])))
    return errors


# ---- the grid phase diagram ------------------------------------------------------------------
def grid_row(pr: Problem, b: float, us: np.ndarray) -> dict[str, float | None]:
    """One row: solve the centre and the aligned well at every u, bracket the three lines."""
    tol = LineOptions().tolerance
    found: dict[str, float | None] = {"fold": None, "first_order": None, "stability_loss": None}
    centre = np.array([0.0])
    aligned: np.ndarray | None = None
    prev: dict[str, float] = {}
    for u in us:
        lam = np.array([b, u])

        def f(x: np.ndarray, lam: np.ndarray = lam) -> np.ndarray:
            return pr.F(x, lam)

        rc = newton(f, centre, tol=tol, noise_floor=ROUND_OFF)
        start = aligned if aligned is not None else np.array([1.0])
        ra = newton(f, start, tol=tol, noise_floor=ROUND_OFF)
        centre = rc.x
        x_al = abs(float(ra.x[0]))
        has_aligned = bool(ra.converged and x_al > 1e-6 and pr.stability(ra.x, lam) > 0)  # type: ignore[misc]
        aligned = ra.x if has_aligned else None
        margin = float(pr.stability(centre, lam))  # type: ignore[misc]
        depth = float(pr.free_entropy(ra.x, lam)) if has_aligned else None  # type: ignore[misc]
        if prev:
            if found["fold"] is None and has_aligned and not prev["aligned"]:
                found["fold"] = u - GRID_STEP / 2
            if found["stability_loss"] is None and margin * prev["margin"] < 0:
                found["stability_loss"] = u - GRID_STEP / 2
            # Φ_aligned − Φ_centre changes sign (Φ_centre = 0 by construction).
            crossed = depth is not None and prev.get("depth") is not None and depth * prev["depth"] < 0
            if found["first_order"] is None and crossed:
                found["first_order"] = u - GRID_STEP / 2
        prev = {"aligned": float(has_aligned), "margin": margin}
        if depth is not None:
            prev["depth"] = depth
    return found


def measure(rows: int | None = 6) -> list[Ratio]:
    return compare(rows)["ratios"]


def compare(rows: int | None = 6) -> dict:
    """Trace the lines and scan the grid; the ratios and the raw counts."""
    counter = Counter()
    pr = problem(counter)
    # traced: best of 3 wall times; evaluations of one run
    times = []
    for _ in range(3):
        counter.calls = 0
        t0 = time.perf_counter()
        res = trace_boundaries(pr, B_RANGE, U_RANGE, LineOptions())
        times.append(time.perf_counter() - t0)
    traced_evals, traced_time = counter.calls, min(times)
    kinds = sorted(line.kind for line in res.lines)
    if kinds != ["first_order", "fold", "stability_loss"]:
        raise RuntimeError(f"the traced diagram has the lines {kinds}")
    errors = traced_errors(res.lines)
    if max(errors.values()) > ACCURACY:
        raise RuntimeError(f"traced lines are less accurate than {ACCURACY}: {errors}")
    n_points = sum(len(line.points) for line in res.lines)

    # grid: all rows, or a sample of rows scaled to all of them
    b_rows = np.arange(B_RANGE[0], B_RANGE[1] + GRID_STEP / 2, GRID_STEP)
    us = np.arange(U_RANGE[0], U_RANGE[1] + GRID_STEP / 2, GRID_STEP)
    sample = b_rows if rows is None else b_rows[np.unique(np.linspace(0, len(b_rows) - 1, rows).round().astype(int))]
    counter.calls = 0
    t0 = time.perf_counter()
    worst = 0.0
    fold = next(li for li in res.lines if li.kind == "fold")
    fa = fold.array()[np.argsort(fold.array()[:, 0])]
    fs = np.array([st[0, 0] for st in fold.states])[np.argsort(fold.array()[:, 0])]
    for b in sample:
        found = grid_row(pr, float(b), us)
        if any(v is None for v in found.values()):
            raise RuntimeError(f"the grid row b = {b} misses a line: {found}")
        # Each bracket against the independent reference at this row's b.
        u_fold = fold_u(float(b), float(np.interp(b, fa[:, 0], fs)) ** 2, float(np.interp(b, fa[:, 0], fa[:, 1])))
        reference = {
            "fold": u_fold,
            "first_order": equal_depth_u(float(b), u_fold + 1e-3, centre_spinodal(float(b))),
            "stability_loss": centre_spinodal(float(b)),
        }
        worst = max(worst, *(abs(found[k] - reference[k]) for k in reference))  # type: ignore[operator]
    grid_time = (time.perf_counter() - t0) * len(b_rows) / len(sample)
    grid_evals = counter.calls * len(b_rows) / len(sample)
    sampled = "all" if rows is None else f"{len(sample)} of {len(b_rows)} rows run, cost scaled to all"
    common = (f"rubin_cavity potential, 3 lines over b in [0.25, 0.4]; traced: {n_points} points, errors "
              f"fold {errors['fold']:.1e}, first-order {errors['first_order']:.1e}, "
              f"centre spinodal {errors['stability_loss']:.1e}; grid: {len(b_rows)} x {len(us)} points "
              f"({sampled}), its brackets within {worst:.1e} of the references")
    ratios = [
        Ratio("phase lines: residual evaluations, grid (±1e-3) / traced (1e-6)", grid_evals / traced_evals, 50, "×",
              sense=">=", note=f"{grid_evals:.3g} vs {traced_evals} evaluations; {common}"),
        Ratio("phase lines: wall time, grid / traced", grid_time / traced_time, 1, "×", sense=">=",
              note=f"{grid_time:.1f} s vs {traced_time:.2f} s (best of 3)"),
    ]
    return {"ratios": ratios, "traced_evals": traced_evals, "traced_time": traced_time, "grid_evals": grid_evals,
            "grid_time": grid_time, "errors": errors}


# ---- README figure ------------------------------------------------------------------------------
def figure(path: str) -> None:
    """Traced lines (a boundary job) over a coarse grid phase diagram (a grid job) of the same spec, as served."""
    import matplotlib

    matplotlib.use("Agg")

    from clients import plot
    from service.jobs.in_process import run_job
    from solvers.theories import get

    model = {"theory": "rubin_cavity", "mode": "potential", "sigma_w2": SIGMA_W2, "c": C, "b": 0.3, "u": 30.0}
    symbols = {q.name: q.to_json() for q in get("rubin_cavity").quantities}  # the table GET /v1/theories serves
    t0 = time.perf_counter()
    traced = run_job({"model": model, "parameter": ["b", "u"], "method": "boundary",
                      "values": [{"start": B_RANGE[0], "stop": B_RANGE[1], "num": 2},
                                 {"start": U_RANGE[0], "stop": U_RANGE[1], "num": 2}]})
    t_traced = time.perf_counter() - t0
    t0 = time.perf_counter()
    grid = run_job({"model": model, "parameter": ["b", "u"], "method": "grid",
                    "values": [{"start": B_RANGE[0], "stop": B_RANGE[1], "num": 16},
                               {"start": U_RANGE[0], "stop": U_RANGE[1], "num": 51}]})
    t_grid = time.perf_counter() - t0
    fig, ax = plot.figure(8.5, aspect=0.55)
    plot.phase_diagram(grid, ax, symbols=symbols)
    plot.phase_diagram(traced, ax, symbols=symbols, caption=False)
    plot.save(fig, path, dpi=130)
    print(f"[figure] written to {path}: boundary job {t_traced:.2f} s, {len(traced['lines'])} lines; "
          f"grid job {t_grid:.2f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=6, help="grid rows run (the rest are scaled)")
    parser.add_argument("--full", action="store_true", help="run every grid row")
    parser.add_argument("--figure", default=None, help="also draw the README phase diagram to this PNG")
    parser.add_argument("--figure-only", action="store_true", help="draw the figure without running the benchmark")
    args = parser.parse_args()
    if not args.figure_only:
        numbers = compare(None if args.full else args.rows)
        print_table(numbers["ratios"])
    if args.figure:
        figure(args.figure)
