"""From draws to estimates: means with Monte-Carlo errors, ESS and R-hat (arviz-stats), and the convergence rule.

Per observable (and per component of a vector observable): the mean over all kept draws, its Monte-Carlo standard
error (arviz-stats ``mcse``, method "mean"), bulk ESS and tail ESS (arviz-stats ``ess``; the tail ESS is the smaller
of the ESS of the indicators of the 5 % and 95 % quantiles, as in Vehtari et al. 2021 and Stan) and rank-normalised
split R-hat (``rhat``, method "rank", Vehtari et al. 2021). A run is converged when every component has R-hat ≤
``rhat_max`` and bulk ESS ≥ ``ess_bulk_min`` (defaults 1.01 and 400). A component that is exactly constant over
every draw of every chain carries no Monte-Carlo error (stderr 0; ESS and R-hat undefined, NaN) and is left out of
the rule; a chain whose log-density never changes did not move, and fails it. R-hat compares chains: with one chain
ArviZ leaves it undefined, so a one-chain run is never judged converged. A non-finite estimate or log-density in any
draw makes the run a numerical error.

A Target's derived observables (``Target.derived``: smooth functions g of the posterior means, such as a
predictive variance E[f²] − E[f]²) are estimated at the means of the draws, g(m̂), with the Monte-Carlo error,
ESS and R-hat of the linearised per-draw series g(m̂) + Σ_k ∂g/∂m_k (x_k − m̂_k) (the delta method); they are
reported and judged like every other observable.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from solvers.experiments.checkpoint import Checkpoint
from solvers.experiments.draws import Draws
from solvers.experiments.options import SamplerOptions
from solvers.experiments.results import Estimate, ExperimentResult, SamplerDiagnostics, Status
from solvers.experiments.target import Target

_MESSAGES = {
    Status.CONVERGED: "Every observable has R-hat <= {rhat_max:g} and bulk ESS >= {ess_min:g}.",
    Status.NOT_CONVERGED: "Not converged: {failures}.",
    Status.TIME_LIMIT: "Time limit reached after {draws} of {wanted} draws per chain; {verdict}",
    Status.NUMERICAL_ERROR: "Non-finite values of {names} in some draws; their estimates are undefined.",
}


@dataclass(frozen=True)
class _Component:
    label: str
    rhat: float
    ess_bulk: float
    ess_tail: float
    finite: bool
    constant: bool


#: Quantiles whose indicator series set the tail ESS (Vehtari et al. 2021); arviz-stats' own default follows its
#: credible-interval setting (0.89, i.e. the 11 % and 89 % quantiles) instead.
TAIL_PROBABILITIES = (0.05, 0.95)


def mcse_ess_rhat(flat: np.ndarray) -> dict[str, np.ndarray]:
    """MCSE of the mean, bulk and tail ESS and rank R-hat of each component of ``flat`` (chains, draws, components)."""
    import arviz_stats  # noqa: F401 - registers the ``azstats`` accessor of xarray objects
    import xarray as xr

    stats = xr.Dataset({"v": (("chain", "draw", "component"), flat)}).azstats
    return {
        "stderr": np.asarray(stats.mcse(method="mean")["v"].values, dtype=np.float64),
        "ess_bulk": np.asarray(stats.ess(method="bulk")["v"].values, dtype=np.float64),
        "ess_tail": np.asarray(stats.ess(method="tail", prob=TAIL_PROBABILITIES)["v"].values, dtype=np.float64),
        "rhat": np.asarray(stats.rhat(method="rank")["v"].values, dtype=np.float64),
    }


def estimate(values: np.ndarray) -> tuple[Estimate, list[_Component]]:
    """Estimate of one observable from its draws (chains, draws, *shape); also its per-component figures."""
    chains, n = values.shape[:2]
    shape = values.shape[2:]
    flat = values.reshape(chains, n, -1).astype(np.float64)
    finite = np.all(np.isfinite(flat), axis=(0, 1))
    constant = finite & np.all(flat == flat[:1, :1, :], axis=(0, 1))
    judged = finite & ~constant
    figures = {
        "mean": np.where(finite, flat, 0.0).mean(axis=(0, 1)),
        **{name: np.full(flat.shape[2], np.nan) for name in ("stderr", "ess_bulk", "ess_tail", "rhat")},
    }
    figures["mean"][~finite] = np.nan
    figures["stderr"][constant] = 0.0
    if judged.any():
        # ArviZ sees the components with a Monte-Carlo error only; the others keep the figures above.
        for name, value in mcse_ess_rhat(flat[:, :, judged]).items():
            figures[name][judged] = value
    labels = [""] if not shape else ["[" + ",".join(map(str, i)) + "]" for i in itertools.product(*map(range, shape))]
    components = [
        _Component(label, float(figures["rhat"][k]), float(figures["ess_bulk"][k]), float(figures["ess_tail"][k]),
                   bool(finite[k]), bool(constant[k]))
        for k, label in enumerate(labels)
    ]

    def shaped(a: np.ndarray) -> float | np.ndarray:
        return float(a[0]) if not shape else a.reshape(shape)

    return Estimate(**{name: shaped(a) for name, a in figures.items()}), components


def estimates_of(values: Mapping[str, np.ndarray]) -> tuple[dict[str, Estimate], dict[str, list[_Component]]]:
    estimates, components = {}, {}
    for name, v in values.items():
        estimates[name], components[name] = estimate(v)
    return estimates, components


def derived_series(target: Target, values: Mapping[str, np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """For each derived observable: (g at the means of ``values``, its linearised per-draw series).

    ``values`` maps estimator names to draws (chains, draws, *shape). The Jacobian is applied by
    ``jax.linearize`` (one linearisation, then one Jacobian-vector product per draw, vectorised), so a
    derived observable of many means costs no dense Jacobian.
    """
    if target.derived is None:
        return {}
    import jax
    import jax.numpy as jnp

    first = next(iter(values.values()))
    chains, n = first.shape[:2]
    means = {k: jnp.asarray(v.mean(axis=(0, 1), dtype=np.float64).astype(v.dtype)) for k, v in values.items()}
    at_means, linear = jax.linearize(lambda m: dict(target.derived(m)), means)
    deltas = {k: jnp.asarray((v - np.asarray(means[k])).reshape(chains * n, *v.shape[2:])) for k, v in values.items()}
    steps = jax.vmap(linear)(deltas)
    out = {}
    for name, value in at_means.items():
        g = np.asarray(value)
        out[name] = (g, g + np.asarray(steps[name]).reshape(chains, n, *g.shape))
    return out


def derived_estimates(
    target: Target, values: Mapping[str, np.ndarray]
) -> tuple[dict[str, Estimate], dict[str, list[_Component]]]:
    """Estimates of the derived observables: mean g(m̂), errors and diagnostics of the linearised series."""
    estimates, components = {}, {}
    for name, (g, series) in derived_series(target, values).items():
        if name in values:
            raise ValueError(f"derived observable {name!r} has the name of an estimator")
        est, comps = estimate(series)
        mean = float(g) if g.ndim == 0 else g.astype(np.float64)
        estimates[name], components[name] = replace(est, mean=mean), comps
    return estimates, components


def summarize(
    target: Target, options: SamplerOptions, checkpoint: Checkpoint, draws: Draws, *, time_limited: bool = False
) -> ExperimentResult:
    """The result of a run from its last checkpoint and all its draws (``draws.concatenate`` of the blocks)."""
    if draws.start != 0 or draws.stop != checkpoint.draws_done:
        raise ValueError(f"draws {draws.start}..{draws.stop} are not the run's {checkpoint.draws_done} draws")
    estimates, components = estimates_of(draws.estimates)
    if draws.n:
        more, more_components = derived_estimates(target, draws.estimates)
        estimates.update(more)
        components.update(more_components)
    judged = [(f"{name}{c.label}", c) for name, cs in components.items() for c in cs if c.finite and not c.constant]
    high_rhat = [(label, c.rhat) for label, c in judged if c.rhat > options.rhat_max]
    low_ess = [(label, c.ess_bulk) for label, c in judged if c.ess_bulk < options.ess_bulk_min]
    undefined = [label for label, c in judged if np.isnan(c.rhat) or np.isnan(c.ess_bulk)]
    nonfinite = [name for name, cs in components.items() if not all(c.finite for c in cs)]
    if not np.all(np.isfinite(draws.logdensity)):
        nonfinite.append("the log-density")
    # A chain whose log-density never changes did not move (every proposal rejected, or no valid proposal).
    stuck = [c for c in range(draws.chains) if draws.n > 1 and np.all(draws.logdensity[c] == draws.logdensity[c, 0])]
    converged = not (high_rhat or low_ess or undefined or nonfinite or stuck)

    failures = "; ".join(
        part
        for part in (
            _listed(f"R-hat above {options.rhat_max:g}", high_rhat, "{:.4g}"),
            _listed(f"bulk ESS below {options.ess_bulk_min:g}", low_ess, "{:.0f}"),
            f"chains {stuck} did not move" if stuck else "",
            _undefined(undefined, draws.chains),
        )
        if part
    )
    if nonfinite:
        status, message = Status.NUMERICAL_ERROR, _MESSAGES[Status.NUMERICAL_ERROR].format(names=", ".join(nonfinite))
    elif time_limited:
        verdict = "the rule is met on those draws." if converged else f"on those draws: {failures}."
        status = Status.TIME_LIMIT
        message = _MESSAGES[status].format(draws=draws.n, wanted=options.draws, verdict=verdict)
    elif converged:
        status = Status.CONVERGED
        message = _MESSAGES[status].format(rhat_max=options.rhat_max, ess_min=options.ess_bulk_min)
    else:
        status, message = Status.NOT_CONVERGED, _MESSAGES[Status.NOT_CONVERGED].format(failures=failures)

    sampler = _sampler_diagnostics(options, checkpoint, draws, [c for _, c in judged])
    return ExperimentResult(
        estimates=estimates,
        sampler=sampler,
        converged=converged,
        status=status,
        message=message,
        draws=draws.n,
        chains=draws.chains,
        gradient_evaluations=sampler.gradient_evaluations,
        seconds=sampler.seconds,
        device=sampler.device,
        sampled=tuple(target.sampled),
        integrated_out=tuple(target.integrated_out),
        init=options.init,
    )


def _undefined(labels: list[str], chains: int, most: int = 5) -> str:
    if chains < 2:
        return "R-hat needs at least two chains"
    if not labels:
        return ""
    more = f" and {len(labels) - most} more" if len(labels) > most else ""
    return f"R-hat or ESS undefined for {', '.join(labels[:most])}{more}"


def _listed(what: str, items: list[tuple[str, float]], fmt: str, most: int = 5) -> str:
    if not items:
        return ""
    shown = ", ".join(f"{label} {fmt.format(value)}" for label, value in items[:most])
    more = f" and {len(items) - most} more" if len(items) > most else ""
    return f"{what}: {shown}{more}"


def _sampler_diagnostics(
    options: SamplerOptions, checkpoint: Checkpoint, draws: Draws, judged: list[_Component]
) -> SamplerDiagnostics:
    adjusted = options.method in ("nuts", "hmc", "mala")
    per_chain = tuple(float(a) for a in draws.acceptance.mean(axis=1)) if adjusted and draws.n else ()
    steps = np.asarray(checkpoint.parameters["step_size"], dtype=np.float64).reshape(-1)
    warm = checkpoint.warmup
    sampling_gradients = int(draws.gradient_evaluations.sum(dtype=np.int64))
    devices = ",".join(dict.fromkeys([checkpoint.device, *draws.device.split(",")]))
    return SamplerDiagnostics(
        method=options.method,
        acceptance=float(np.mean(per_chain)) if per_chain else None,
        acceptance_per_chain=per_chain,
        divergences=int(draws.divergences.sum(dtype=np.int64)),
        nonfinite=int(draws.nonfinite.sum(dtype=np.int64)),
        warmup_divergences=warm.divergences,
        warmup_nonfinite=warm.nonfinite,
        step_size=float(steps.mean()),
        step_size_per_chain=tuple(float(s) for s in steps),
        mass_matrix=options.mass_matrix if options.method in ("nuts", "hmc") else None,
        gradient_evaluations=warm.gradient_evaluations + sampling_gradients,
        warmup_gradient_evaluations=warm.gradient_evaluations,
        seconds=warm.seconds + draws.seconds,
        warmup_seconds=warm.seconds,
        device=devices,
        warmup=warm.steps,
        thin=options.thin,
        max_rhat=_worst(np.max, [c.rhat for c in judged]),
        min_ess_bulk=_worst(np.min, [c.ess_bulk for c in judged]),
        min_ess_tail=_worst(np.min, [c.ess_tail for c in judged]),
        rhat_max=options.rhat_max,
        ess_bulk_min=options.ess_bulk_min,
    )


def _worst(reduce: Callable[[np.ndarray], np.floating], values: list[float]) -> float:
    """The worst figure; NaN (an undefined figure, which fails the rule) wins; NaN when there is none."""
    return float(reduce(np.asarray(values))) if values else float("nan")
