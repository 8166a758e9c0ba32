"""What the ``rubin_cavity`` network needs beyond its spec, and what it costs (no JAX here).

``finite_sample`` fixes the network and its data (the spec's seed and P_test); ``self_consistent`` is
a population theory, so its network draws a training set of its own (the build seed) and a test set of
``P_test`` inputs. The ``potential`` mode has no network: its (b, c) are given, not learned.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from solvers.theories.base import ExperimentRefused, Sizes
from solvers.theories.rubin_cavity.specs import FiniteSampleSpec, SelfConsistentSpec


class ExperimentSizes(BaseModel):
    """What the network needs beyond the spec (the self-consistent theory is a population theory)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    P_test: int = Field(
        500, ge=1, le=20_000,
        description="Test inputs for mode self_consistent (finite_sample uses the spec's P_test).",
    )
    aligned_threshold: float = Field(
        0.5, gt=0, le=10,
        description="A neuron counts as aligned when |ρ| = |w·e| exceeds this (the theory's barrier between the "
        "centre well, width of order (σ_w²/D)^(1/2), and the aligned well ρ* ≈ 0.7–1 lies in between; put it "
        "there).",
    )
    rho_bins: int = Field(40, ge=2, le=1000, description="Number of equal bins of the ρ histogram.")
    rho_range: float = Field(1.5, gt=0, le=100, description="The ρ histogram covers [−rho_range, rho_range].")
    test_points: int = Field(
        1000, ge=1, le=20_000,
        description="Each draw keeps the posterior-mean prediction (test_mean) on the first this many test inputs, "
        "and test_mse_measured (the mean predictor's error) is the one on them. Bounds what a draw stores.",
    )


def integral(value: float, field: str) -> int:
    """A width, dimension or sample count of the finite network (the theory takes them as reals)."""
    if value != round(value) or value < 1:
        raise ExperimentRefused(("model", field), f"a finite network needs an integer ≥ 1 (got {value:g})")
    return round(value)


def estimator_sizes(spec: FiniteSampleSpec | SelfConsistentSpec, sizes: ExperimentSizes) -> dict[str, int]:
    """Components of each per-draw estimator of ``experiment.build_target``'s network."""
    P_test = spec.P_test if isinstance(spec, FiniteSampleSpec) else sizes.P_test
    scalars = dict.fromkeys(
        ("b", "c", "b_test", "c_test", "R", "weight_covariance.perpendicular", "aligned_fraction"), 1)
    return {**scalars, "rho_histogram": sizes.rho_bins, "test_mean": min(sizes.test_points, int(P_test))}


def check(spec: FiniteSampleSpec | SelfConsistentSpec, sizes: ExperimentSizes) -> Sizes:
    """Refuse what cannot be sampled; the sampled weights and the inputs held, with their fields."""
    N, D, P = integral(spec.N, "N"), integral(spec.D, "D"), integral(spec.P, "P")
    P_test = spec.P_test if isinstance(spec, FiniteSampleSpec) else sizes.P_test
    return {
        "experiment_parameters": (("model", "N"), float(N * D)),
        "experiment_data": (("model", "P"), float((P + P_test) * D)),
        "experiment_draw_values": (("sizes", "test_points"), float(sum(estimator_sizes(spec, sizes).values()))),
    }
