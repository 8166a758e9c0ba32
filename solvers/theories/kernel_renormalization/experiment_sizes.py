"""What the ``kernel_renormalization`` network needs beyond its spec, and what it costs (no JAX here).

The spec fixes the network completely (widths, priors, temperature, data); the sizes only bound the
per-test-point estimators each draw returns.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from solvers.theories.base import ExperimentRefused, Sizes
from solvers.theories.kernel_renormalization.spec import ArraysData, KernelRenormalizationSpec, TeacherData

#: Input dimension of scikit-learn's 8×8 digits.
DIGITS_N0 = 64


class ExperimentSizes(BaseModel):
    """The spec fixes the network; this only bounds what each draw returns."""

    model_config = ConfigDict(extra="forbid", strict=True)

    test_points: int = Field(
        100, ge=1, le=10_000,
        description="Per-test-point estimators (test_mean, test_second_moment) cover the first this many test "
        "inputs; the generalisation error always uses all of them.",
    )


def data_shape(spec: KernelRenormalizationSpec) -> tuple[int, int, int]:
    """(P, P_test, N0) of the spec's data, without building it."""
    data = spec.data
    if isinstance(data, ArraysData):
        return len(data.X), len(data.X_test), len(data.X[0])
    n0 = data.N0 if isinstance(data, TeacherData) else DIGITS_N0
    return data.P, data.P_test, n0


def estimator_sizes(spec: KernelRenormalizationSpec, sizes: ExperimentSizes) -> dict[str, int]:
    """Components of each per-draw estimator of ``experiment.build_target``'s network. With one hidden layer the
    class distance is counted, which the network reports when its labels have both signs (an upper bound)."""
    n_test = min(sizes.test_points, data_shape(spec)[1])
    out = {"test_mean": n_test, "test_second_moment": n_test, "generalization_error": 1, "train_error": 1, "Qbar": 1}
    if int(spec.depth) == 1:
        out.update({"class_distance.D2": 1, "class_distance.delta": 1, "weight_correlations.trace": 1})
    return out


def check(spec: KernelRenormalizationSpec, sizes: ExperimentSizes) -> Sizes:
    """Refuse what cannot be sampled; the sampled hidden weights and the inputs held, with their fields."""
    if not spec.T > 0:
        raise ExperimentRefused(("model", "T"), "the experiment samples a finite-temperature posterior; T = 0 has "
                                "none (use T > 0)")
    P, P_test, N0 = data_shape(spec)
    N1, L = int(spec.N1), int(spec.depth)
    return {
        "experiment_parameters": (("model", "N1"), float(N1 * N0 + (L - 1) * N1 * N1)),
        "experiment_data": (("model", "data"), float((P + P_test) * N0)),
        "experiment_draw_values": (("sizes", "test_points"), float(sum(estimator_sizes(spec, sizes).values()))),
    }
