"""The sampled network of ``mean_field_ard`` run until it meets SaddleLab's convergence rule, from two starts.

Two groups of Langevin chains — from the prior and from the ``aligned`` start (``experiment.aligned_initialiser``)
— run block by block on the same network and data; after every block the reported observables are judged on
all chains together: rank-normalised split R-hat ≤ ``RHAT_MAX`` and bulk ESS ≥ ``ESS_BULK_MIN`` (the rule of
``solvers.experiments.options``), for the per-draw estimators named in ``SCALARS`` and for the derived ratio
of the two weight second moments (delta method: the linearised series m_r/m̄_i − m̄_r m_i/m̄_i²). A group that
started on the wrong side of a barrier shows as an R-hat above the rule, never as a small error bar.

Only scalar estimators are kept (per-draw vectors such as the test predictions are dropped block by block), and
a run is stored after every block (``store``: the scalar series and each group's sampler checkpoint), so an
interrupted run resumes where it stopped and a finished one can be extended with a larger ``max_steps``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from solvers.experiments import SamplerOptions
from solvers.experiments.blocks import run_block, warmup
from solvers.experiments.checkpoint import Checkpoint
from solvers.experiments.diagnostics import estimate
from solvers.experiments.options import ESS_BULK_MIN, RHAT_MAX
from solvers.experiments.target import Target

#: Per-draw estimators judged and reported (the network's side of the theory-vs-experiment comparison).
SCALARS = ("m_S", "second_moment_relevant", "second_moment_irrelevant", "test_mse", "test_error01")
#: Observables that must meet the convergence rule (the ratio is derived from the two second moments).
JUDGED = ("m_S", "second_moment_relevant", "second_moment_irrelevant", "second_moment_ratio")
STARTS = ("prior", "aligned")


def figures(values: np.ndarray) -> dict[str, float]:
    """Mean, Monte-Carlo standard error, R-hat and bulk ESS of draws (chains, n)."""
    e, _ = estimate(values)
    return {"mean": float(e.mean), "stderr": float(e.stderr), "rhat": float(e.rhat), "ess_bulk": float(e.ess_bulk)}


def ratio_figures(rel: np.ndarray, irr: np.ndarray) -> dict[str, float]:
    """The ratio of two posterior means with the delta-method error of its linearised series."""
    mr, mi = float(rel.mean()), float(irr.mean())
    out = figures(rel / mi - mr * irr / mi**2)
    out["mean"] = mr / mi
    return out


def summary(series: dict[str, list[np.ndarray]]) -> dict[str, Any]:
    """Figures of every observable on all chains (the groups cut to a common length), and per start."""
    n = min(a.shape[1] for a in series["m_S"])
    joined = {k: np.concatenate([a[:, :n] for a in v], axis=0) for k, v in series.items()}
    out: dict[str, Any] = {name: figures(joined[name]) for name in SCALARS}
    out["second_moment_ratio"] = ratio_figures(joined["second_moment_relevant"], joined["second_moment_irrelevant"])
    out["per_start"] = {
        start: {name: float(series[name][g][:, :n].mean()) for name in ("m_S", "second_moment_relevant",
                                                                        "second_moment_irrelevant")}
        for g, start in enumerate(STARTS)}
    half = n // 2
    out["halves"] = {f"m_S_{part}": float(joined["m_S"][:, sl].mean())
                     for part, sl in (("first", slice(0, half)), ("second", slice(half, n)))}
    out["draws_per_chain"] = n
    out["converged"] = all(out[k]["rhat"] <= RHAT_MAX and out[k]["ess_bulk"] >= ESS_BULK_MIN for k in JUDGED)
    return out


def _load(store: Path | None) -> tuple[dict[str, list[np.ndarray]] | None, list[Checkpoint] | None, dict]:
    if store is None or not (store / "series.npz").exists():
        return None, None, {}
    z = np.load(store / "series.npz")
    series = {name: [z[f"{name}__{g}"] for g in range(len(STARTS))] for name in SCALARS}
    checkpoints = [Checkpoint.from_bytes((store / f"checkpoint_{s}.bin").read_bytes()) for s in STARTS]
    meta = json.loads((store / "meta.json").read_text())
    return series, checkpoints, meta


def _save(store: Path, series: dict[str, list[np.ndarray]], checkpoints: list[Checkpoint], meta: dict) -> None:
    store.mkdir(parents=True, exist_ok=True)
    np.savez(store / "series.tmp.npz", **{f"{k}__{g}": a for k, v in series.items() for g, a in enumerate(v)})
    (store / "series.tmp.npz").replace(store / "series.npz")
    for s, c in zip(STARTS, checkpoints, strict=True):
        (store / f"checkpoint_{s}.bin").write_bytes(c.to_bytes())
    (store / "meta.json").write_text(json.dumps(meta))


def converge(target: Target, options: SamplerOptions, *, max_steps: int, min_steps: int = 0,
             store: Path | None = None, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run both groups (``options.chains`` chains each, ``options.warmup`` burn-in steps, draws every ``options.thin``
    steps, ``options.block_size`` draws per block) until the judged observables meet the rule after at least
    ``min_steps`` steps (so that the ESS and R-hat themselves rest on enough draws), or every chain has run
    ``max_steps`` steps after its burn-in. Returns :func:`summary` plus the cost."""
    opts = [options.model_copy(update={"init": start, "seed": options.seed + 7919 * g,
                                       "draws": max(1, max_steps // options.thin)})
            for g, start in enumerate(STARTS)]
    series, checkpoints, meta = _load(store)
    if series is None or checkpoints is None:
        t0 = time.perf_counter()
        checkpoints = [warmup(target, o) for o in opts]
        series = {name: [np.zeros((o.chains, 0)) for o in opts] for name in SCALARS}
        meta = {"burn_in_seconds": time.perf_counter() - t0, "sampling_seconds": 0.0}
        log(f"  burn-in {options.warmup} steps: {meta['burn_in_seconds']:.0f} s")
    while True:
        out = summary(series) if series["m_S"][0].shape[1] >= 4 else {"converged": False, "draws_per_chain": 0}
        steps = out["draws_per_chain"] * options.thin
        if (out["converged"] and steps >= min_steps) or steps >= max_steps:
            break
        t0 = time.perf_counter()
        for g, o in enumerate(opts):
            checkpoints[g], block = run_block(target, o, checkpoints[g])
            for name in SCALARS:
                series[name][g] = np.concatenate([series[name][g], block.estimates[name].astype(np.float64)], axis=1)
        meta["sampling_seconds"] += time.perf_counter() - t0
        if store is not None:
            _save(store, series, checkpoints, meta)
        if series["m_S"][0].shape[1] >= 4:
            s = summary(series)
            log(f"  {s['draws_per_chain'] * options.thin} steps: m_S {s['m_S']['mean']:.4f} ± {s['m_S']['stderr']:.4f}"
                f" (R-hat {s['m_S']['rhat']:.3f}, ESS {s['m_S']['ess_bulk']:.0f}); ratio "
                f"{s['second_moment_ratio']['mean']:.3f} (R-hat {s['second_moment_ratio']['rhat']:.3f}, ESS "
                f"{s['second_moment_ratio']['ess_bulk']:.0f}); {meta['sampling_seconds']:.0f} s")
    chain_steps = sum(o.chains for o in opts) * (options.warmup + steps)
    seconds = meta["burn_in_seconds"] + meta["sampling_seconds"]
    out.update({"steps_per_chain": steps, "burn_in_steps": options.warmup, "chains": sum(o.chains for o in opts),
                "seconds": seconds, "ms_per_chain_step": 1e3 * seconds / max(chain_steps, 1),
                "step_size": float(np.asarray(checkpoints[0].parameters["step_size"]).ravel()[0])})
    if not math.isfinite(out.get("m_S", {}).get("mean", math.nan)):
        log("  non-finite m_S: the run is reported as it is")
    return out
