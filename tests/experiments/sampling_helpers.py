"""NUTS on a :class:`~solvers.experiments.target.Target` with BlackJAX, several chains, ArviZ errors.

A small test helper, not the project's sampler: window adaptation per chain, then a ``lax.scan`` of
``nuts.step`` with the target's estimators evaluated on every draw (positions are never stored), all
chains vmapped under one jit. Monte-Carlo errors, ESS and split R-hat come from ArviZ; a derived
observable g(posterior means) gets the error of its linearised per-draw series (delta method).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import arviz as az
import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from blackjax.adaptation.base import get_filter_adapt_info_fn

from solvers.experiments.target import Target


@dataclass(frozen=True)
class Estimate:
    """Posterior mean of one observable (elementwise for arrays) with its Monte-Carlo diagnostics."""

    mean: np.ndarray
    mcse: np.ndarray
    ess: np.ndarray
    rhat: np.ndarray

    def z(self, value: float | np.ndarray) -> np.ndarray:
        """(estimate − value) in Monte-Carlo standard errors."""
        return (self.mean - np.asarray(value, dtype=float)) / self.mcse


@dataclass(frozen=True)
class Run:
    draws: dict[str, np.ndarray]  # name -> (chains, draws, *shape)
    acceptance: float
    divergences: int
    step_sizes: np.ndarray

    def estimate(self, name: str) -> Estimate:
        return _diagnose(self.draws[name])

    def derived(self, target: Target) -> dict[str, Estimate]:
        """Every observable of ``target.derived`` at the posterior means, with delta-method errors."""
        assert target.derived is not None
        means = {k: jnp.asarray(v.mean(axis=(0, 1))) for k, v in self.draws.items()}
        values = target.derived(means)
        jac = jax.jacfwd(target.derived)(means)
        out = {}
        for name, value in values.items():
            series = np.zeros(self.draws[next(iter(self.draws))].shape[:2] + np.shape(value))
            for key, x in self.draws.items():
                j = np.asarray(jac[name][key])
                if not np.any(j):
                    continue
                in_dims = x.ndim - 2
                series += np.tensordot(x - np.asarray(means[key]), j, axes=(tuple(range(2, 2 + in_dims)),
                                                                               tuple(range(j.ndim - in_dims, j.ndim))))
            est = _diagnose(series + np.asarray(value))
            out[name] = Estimate(np.asarray(value, dtype=float), est.mcse, est.ess, est.rhat)
        return out


def _diagnose(x: np.ndarray) -> Estimate:
    ds = az.convert_to_dataset({"x": np.asarray(x, dtype=float)})
    with np.errstate(invalid="ignore", divide="ignore"):  # a constant component (an empty histogram bin): NaN
        return Estimate(
            mean=np.asarray(x.mean(axis=(0, 1)), dtype=float),
            mcse=np.asarray(az.mcse(ds)["x"].values, dtype=float),
            ess=np.asarray(az.ess(ds)["x"].values, dtype=float),
            rhat=np.asarray(az.rhat(ds)["x"].values, dtype=float),
        )


def product(targets: Mapping[str, Target], init: Mapping[str, str] | None = None) -> Target:
    """Independent targets as one: the joint posterior is the product, so one NUTS run (one compilation)
    samples all of them. Estimators and derived observables are renamed ``"<name>/<estimator>"``; the
    initialiser ``"prior"`` starts each part from ``init[name]`` (default "prior")."""
    names = list(targets)
    sizes = [targets[n].dim for n in names]
    cuts = np.cumsum([0, *sizes])
    starts = {n: (init or {}).get(n, "prior") for n in names}

    def parts(theta: jax.Array) -> list[jax.Array]:
        return [theta[cuts[i] : cuts[i + 1]] for i in range(len(names))]

    def joint(attr: str) -> Callable[[jax.Array], jax.Array]:
        return lambda theta: sum(getattr(targets[n], attr)(x) for n, x in zip(names, parts(theta), strict=True))

    def estimators(theta: jax.Array) -> dict[str, jax.Array]:
        out = {}
        for n, x in zip(names, parts(theta), strict=True):
            out.update({f"{n}/{k}": v for k, v in targets[n].estimators(x).items()})
        return out

    def derived(means: Mapping[str, jax.Array]) -> dict[str, jax.Array]:
        out = {}
        for n in names:
            if targets[n].derived is not None:
                own = {k.split("/", 1)[1]: v for k, v in means.items() if k.startswith(f"{n}/")}
                out.update({f"{n}/{k}": v for k, v in targets[n].derived(own).items()})
        return out

    def initialise(key: jax.Array) -> jax.Array:
        keys = jax.random.split(key, len(names))
        return jnp.concatenate([targets[n].init[starts[n]](k) for n, k in zip(names, keys, strict=True)])

    return Target(
        dim=int(cuts[-1]),
        log_prior=joint("log_prior"),
        log_likelihood=joint("log_likelihood"),
        init={"prior": initialise},
        estimators=estimators,
        derived=derived,
    )


def run_nuts(
    target: Target, *, init: str = "prior", chains: int = 4, warmup: int = 300, draws: int = 300, seed: int = 0
) -> Run:
    """``chains`` NUTS chains from ``target.init[init]``, each with its own window adaptation."""
    logdensity = target.logdensity
    adapt = blackjax.window_adaptation(blackjax.nuts, logdensity, adaptation_info_fn=get_filter_adapt_info_fn())
    initialise = target.init[init]

    def chain(key: jax.Array) -> tuple[Mapping[str, jax.Array], jax.Array, jax.Array, jax.Array]:
        k_init, k_warm, k_draw = jax.random.split(key, 3)
        (state, params), _ = adapt.run(k_warm, initialise(k_init), num_steps=warmup)
        kernel = blackjax.nuts(logdensity, **params)

        def one(state, k):
            state, info = kernel.step(k, state)
            return state, (target.estimators(state.position), info.acceptance_rate, info.is_divergent)

        _, (est, acc, div) = jax.lax.scan(one, state, jax.random.split(k_draw, draws))
        return est, acc, div, params["step_size"]

    est, acc, div, step = jax.jit(jax.vmap(chain))(jax.random.split(jax.random.PRNGKey(seed), chains))
    return Run(
        draws={k: np.asarray(v) for k, v in est.items()},
        acceptance=float(np.mean(acc)),
        divergences=int(np.sum(div)),
        step_sizes=np.asarray(step),
    )
