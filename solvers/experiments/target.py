"""What a theory's finite network hands to the samplers: a log-posterior on a flat parameter vector.

The samplers know no physics. A theory's ``experiment`` module builds a :class:`Target` from its
spec (plus the finite sizes an asymptotic theory needs): the unnormalised log-posterior split into
prior and likelihood (so that Langevin runs can use a paper's conventions for temperature, mean vs
summed loss and minibatches), named initialisations, and the per-draw estimators of the
observables the theory predicts. Everything here is a pure JAX function of the position, so a
target runs unchanged on a GPU when a CUDA jaxlib is installed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jax

Array = jax.Array
#: position -> scalar
LogDensity = Callable[[Array], Array]
#: (position, indices of a minibatch of data points) -> scalar log-likelihood of that minibatch, scaled to the
#: full data set (an unbiased estimate of ``log_likelihood``)
MinibatchLogLikelihood = Callable[[Array, Array], Array]
#: PRNG key -> position
Initialiser = Callable[[Array], Array]
#: position -> named per-draw estimates (jnp scalars or arrays of fixed shape)
Estimators = Callable[[Array], Mapping[str, Array]]
#: posterior means of the estimators (by name) -> named observables that are smooth functions of them
Derived = Callable[[Mapping[str, Array]], Mapping[str, Array]]


@dataclass(frozen=True)
class Target:
    """An unnormalised log-posterior ``log_prior + log_likelihood`` on a flat vector of length ``dim``.

    Attributes:
        dim: length of the flat position vector.
        log_prior: log prior density (up to a constant).
        log_likelihood: log likelihood of the whole data set (up to a constant), at the spec's temperature.
        init: named initialisations ("prior", and "teacher" where a teacher exists).
        estimators: per-draw estimators of the observables the theory predicts.
        n_data: number of training points (for minibatched Langevin); 0 when there is no data set.
        minibatch_log_likelihood: unbiased minibatch estimate of ``log_likelihood`` (SGLD), when available.
        sampled: names of the parameter blocks in the position vector, in order, with their sizes.
        integrated_out: names of the blocks integrated out exactly (e.g. a readout that is
            conditionally Gaussian given the hidden weights), reported beside the estimates.
        info: anything the theory wants reported about the network (sizes, scalings).
        derived: observables that are not posterior means of one per-draw quantity but smooth functions
            of such means (a predictive variance E[f²] − E[f]², the test error of the posterior-mean
            predictor). Their Monte-Carlo error is that of the linearised per-draw series
            Σ_k ∂g/∂m_k · x_k (delta method), so they carry an ESS and R-hat like any estimator.
        cache_key: optional canonical identifier (e.g. the spec's hash): targets with equal keys are the same
            network and share compiled samplers within a process; without it, compiled samplers are cached per
            Target object.
    """

    dim: int
    log_prior: LogDensity
    log_likelihood: LogDensity
    init: Mapping[str, Initialiser]
    estimators: Estimators
    n_data: int = 0
    minibatch_log_likelihood: MinibatchLogLikelihood | None = None
    sampled: tuple[tuple[str, int], ...] = ()
    integrated_out: tuple[str, ...] = ()
    info: Mapping[str, Any] = field(default_factory=dict)
    derived: Derived | None = None
    cache_key: str | None = None

    def logdensity(self, position: Array) -> Array:
        return self.log_prior(position) + self.log_likelihood(position)
