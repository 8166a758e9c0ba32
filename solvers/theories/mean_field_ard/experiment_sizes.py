"""What the ``mean_field_ard`` network needs beyond its spec, and what it costs (no JAX here)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from solvers.theories.base import ExperimentRefused, Sizes
from solvers.theories.mean_field_ard.spec import ArraysData, MeanFieldARDSpec


class ExperimentSizes(BaseModel):
    """The finite training set of the network when the spec is the population limit; how many predictions each
    draw keeps."""

    model_config = ConfigDict(extra="forbid", strict=True)

    P: int | None = Field(
        None, ge=1, le=1_000_000,
        description="Training-set size of the sampled network for a population-limit spec (P = null); must be "
        "null or equal to the spec's P otherwise.",
    )
    prediction_points: int = Field(
        1000, ge=1, le=50_000,
        description="Each draw keeps the network's predictions (f_test, f_train) on the first this many test and "
        "training inputs, and the mean predictor's errors (mean_predictor.test_mse, .train_mse) are those on them; "
        "m_S and the draw's own errors (test_mse, train_mse, test_error01) use every input. Bounds what a draw "
        "stores (P and P_test numbers each, unbounded).",
    )


def training_size(spec: MeanFieldARDSpec, sizes: ExperimentSizes) -> int:
    """P of the sampled network; refuses a population-limit spec without ``sizes.P`` and a conflicting P."""
    if spec.n_train is None:
        if sizes.P is None:
            raise ExperimentRefused(("sizes", "P"), "the spec is the population limit (P = null): give the "
                                    "training-set size of the network to sample")
        return sizes.P
    if sizes.P is not None and spec.n_train != sizes.P:
        raise ExperimentRefused(("sizes", "P"), f"the spec has {spec.n_train} training points; leave sizes.P "
                                "null or equal to it")
    return spec.n_train


def test_size(spec: MeanFieldARDSpec) -> int:
    return len(spec.data.X_test) if isinstance(spec.data, ArraysData) else spec.data.P_test


def estimator_sizes(spec: MeanFieldARDSpec, sizes: ExperimentSizes) -> dict[str, int]:
    """Components of each per-draw estimator of ``experiment.build_target``'s network."""
    names = ["m_S", "m_spurious_max", "test_mse", "test_error01", "train_mse", "second_moment_relevant",
             "second_moment_irrelevant"]
    if spec.model == "mf_ard" and spec.ard_settings.precisions == "per_unit":
        names += ["rho_relevant", "rho_irrelevant"]
    scalars = dict.fromkeys(names, 1)
    return {**scalars, "f_test": min(sizes.prediction_points, test_size(spec)),
            "f_train": min(sizes.prediction_points, training_size(spec, sizes))}


def check(spec: MeanFieldARDSpec, sizes: ExperimentSizes) -> Sizes:
    """The sampled weights (W and a: N(d + 1)), the inputs held (training and test rows × d) and the numbers each
    draw stores."""
    P = training_size(spec, sizes)
    P_test = test_size(spec)
    where = ("model", "data", "X") if isinstance(spec.data, ArraysData) else (
        ("model", "P") if spec.P is not None else ("sizes", "P"))
    return {
        "experiment_parameters": (("model", "N"), float(spec.N * (spec.d + 1))),
        "experiment_data": (where, float((P + P_test) * spec.d)),
        "experiment_draw_values": (("sizes", "prediction_points"), float(sum(estimator_sizes(spec, sizes).values()))),
    }
