"""Particle solves and sweeps as the engine's typed results (branches from both named starts).

The particle solver is stochastic, so it is no deterministic :class:`~solvers.core.problem.Problem`: the
solves run here and their outcomes become :class:`~solvers.core.results.Catalogue` and
:class:`~solvers.core.sweep.Sweep` objects like every other theory's. A branch's state is f̄ on the
training set (then log ρ for MF-ARD's shared precisions); its residual is the undamped residual's rms, and
the Monte-Carlo error of that residual is reported with the observables (``residual_mc_error``). There is no free
entropy, so distinct branches are listed but not ranked (no equilibrium unless both starts agree).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from solvers.core.results import Attempt, Branch, Catalogue, Notes, Report, SolveResult
from solvers.core.status import Status
from solvers.core.sweep import Sweep
from solvers.theories.mean_field_ard import particles
from solvers.theories.mean_field_ard.ard import ARD
from solvers.theories.mean_field_ard.data import Dataset, dataset
from solvers.theories.mean_field_ard.particle_observables import observables
from solvers.theories.mean_field_ard.particle_sampler import Physics
from solvers.theories.mean_field_ard.spec import MeanFieldARDSpec, ParityTarget

STARTS = ("symmetric", "aligned")
#: Two branches whose m_S differ by less than this many combined standard errors are one.
MERGE_Z = 3.0
METHOD = "particles:mala+anderson+robbins-monro"
RANKING = "none: the particle solver has no free entropy, so distinct branches are not ranked"
#: The particle solver's outcomes in the engine's vocabulary.
STATUS = {
    "converged": Status.CONVERGED,
    "max_iterations": Status.MAX_ITERATIONS,
    "nan": Status.DIVERGED,
    "time_limit": Status.TIME_LIMIT,
}
DETAIL = {
    "converged": "Mean undamped residual of the last Robbins–Monro steps within tol plus 3 of its Monte-Carlo "
    "standard errors.",
    "max_iterations": "Outer budget spent before the residual reached its Monte-Carlo error.",
    "nan": "Non-finite particle averages.",
    "time_limit": "",
}


def per_unit(spec: MeanFieldARDSpec) -> bool:
    return spec.model == "mf_ard" and spec.ard_settings.precisions == "per_unit"


def physics(spec: MeanFieldARDSpec) -> Physics:
    alpha = spec.ard_settings.alpha0 if per_unit(spec) else 0.0
    return Physics(spec.activation, float(spec.N), spec.gamma, spec.kappa, spec.sigma_a2, alpha)


def ard_of(spec: MeanFieldARDSpec) -> ARD | None:
    """The shared precisions' fixed point (None: plain MF, or per-unit precisions integrated out in each unit)."""
    if spec.model != "mf_ard" or per_unit(spec):
        return None
    a = spec.ard_settings
    return ARD(alpha0=a.alpha0, beta0=spec.beta0, N=float(spec.N), update=a.update, ema=a.ema)


def whitening(spec: MeanFieldARDSpec) -> np.ndarray:
    """The precisions ρ₀ of the whitened coordinates z = √ρ₀ ⊙ w: d/σ_w², or the per-unit prior's mean α₀/β₀."""
    return np.full(spec.d, spec.ard_settings.alpha0 / spec.beta0 if per_unit(spec) else spec.d / spec.sigma_w2)


def relevant(spec: MeanFieldARDSpec) -> list[int]:
    return list(range(spec.target.k)) if isinstance(spec.target, ParityTarget) else [0]


def state_vector(spec: MeanFieldARDSpec, res: particles.ParticleResult) -> np.ndarray:
    """f̄ on the training set, then log ρ for MF-ARD."""
    parts = [res.fbar] + ([np.log(res.state.rho)] if ard_of(spec) is not None else [])
    return np.concatenate(parts)


def branch(spec: MeanFieldARDSpec, name: str, res: particles.ParticleResult, data: Dataset) -> Branch:
    obs = observables(spec, physics(spec), res.state, data)
    m_S = obs.pop("_m_S")
    rel = obs.pop("_rel")
    rho = np.asarray(obs["rho_profile"])
    irr = [j for j in range(spec.d) if j not in rel]
    obs.update({
        "residual_mc_error": res.mc_error,
        "residual_log_rho": res.residual_log_rho,
        "residual_log_rho_mc_error": res.mc_error_log_rho,
        "acceptance": res.acceptance,
        "particle_steps": res.particle_steps,
        "residual_history": [h[0] for h in res.history],
        "mc_error_history": [h[1] for h in res.history],
    })
    order = {
        "m_S": m_S,
        "rho_relevant": float(np.mean(rho[rel])),
        "rho_irrelevant": float(np.mean(rho[irr])) if irr else None,
    }
    x = state_vector(spec, res)
    result = SolveResult(x=x, status=STATUS[res.status], residual=res.residual, iterations=res.iterations,
                         method=METHOD, seconds=res.seconds, nfev=res.particle_steps,
                         history=tuple(h[0] for h in res.history), detail=DETAIL[res.status])
    return Branch(name=name, x=x, result=result, stable=None, stability_margin=None, free_entropy=None,
                  starts=(name,), report=Report(order, obs))


