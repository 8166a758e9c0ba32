"""Particle solves and sweeps in the contract's payload shape (branches from both named starts)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from solvers.theories.mean_field_ard import particles
from solvers.theories.mean_field_ard.ard import ARD
from solvers.theories.mean_field_ard.data import Dataset, dataset
from solvers.theories.mean_field_ard.particle_observables import observables
from solvers.theories.mean_field_ard.particle_sampler import Physics
from solvers.theories.mean_field_ard.spec import MeanFieldARDSpec, ParityTarget

STARTS = ("symmetric", "aligned")
#: Two branches whose m_S differ by less than this many combined standard errors are one.
MERGE_Z = 3.0


def physics(spec: MeanFieldARDSpec) -> Physics:
    return Physics(spec.activation, float(spec.N), spec.gamma, spec.kappa, spec.sigma_a2)


def ard_of(spec: MeanFieldARDSpec) -> ARD | None:
    if spec.model != "mf_ard":
        return None
    a = spec.ard_settings
    return ARD(alpha0=a.alpha0, beta0=spec.beta0, N=float(spec.N), update=a.update, ema=a.ema)


def relevant(spec: MeanFieldARDSpec) -> list[int]:
    return list(range(spec.target.k)) if isinstance(spec.target, ParityTarget) else [0]


def branch(spec: MeanFieldARDSpec, name: str, res: particles.ParticleResult, data: Dataset) -> dict[str, Any]:
    obs = observables(spec, physics(spec), res.state, data)
    m_S = obs.pop("_m_S")
    rel = obs.pop("_rel")
    rho = res.state.rho
    irr = [j for j in range(spec.d) if j not in rel]
    return {
        "name": name,
        "converged": res.converged,
        "stable": None,
        "free_entropy": None,
        "order_parameters": {
            "m_S": m_S,
            "rho_relevant": float(np.mean(rho[rel])),
            "rho_irrelevant": float(np.mean(rho[irr])) if irr else None,
        },
        "observables": obs,
        "diagnostics": {**res.diagnostics(), "starts": [name]},
    }


def catalogue(spec: MeanFieldARDSpec, results: dict[str, particles.ParticleResult], data: Dataset) -> dict[str, Any]:
    branches = [branch(spec, name, res, data) for name, res in results.items()]
    a, b = branches
    se = math.hypot(a["observables"]["m_S_stderr"], b["observables"]["m_S_stderr"])
    gap = abs(a["order_parameters"]["m_S"] - b["order_parameters"]["m_S"])
    if a["converged"] and b["converged"] and gap <= MERGE_Z * se:
        a["diagnostics"]["starts"] = list(STARTS)
        branches = [a]
    converged = [x for x in branches if x["converged"]]
    eq = converged[0]["name"] if len(branches) == 1 and converged else None
    ref = next((x for x in branches if x["name"] == eq), min(branches, key=lambda x: x["diagnostics"]["residual"]))
    return {
        "converged": bool(converged) and (eq is not None or len(converged) == len(branches)),
        "equilibrium": eq,
        "branches": branches,
        "order_parameters": ref["order_parameters"] if eq else {},
        "observables": ref["observables"] if eq else {},
        "diagnostics": {
            **{k: ref["diagnostics"][k] for k in ("residual", "mc_error", "iterations", "method", "status", "message")},
            "ranking": "none: the particle solver has no free entropy, so distinct branches are not ranked",
        },
    }


def run(spec: MeanFieldARDSpec, data: Dataset, warm: dict[str, particles.ParticleState] | None = None,
        time_limit: float | None = None) -> dict[str, particles.ParticleResult]:
    """Both starts; ``time_limit`` is one budget for the two solves."""
    t0 = time.perf_counter()
    rho0 = np.full(spec.d, spec.d / spec.sigma_w2)
    out = {}
    for start in STARTS:
        left = None if time_limit is None else max(time_limit - (time.perf_counter() - t0), 0.0)
        out[start] = particles.solve(
            physics(spec), data.X, data.y, rho0, ard_of(spec), spec.particles, start, relevant(spec),
            spec.seed_asymmetry, warm=(warm or {}).get(start), time_limit=left,
        )
    return out


def solve(spec: MeanFieldARDSpec, time_limit: float | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    data = dataset(spec)
    cat = catalogue(spec, run(spec, data, time_limit=time_limit), data)
    cat["diagnostics"]["seconds"] = time.perf_counter() - t0
    return {"theory": "mean_field_ard", **cat}


def sweep(theory: Any, spec: MeanFieldARDSpec, parameter: str, values: Sequence[float],
          on_point: Callable[[dict[str, Any]], None] | None = None, time_limit: float | None = None) -> dict[str, Any]:
    """A grid in ``parameter``: each point warm-started from the previous one, with common random numbers;
    ``time_limit`` applies to each point."""
    t0 = time.perf_counter()
    points: list[dict[str, Any]] = []
    warm: dict[str, particles.ParticleState] | None = None
    same_data = parameter not in ("P", "d")
    base_data = dataset(spec) if same_data else None
    for v in values:
        s = theory.with_value(spec, parameter, v)
        data = base_data if base_data is not None else dataset(s)
        results = run(s, data, warm if same_data else None, time_limit=time_limit)
        warm = {k: r.state for k, r in results.items()}
        cat = catalogue(s, results, data)
        point = {"parameter": float(v), **{k: cat[k] for k in ("converged", "equilibrium", "branches",
                                                               "order_parameters", "observables")}}
        points.append(point)
        if on_point is not None:
            on_point(point)
    return {
        "theory": "mean_field_ard",
        "parameter": parameter,
        "method": "grid",
        "points": points,
        "transitions": [],
        "diagnostics": {
            "converged": all(p["converged"] for p in points),
            "method": "particles:grid (warm starts, common random numbers)",
            "seconds": time.perf_counter() - t0,
            "note": "no free entropy from particles: transitions are located by the reduced solver",
        },
    }
