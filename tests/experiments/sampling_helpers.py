"""NUTS on a :class:`~solvers.experiments.target.Target` with BlackJAX, several chains, ArviZ errors.

For the tests only, not the project's sampler: Stan's window adaptation per chain, then NUTS
transitions with the target's estimators evaluated on every draw (positions are never stored).
Monte-Carlo errors, ESS and split R-hat come from ArviZ (arviz-stats); a derived observable g(posterior means) gets
the error of its linearised per-draw series (delta method).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from blackjax.adaptation.window_adaptation import base as window_base
from blackjax.adaptation.window_adaptation import build_schedule

from solvers.experiments.diagnostics import mcse_ess_rhat
from solvers.experiments.target import Target

T = TypeVar("T")


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
    gradient_evaluations: int  # leapfrog steps of the sampling phase, all chains

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
    x = np.asarray(x, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):  # a constant component (an empty histogram bin): NaN
        figures = {k: v.reshape(x.shape[2:]) for k, v in mcse_ess_rhat(x.reshape(*x.shape[:2], -1)).items()}
    return Estimate(mean=np.asarray(x.mean(axis=(0, 1)), dtype=float), mcse=figures["stderr"],
                    ess=figures["ess_bulk"], rhat=figures["rhat"])


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


def _strong(tree: T) -> T:
    """Every leaf as an array of an explicit dtype: weakly typed scalars would make jit compile again."""
    return jax.tree.map(lambda x: jnp.array(x, dtype=jnp.asarray(x).dtype), tree)


def run_nuts(
    target: Target, *, init: str = "prior", chains: int = 4, warmup: int = 300, draws: int = 300, seed: int = 0
) -> Run:
    """``chains`` NUTS chains from ``target.init[init]``, each with Stan's window adaptation.

    BlackJAX's own pieces (``nuts.build_kernel``, ``window_adaptation.base`` and ``build_schedule``),
    driven step by step from Python: one compiled NUTS transition (step size and inverse mass matrix are
    arguments) serves the adaptation and the sampling of every chain. On a CPU, compiling the adaptation
    and sampling loops as programs of their own costs several times more than these small chains take to run.
    """
    logdensity = target.logdensity
    kernel = blackjax.nuts.build_kernel()

    @jax.jit
    def transition(key, state, step_size, imm):
        # the estimators ride along in warm-up too: one compiled program instead of two
        state, info = kernel(key, state, logdensity, step_size, imm)
        return state, info, target.estimators(state.position)

    with warnings.catch_warnings():
        # deprecated in favour of the whole-loop drivers, which would compile NUTS a second time
        warnings.simplefilter("ignore", DeprecationWarning)
        adapt_init, adapt_update, adapt_final = window_base(is_mass_matrix_diagonal=True)
    adapt_update = jax.jit(adapt_update)
    start = jax.jit(lambda key: blackjax.nuts.init(target.init[init](key), logdensity))
    # stages as arrays of fixed dtype, the adaptation state strongly typed: every call reuses one program
    schedule = [(jnp.array(stage, dtype=int), jnp.array(end, dtype=bool)) for stage, end in build_schedule(warmup)]

    draws_out: list[dict[str, list[np.ndarray]]] = []
    acc, div, steps, step_sizes = [], 0, 0, []
    for key in np.asarray(jax.random.split(jax.random.PRNGKey(seed), chains)):
        k_init, k_warm, k_draw = np.asarray(jax.random.split(key, 3))
        state = start(k_init)
        adaptation = _strong(adapt_init(state.position, 1.0))
        for k, stage in zip(np.asarray(jax.random.split(k_warm, warmup)), schedule, strict=True):
            state, info, _ = transition(k, state, adaptation.step_size, adaptation.inverse_mass_matrix)
            adaptation = adapt_update(adaptation, stage, state.position, info.acceptance_rate)
        step_size, imm = adapt_final(adaptation)
        chain: dict[str, list[np.ndarray]] = {}
        for k in np.asarray(jax.random.split(k_draw, draws)):
            state, info, values = transition(k, state, step_size, imm)
            for name, value in values.items():
                chain.setdefault(name, []).append(value)
            acc.append(info.acceptance_rate)
            div += int(info.is_divergent)
            steps += int(info.num_integration_steps)
        draws_out.append({name: [np.asarray(v) for v in vs] for name, vs in chain.items()})
        step_sizes.append(float(step_size))
    return Run(
        draws={name: np.stack([np.stack(c[name]) for c in draws_out]) for name in draws_out[0]},
        acceptance=float(np.mean([float(a) for a in acc])),
        divergences=div,
        step_sizes=np.asarray(step_sizes),
        gradient_evaluations=steps,
    )