def catalogue(spec: MeanFieldARDSpec, p: float, results: Mapping[str, particles.ParticleResult], data: Dataset,
              seconds: float) -> Catalogue:
    branches = [branch(spec, name, res, data) for name, res in results.items()]
    a, b = branches
    assert a.report is not None and b.report is not None
    se = math.hypot(a.report.observables["m_S_stderr"], b.report.observables["m_S_stderr"])
    gap = abs(a.report.order_parameters["m_S"] - b.report.order_parameters["m_S"])
    if a.converged and b.converged and gap <= MERGE_Z * se:
        branches = [a.replace(starts=STARTS)]
    converged = [x for x in branches if x.converged]
    eq = converged[0].name if len(branches) == 1 and converged else None
    attempts = tuple(Attempt(name, STATUS[r.status], r.residual, r.iterations) for name, r in results.items())
    ref = next((x for x in branches if x.name == eq), min(branches, key=lambda x: x.result.residual))
    ref_obs = ref.report.observables if ref.report is not None else {}
    notes = Notes(diagnostics={"mc_error": ref_obs.get("residual_mc_error"), "ranking": RANKING})
    return Catalogue(parameter=float(p), branches=tuple(branches), equilibrium=eq, attempts=attempts,
                     seconds=seconds, complete=not any(r.status == "time_limit" for r in results.values()),
                     notes=notes)


def run(spec: MeanFieldARDSpec, data: Dataset, warm: Mapping[str, particles.ParticleState] | None = None,
        time_limit: float | None = None) -> dict[str, particles.ParticleResult]:
    """Both starts; ``time_limit`` is one budget for the two solves."""
    t0 = time.perf_counter()
    rho0 = whitening(spec)
    out = {}
    for start in STARTS:
        left = None if time_limit is None else max(time_limit - (time.perf_counter() - t0), 0.0)
        out[start] = particles.solve(
            physics(spec), data.X, data.y, rho0, ard_of(spec), spec.particles, start, relevant(spec),
            spec.seed_asymmetry, warm=(warm or {}).get(start), time_limit=left,
        )
    return out


def solve(spec: MeanFieldARDSpec, p: float, time_limit: float | None = None) -> Catalogue:
    t0 = time.perf_counter()
    data = dataset(spec)
    results = run(spec, data, time_limit=time_limit)
    return catalogue(spec, p, results, data, time.perf_counter() - t0)


def with_value(spec: MeanFieldARDSpec, parameter: str, value: float) -> MeanFieldARDSpec:
    """The spec at one sweep value (integer fields rounded: the particle solver samples an actual network)."""
    v: float | int = max(1, round(value)) if parameter in ("N", "P") else float(value)
    return MeanFieldARDSpec.model_validate({**spec.model_dump(), parameter: v})


def sweep(spec: MeanFieldARDSpec, parameter: str, values: Sequence[float],
          on_point: Callable[[int, Catalogue], None] | None = None, time_limit: float | None = None,
          stored: Mapping[int, Catalogue] | None = None) -> Sweep:
    """A grid in ``parameter``: each point warm-started from the previous one, with common random numbers;
    ``time_limit`` applies to each point. Stored points are kept (the next point then starts cold)."""
    t0 = time.perf_counter()
    stored = stored or {}
    cats: list[Catalogue] = []
    warm: dict[str, particles.ParticleState] | None = None
    same_data = parameter not in ("P", "d")
    base_data = dataset(spec) if same_data else None
    for i, v in enumerate(values):
        cat = stored.get(i)
        if cat is None:
            tp = time.perf_counter()
            s = with_value(spec, parameter, v)
            data = base_data if base_data is not None else dataset(s)
            results = run(s, data, warm if same_data else None, time_limit=time_limit)
            warm = {k: r.state for k, r in results.items()}
            cat = catalogue(s, float(v), results, data, time.perf_counter() - tp)
            if on_point is not None:
                on_point(i, cat)
        else:
            warm = None
        cats.append(cat)
    notes = Notes(diagnostics={
        "solver": "particles: grid (warm starts, common random numbers)",
        "note": "no free entropy from particles: transitions are located by the reduced solver",
    })
    return Sweep(method="grid", values=tuple(float(v) for v in values), catalogues=tuple(cats),
                 seconds=time.perf_counter() - t0, reused=tuple(sorted(i for i in stored if 0 <= i < len(values))),
                 notes=notes)
