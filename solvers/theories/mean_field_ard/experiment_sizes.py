"""What the ``mean_field_ard`` network needs beyond its spec, and what it costs (no JAX here)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from solvers.theories.base import ExperimentRefused, Sizes
from solvers.theories.mean_field_ard.spec import ArraysData, MeanFieldARDSpec


class ExperimentSizes(BaseModel):
    """The finite training set of the network when the spec is the population limit."""

    model_config = ConfigDict(extra="forbid", strict=True)

    P: int | None = Field(
        None, ge=1, le=1_000_000,
        description="Training-set size of the sampled network for a population-limit spec (P = null); must be "
        "null or equal to the spec's P otherwise.",
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


def check(spec: MeanFieldARDSpec, sizes: ExperimentSizes) -> Sizes:
    """The sampled weights (W and a: N(d + 1)) and the inputs held (training and test rows × d)."""
    P = training_size(spec, sizes)
    P_test = len(spec.data.X_test) if isinstance(spec.data, ArraysData) else spec.data.P_test
    where = ("model", "data", "X") if isinstance(spec.data, ArraysData) else (
        ("model", "P") if spec.P is not None else ("sizes", "P"))
    return {
        "experiment_parameters": (("model", "N"), float(spec.N * (spec.d + 1))),
        "experiment_data": (where, float((P + P_test) * spec.d)),
    }
