"""The papers' Langevin update and the posterior it samples: one convention, stated once.

The simulations behind the theories train a network by noisy gradient descent,

    p ← p − η ( wd · p + ∇L(p) ) + √(2 T η) ξ,        ξ ~ N(0, I),

with a weight decay ``wd`` (often written T/σ_p², possibly one per layer), a noise temperature ``T``, a step
(learning rate) ``η`` and a training loss ``L`` that is either the sum or the mean over the P training points of
``c · (y_μ − f(x_μ))²`` (c = ½ or 1, depending on the script). Writing U(p) = L(p) + wd |p|²/2, the update is

    p ← p + (η T) ∇ log π(p) + √(2 η T) ξ,             log π = −U/T,

i.e. exactly the canonical unadjusted Langevin step of SaddleLab (``x ← x + h ∇log π + √(2h) ξ``) on the density
π ∝ exp(−L/T) · exp(−wd |p|²/(2T)) with step ``h = η T``. The identity holds step by step, so the two recursions
have the same O(h) discretisation bias; in the small-step limit their common stationary law is π, which is:

* prior: p ~ N(0, σ_p²) with σ_p² = T / wd (per parameter block when wd is per layer);
* likelihood: exp(−Σ_μ c (y_μ − f_μ)² / T_L) with T_L = T for a summed loss and T_L = T·P for a mean loss,
  i.e. Gaussian noise of variance σ² = T_L / (2c). (Sum of squares without ½ at temperature T: σ² = T/2, the
  ``T = 2σ²`` of the Rubin et al. scripts; mean loss without ½: σ² = T P/2, the ``κ² P`` with T = 2κ² of the
  mean-field ARD scripts.)

A theory spec sets that posterior; ``SamplerOptions(method="langevin", learning_rate=η, temperature=T)`` then runs
the paper's own recursion (same step, same bias) on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

Loss = Literal["sum", "mean"]
PerBlock = float | Mapping[str, float]


def _per_block(value: PerBlock, fn: Callable[[float], float]) -> PerBlock:
    if isinstance(value, Mapping):
        return {name: fn(v) for name, v in value.items()}
    return fn(value)


def _check_positive(name: str, value: PerBlock) -> None:
    values = value.values() if isinstance(value, Mapping) else [value]
    for v in values:
        if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be finite and positive, got {v!r}")


@dataclass(frozen=True)
class PaperLangevin:
    """A published Langevin run: p ← p − η (wd·p + ∇L) + √(2Tη) ξ with L = sum or mean of c·(y − f)².

    Attributes:
        learning_rate: the step η.
        temperature: the noise temperature T.
        weight_decay: wd, the coefficient of p in the drift (T/σ_p² in the papers' notation); a mapping gives one
            value per parameter block.
        loss: "sum" (L = Σ_μ ℓ_μ) or "mean" (L = (1/P) Σ_μ ℓ_μ).
        n_data: P, the number of training points (matters for a mean loss).
        squared_error_factor: c in ℓ_μ = c (y_μ − f(x_μ))² (½ or 1 in the scripts).
    """

    learning_rate: float
    temperature: float
    weight_decay: PerBlock
    loss: Loss
    n_data: int
    squared_error_factor: float = 0.5

    def __post_init__(self) -> None:
        _check_positive("learning_rate", self.learning_rate)
        _check_positive("temperature", self.temperature)
        _check_positive("weight_decay", self.weight_decay)
        _check_positive("squared_error_factor", self.squared_error_factor)
        if self.loss not in ("sum", "mean"):
            raise ValueError(f"loss must be 'sum' or 'mean', got {self.loss!r}")
        if not isinstance(self.n_data, int) or self.n_data < 1:
            raise ValueError(f"n_data must be a positive integer, got {self.n_data!r}")


@dataclass(frozen=True)
class LangevinPosterior:
    """The posterior a :class:`PaperLangevin` run samples, and the step that reproduces its recursion.

    Attributes:
        prior_variance: σ_p² = T/wd of the Gaussian prior N(0, σ_p²) (per block when wd is).
        likelihood_temperature: T_L in the likelihood exp(−Σ_μ ℓ_μ / T_L) (T, or T·P for a mean loss).
        noise_variance: σ² = T_L/(2c): the likelihood is that of Gaussian noise of variance σ² on each label.
        step_size: h = η·T, the canonical step (``SamplerOptions.step_size``) of the identical recursion.
    """

    prior_variance: PerBlock
    likelihood_temperature: float
    noise_variance: float
    step_size: float


def posterior_of(run: PaperLangevin) -> LangevinPosterior:
    """The posterior sampled by a paper's Langevin update (see the module docstring for the derivation)."""
    t = run.temperature
    t_like = t * (run.n_data if run.loss == "mean" else 1)
    return LangevinPosterior(
        prior_variance=_per_block(run.weight_decay, lambda wd: t / wd),
        likelihood_temperature=t_like,
        noise_variance=t_like / (2.0 * run.squared_error_factor),
        step_size=run.learning_rate * t,
    )


def paper_run_for(
    prior_variance: PerBlock,
    noise_variance: float,
    *,
    loss: Loss,
    n_data: int,
    step_size: float,
    squared_error_factor: float = 0.5,
) -> PaperLangevin:
    """The inverse map: the paper-style run, in a chosen loss convention, that samples a given posterior.

    The noise variance fixes T_L = 2cσ², hence the temperature: T = T_L for a summed loss, T_L/P for a mean loss.
    """
    _check_positive("prior_variance", prior_variance)
    _check_positive("noise_variance", noise_variance)
    _check_positive("step_size", step_size)
    t_like = 2.0 * squared_error_factor * noise_variance
    temperature = t_like / (n_data if loss == "mean" else 1)
    return PaperLangevin(
        learning_rate=step_size / temperature,
        temperature=temperature,
        weight_decay=_per_block(prior_variance, lambda v: temperature / v),
        loss=loss,
        n_data=n_data,
        squared_error_factor=squared_error_factor,
    )
